-- Retention (spec §11.4, issue 16; internal/ledger/prune.go): a pruned
-- chain starts after its anchor (the stored hash of its last pruned
-- record); each prune appends a summary record whose content is a row of
-- ledger_summaries and its counts in ledger_summary_rows (no event or
-- buyer ids). ledger_records stays append-only except that records at or
-- before their chain's anchor may be deleted.

-- +goose Up
CREATE TABLE chain_anchors (
    agent_id  TEXT PRIMARY KEY REFERENCES agents(id),
    seq       INTEGER NOT NULL CHECK (seq >= 1),
    hash      BLOB NOT NULL CHECK (length(hash) = 32)
) WITHOUT ROWID;
CREATE TABLE ledger_summaries (
    agent_id        TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    pruned_through  INTEGER NOT NULL,
    anchor          BLOB NOT NULL CHECK (length(anchor) = 32),
    PRIMARY KEY (agent_id, seq)
) WITHOUT ROWID;
CREATE TABLE ledger_summary_rows (
    agent_id      TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    month         TEXT NOT NULL,
    event_type    TEXT NOT NULL,
    status        TEXT NOT NULL,
    voided        INTEGER NOT NULL,
    count         INTEGER NOT NULL,
    escrow_cents  INTEGER NOT NULL,
    PRIMARY KEY (agent_id, seq, month, event_type, status, voided)
) WITHOUT ROWID;
DROP TRIGGER ledger_records_no_delete;
-- +goose StatementBegin
CREATE TRIGGER ledger_records_no_delete BEFORE DELETE ON ledger_records
WHEN NOT EXISTS (SELECT 1 FROM chain_anchors a WHERE a.agent_id = OLD.agent_id AND a.seq >= OLD.seq)
BEGIN SELECT RAISE(ABORT, 'ledger_records is append-only'); END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER ledger_records_no_delete;
-- +goose StatementBegin
CREATE TRIGGER ledger_records_no_delete BEFORE DELETE ON ledger_records
BEGIN SELECT RAISE(ABORT, 'ledger_records is append-only'); END;
-- +goose StatementEnd
DROP TABLE ledger_summary_rows;
DROP TABLE ledger_summaries;
DROP TABLE chain_anchors;
