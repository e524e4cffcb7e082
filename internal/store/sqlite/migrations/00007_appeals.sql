-- Appeals (spec §11.3, internal/appeal): the table of migration 00001 was
-- never written; it is replaced. An appeal disputes events behind one
-- issued passport; every action on it is kept, and the corrections an
-- uphold recorded name it (corrections.appeal_id).

-- +goose Up
DROP TABLE appeals;
CREATE TABLE appeals (
    id                    TEXT PRIMARY KEY,
    agent_id              TEXT NOT NULL,
    passport_id           TEXT NOT NULL,
    passport_computed_at  INTEGER NOT NULL,
    grounds               TEXT NOT NULL CHECK (grounds IN ('incorrect_count', 'incorrect_status', 'identity_error')),
    statement             TEXT NOT NULL,
    state                 TEXT NOT NULL CHECK (state IN ('submitted', 'acknowledged', 'upheld', 'rejected', 'escalated')),
    filed_by              TEXT NOT NULL,
    filed_at              INTEGER NOT NULL,
    acknowledged_at       INTEGER,
    decided_at            INTEGER,
    escalated_at          INTEGER,
    decision              TEXT NOT NULL DEFAULT '',
    reissued_at           INTEGER
) WITHOUT ROWID;
CREATE INDEX idx_appeals_state ON appeals (state, filed_at);
CREATE INDEX idx_appeals_agent ON appeals (agent_id);
CREATE TABLE appeal_events (
    appeal_id   TEXT NOT NULL REFERENCES appeals(id),
    event_type  TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    PRIMARY KEY (appeal_id, event_type, event_id)
) WITHOUT ROWID;
CREATE TABLE appeal_actions (
    appeal_id  TEXT NOT NULL REFERENCES appeals(id),
    seq        INTEGER NOT NULL,
    action     TEXT NOT NULL,
    actor      TEXT NOT NULL,
    at         INTEGER NOT NULL,
    note       TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (appeal_id, seq)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE appeal_actions;
DROP TABLE appeal_events;
DROP TABLE appeals;
CREATE TABLE appeals (
    id               TEXT PRIMARY KEY,
    agent_id         TEXT NOT NULL REFERENCES agents(id),
    submitted_at     INTEGER NOT NULL,
    grounds          TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN', 'ACKNOWLEDGED', 'RESOLVED', 'ESCALATED')),
    acknowledged_at  INTEGER,
    resolved_at      INTEGER,
    resolution       TEXT
);
