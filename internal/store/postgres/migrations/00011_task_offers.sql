-- Task offers (issue 16, spec §8.3 "success rate gaming"): a third event
-- type, OFFERED then ACCEPTED or DECLINED, chained like the others and never
-- counted in the score; the acceptance rate is an operator's signal. The
-- CHECKs on event_type of ledger_records and corrections admit it.

-- +goose Up
ALTER TABLE ledger_records DROP CONSTRAINT IF EXISTS ledger_records_slim_event_type_check;
ALTER TABLE ledger_records ADD CONSTRAINT ledger_records_event_type_check
    CHECK (event_type IN ('conduit_session', 'ap2_transaction', 'task_offer'));
ALTER TABLE corrections DROP CONSTRAINT IF EXISTS corrections_event_type_check;
ALTER TABLE corrections ADD CONSTRAINT corrections_event_type_check
    CHECK (event_type IN ('conduit_session', 'ap2_transaction', 'task_offer'));

CREATE TABLE task_offers (
    id                 TEXT PRIMARY KEY,
    agent_id           TEXT NOT NULL REFERENCES agents(id),
    buyer_id           TEXT NOT NULL,
    operator_id        TEXT NOT NULL REFERENCES operators(id),
    status             VARCHAR(16) NOT NULL CHECK (status IN ('OFFERED', 'ACCEPTED', 'DECLINED')),
    started_at         TIMESTAMPTZ NOT NULL,
    decided_at         TIMESTAMPTZ,
    seq                BIGINT NOT NULL,
    created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    reported_agent_id  TEXT,
    reported_status    TEXT,
    voided_at          TIMESTAMPTZ,
    CHECK ((status IN ('ACCEPTED', 'DECLINED')) = (decided_at IS NOT NULL)),
    CHECK (decided_at IS NULL OR decided_at >= started_at)
);
CREATE INDEX idx_task_offers_agent ON task_offers (agent_id, started_at);

-- +goose Down
DROP TABLE task_offers;
ALTER TABLE corrections DROP CONSTRAINT corrections_event_type_check;
ALTER TABLE corrections ADD CONSTRAINT corrections_event_type_check CHECK (event_type IN ('conduit_session', 'ap2_transaction'));
ALTER TABLE ledger_records DROP CONSTRAINT ledger_records_event_type_check;
ALTER TABLE ledger_records ADD CONSTRAINT ledger_records_slim_event_type_check CHECK (event_type IN ('conduit_session', 'ap2_transaction'));
