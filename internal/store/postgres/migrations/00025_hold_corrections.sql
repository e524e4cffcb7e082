-- Corrections reach escrow holds (issue 24, docs/ERRATA.md E65–E67): a
-- correction of the ap2_transaction a hold reported appends a step to the
-- hold's chain, action 'correct', naming the correction. correction_id is
-- '' for every other step; the hashed content has the member only when it
-- is not, so the steps stored before keep their hashes.

-- +goose Up
ALTER TABLE escrow_hold_steps ADD COLUMN correction_id TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE escrow_hold_steps DROP COLUMN correction_id;
