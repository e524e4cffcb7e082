-- Task offers (issue 16, spec §8.3 "success rate gaming"): a third event
-- type, OFFERED then ACCEPTED or DECLINED, chained like the others and never
-- counted in the score; the acceptance rate is an operator's signal. The
-- CHECKs on event_type of ledger_records and corrections admit it; SQLite
-- cannot alter a CHECK, so both tables are rebuilt, rows in their stored
-- order.

-- +goose Up
DROP TRIGGER IF EXISTS ledger_records_no_update;
DROP TRIGGER IF EXISTS ledger_records_no_delete;
CREATE TABLE ledger_records_new (
    agent_id       TEXT NOT NULL REFERENCES agents(id),
    seq            INTEGER NOT NULL CHECK (seq >= 1),
    -- 'erasure': an erasure's record (migration 00013); 'summary': a prune's (00014).
    event_type     TEXT NOT NULL CHECK (event_type IN ('conduit_session', 'ap2_transaction', 'task_offer', 'erasure', 'summary')),
    event_id       TEXT NOT NULL,
    status         TEXT NOT NULL,  -- no CHECK: verification hashes whatever is here
    hash           BLOB NOT NULL CHECK (length(hash) = 32),
    correction_id  TEXT,
    received_at    INTEGER,
    PRIMARY KEY (agent_id, seq)
);
INSERT INTO ledger_records_new (agent_id, seq, event_type, event_id, status, hash, correction_id, received_at)
    SELECT agent_id, seq, event_type, event_id, status, hash, correction_id, received_at FROM ledger_records ORDER BY rowid;
DROP TABLE ledger_records;
ALTER TABLE ledger_records_new RENAME TO ledger_records;
-- +goose StatementBegin
CREATE TRIGGER ledger_records_no_update BEFORE UPDATE ON ledger_records
BEGIN SELECT RAISE(ABORT, 'ledger_records is append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_records_no_delete BEFORE DELETE ON ledger_records
BEGIN SELECT RAISE(ABORT, 'ledger_records is append-only'); END;
-- +goose StatementEnd

CREATE TABLE corrections_new (
    id           TEXT PRIMARY KEY,
    event_type   TEXT NOT NULL CHECK (event_type IN ('conduit_session', 'ap2_transaction', 'task_offer')),
    event_id     TEXT NOT NULL,
    action       TEXT NOT NULL CHECK (action IN ('status', 'reattribute', 'void')),
    from_agent   TEXT NOT NULL,
    to_agent     TEXT NOT NULL,
    from_status  TEXT NOT NULL,
    to_status    TEXT NOT NULL,
    reason       TEXT NOT NULL,
    appeal_id    TEXT NOT NULL DEFAULT '',
    actor        TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    reissued_at  INTEGER
) WITHOUT ROWID;
INSERT INTO corrections_new SELECT * FROM corrections;
DROP TABLE corrections;
ALTER TABLE corrections_new RENAME TO corrections;
CREATE INDEX idx_corrections_event ON corrections (event_type, event_id);

CREATE TABLE task_offers (
    id                 TEXT PRIMARY KEY,
    agent_id           TEXT NOT NULL REFERENCES agents(id),
    buyer_id           TEXT NOT NULL,
    operator_id        TEXT NOT NULL REFERENCES operators(id),
    status             TEXT NOT NULL CHECK (status IN ('OFFERED', 'ACCEPTED', 'DECLINED')),
    started_at         INTEGER NOT NULL,
    decided_at         INTEGER,
    seq                INTEGER NOT NULL,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    reported_agent_id  TEXT,
    reported_status    TEXT,
    voided_at          INTEGER,
    CHECK ((status IN ('ACCEPTED', 'DECLINED')) = (decided_at IS NOT NULL)),
    CHECK (decided_at IS NULL OR decided_at >= started_at)
);
CREATE INDEX idx_task_offers_agent ON task_offers (agent_id, started_at);

-- +goose Down
-- The wider CHECKs stay: rebuilding both tables again would buy nothing.
DROP TABLE task_offers;
