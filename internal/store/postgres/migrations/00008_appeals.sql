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
    passport_computed_at  TIMESTAMPTZ NOT NULL,
    grounds               TEXT NOT NULL CHECK (grounds IN ('incorrect_count', 'incorrect_status', 'identity_error')),
    statement             TEXT NOT NULL,
    state                 TEXT NOT NULL CHECK (state IN ('submitted', 'acknowledged', 'upheld', 'rejected', 'escalated')),
    filed_by              TEXT NOT NULL,
    filed_at              TIMESTAMPTZ NOT NULL,
    acknowledged_at       TIMESTAMPTZ,
    decided_at            TIMESTAMPTZ,
    escalated_at          TIMESTAMPTZ,
    decision              TEXT NOT NULL DEFAULT '',
    reissued_at           TIMESTAMPTZ
);
CREATE INDEX idx_appeals_state ON appeals (state, filed_at);
CREATE INDEX idx_appeals_agent ON appeals (agent_id);
CREATE TABLE appeal_events (
    appeal_id   TEXT NOT NULL REFERENCES appeals(id),
    event_type  TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    PRIMARY KEY (appeal_id, event_type, event_id)
);
CREATE TABLE appeal_actions (
    appeal_id  TEXT NOT NULL REFERENCES appeals(id),
    seq        BIGINT NOT NULL,
    action     TEXT NOT NULL,
    actor      TEXT NOT NULL,
    at         TIMESTAMPTZ NOT NULL,
    note       TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (appeal_id, seq)
);

-- +goose Down
DROP TABLE appeal_actions;
DROP TABLE appeal_events;
DROP TABLE appeals;
CREATE TABLE appeals (
    id               TEXT PRIMARY KEY,
    agent_id         TEXT NOT NULL REFERENCES agents(id),
    submitted_at     TIMESTAMPTZ NOT NULL,
    grounds          TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN', 'ACKNOWLEDGED', 'RESOLVED', 'ESCALATED')),
    acknowledged_at  TIMESTAMPTZ,
    resolved_at      TIMESTAMPTZ,
    resolution       TEXT
);
CREATE INDEX idx_appeals_agent ON appeals (agent_id);
