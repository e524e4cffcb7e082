-- Corrections (issue 14, spec §11.3): an appended, hash-chained record that
-- references an event and changes its final status, its agent, or voids it
-- (internal/ledger/correct.go). History is never edited: the event's row
-- keeps its reported agent and status in reported_agent_id / reported_status
-- (NULL while no correction changed them, so nothing is copied for the vast
-- majority of events) while agent_id / status / voided_at hold the state the
-- counts use. A correction record in ledger_records names its correction
-- row; verification rebuilds its content from that row.
--
-- The window indexes exclude voided events, so the counts still read them
-- alone (a voided event never counts).

-- +goose Up
ALTER TABLE conduit_sessions ADD COLUMN reported_agent_id TEXT;
ALTER TABLE conduit_sessions ADD COLUMN reported_status TEXT;
ALTER TABLE conduit_sessions ADD COLUMN voided_at TIMESTAMPTZ;
ALTER TABLE ap2_transactions ADD COLUMN reported_agent_id TEXT;
ALTER TABLE ap2_transactions ADD COLUMN reported_status TEXT;
ALTER TABLE ap2_transactions ADD COLUMN voided_at TIMESTAMPTZ;
ALTER TABLE ledger_records ADD COLUMN correction_id TEXT;

CREATE TABLE corrections (
    id           TEXT PRIMARY KEY,
    event_type   VARCHAR(16) NOT NULL CHECK (event_type IN ('conduit_session', 'ap2_transaction')),
    event_id     TEXT NOT NULL,
    action       TEXT NOT NULL CHECK (action IN ('status', 'reattribute', 'void')),
    from_agent   TEXT NOT NULL,
    to_agent     TEXT NOT NULL,
    from_status  TEXT NOT NULL,
    to_status    TEXT NOT NULL,
    reason       TEXT NOT NULL,
    appeal_id    TEXT NOT NULL DEFAULT '',
    actor        TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    reissued_at  TIMESTAMPTZ
);
CREATE INDEX idx_corrections_event ON corrections (event_type, event_id);

DROP INDEX idx_conduit_sessions_agent_date;
CREATE INDEX idx_conduit_sessions_agent_date
    ON conduit_sessions (agent_id, completed_at, status)
    WHERE status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL;
DROP INDEX idx_ap2_transactions_provider_date;
CREATE INDEX idx_ap2_transactions_provider_date
    ON ap2_transactions (provider_id, settled_at, status)
    WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL;

-- +goose Down
DROP INDEX idx_ap2_transactions_provider_date;
CREATE INDEX idx_ap2_transactions_provider_date
    ON ap2_transactions (provider_id, settled_at, status)
    WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED');
DROP INDEX idx_conduit_sessions_agent_date;
CREATE INDEX idx_conduit_sessions_agent_date
    ON conduit_sessions (agent_id, completed_at, status)
    WHERE status IN ('VERIFIED', 'FAILED');
DROP TABLE corrections;
ALTER TABLE ledger_records DROP COLUMN correction_id;
ALTER TABLE ap2_transactions DROP COLUMN voided_at;
ALTER TABLE ap2_transactions DROP COLUMN reported_status;
ALTER TABLE ap2_transactions DROP COLUMN reported_agent_id;
ALTER TABLE conduit_sessions DROP COLUMN voided_at;
ALTER TABLE conduit_sessions DROP COLUMN reported_status;
ALTER TABLE conduit_sessions DROP COLUMN reported_agent_id;
