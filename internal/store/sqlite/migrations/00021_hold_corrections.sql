-- Corrections reach escrow holds (issue 24, docs/ERRATA.md E65–E67): a
-- correction of the ap2_transaction a hold reported appends a step to the
-- hold's chain, action 'correct', naming the correction. A step's
-- correction_id is '' for every other step; the hashed content has the
-- member only when it is not, so the steps stored before keep their
-- hashes. The hold's correction_id is the last correction that reached it
-- ('' for none): the mark a hold's reader sees.

-- +goose Up
ALTER TABLE escrow_hold_steps ADD COLUMN correction_id TEXT NOT NULL DEFAULT '';
ALTER TABLE escrow_holds ADD COLUMN correction_id TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE escrow_holds DROP COLUMN correction_id;
ALTER TABLE escrow_hold_steps DROP COLUMN correction_id;
