-- SwarmScore ledger, SQLite dialect. Times are INTEGER unix microseconds in
-- UTC (exact range comparisons, no text parsing); money is integer cents;
-- escrow modifiers are integer basis points (10000 = 1.0). Table and column
-- names are a superset of spec §12.1; see internal/store/store.go.

-- +goose Up
CREATE TABLE operators (
    id          TEXT PRIMARY KEY,
    created_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE agents (
    id          TEXT PRIMARY KEY,
    created_at  INTEGER NOT NULL,
    head_seq    INTEGER NOT NULL DEFAULT 0,
    head_hash   BLOB NOT NULL DEFAULT (zeroblob(32))
) WITHOUT ROWID;

CREATE TABLE conduit_sessions (
    id               TEXT PRIMARY KEY,
    agent_id         TEXT NOT NULL REFERENCES agents(id),
    buyer_id         TEXT,
    operator_id      TEXT NOT NULL REFERENCES operators(id),
    started_at       INTEGER NOT NULL,
    completed_at     INTEGER,
    status           TEXT NOT NULL CHECK (status IN ('PENDING', 'RUNNING', 'VERIFIED', 'FAILED', 'ERROR', 'TIMEOUT')),
    action_count     INTEGER NOT NULL DEFAULT 0,
    session_cost_usd TEXT,                -- §12.1 column, unused by scoring
    proof_hash       TEXT,                -- §12.1 column, unused by scoring
    seq              INTEGER NOT NULL,    -- chain record that produced this state
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    CHECK ((status IN ('VERIFIED', 'FAILED', 'ERROR', 'TIMEOUT')) = (completed_at IS NOT NULL)),
    CHECK (completed_at IS NULL OR completed_at >= started_at)
);

CREATE INDEX idx_conduit_sessions_agent_date
    ON conduit_sessions (agent_id, completed_at, status)
    WHERE status IN ('VERIFIED', 'FAILED');

CREATE TABLE ap2_transactions (
    id                  TEXT PRIMARY KEY,
    provider_id         TEXT NOT NULL REFERENCES agents(id),
    buyer_id            TEXT NOT NULL,
    operator_id         TEXT NOT NULL REFERENCES operators(id),
    status              TEXT NOT NULL CHECK (status IN ('NEGOTIATING', 'HELD', 'EXECUTING', 'DELIVERED', 'SETTLED', 'DISPUTED', 'REFUNDED', 'CANCELLED')),
    escrow_amount_cents INTEGER NOT NULL CHECK (escrow_amount_cents BETWEEN 0 AND 9007199254740991),
    escrow_modifier_bp  INTEGER CHECK (escrow_modifier_bp BETWEEN 0 AND 10000),
    started_at          INTEGER NOT NULL,
    settled_at          INTEGER,
    seq                 INTEGER NOT NULL,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    CHECK ((status IN ('SETTLED', 'DISPUTED', 'REFUNDED', 'CANCELLED')) = (settled_at IS NOT NULL)),
    CHECK (settled_at IS NULL OR settled_at >= started_at)
);

CREATE INDEX idx_ap2_transactions_provider_date
    ON ap2_transactions (provider_id, settled_at, status)
    WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED');

-- The append-only hash chain: one record per accepted report.
CREATE TABLE ledger_records (
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    seq         INTEGER NOT NULL CHECK (seq >= 1),
    event_type  TEXT NOT NULL CHECK (event_type IN ('conduit_session', 'ap2_transaction')),
    event_id    TEXT NOT NULL,
    content     BLOB NOT NULL,
    hash        BLOB NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (agent_id, seq)
) WITHOUT ROWID;

-- +goose StatementBegin
CREATE TRIGGER ledger_records_no_update BEFORE UPDATE ON ledger_records
BEGIN SELECT RAISE(ABORT, 'ledger_records is append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_records_no_delete BEFORE DELETE ON ledger_records
BEGIN SELECT RAISE(ABORT, 'ledger_records is append-only'); END;
-- +goose StatementEnd

CREATE TABLE swarmscore_cache (
    agent_id               TEXT PRIMARY KEY REFERENCES agents(id),
    score                  INTEGER NOT NULL CHECK (score BETWEEN 0 AND 1000),
    tier                   TEXT NOT NULL CHECK (tier IN ('NONE', 'STANDARD', 'ELITE')),
    conduit_sessions_90d   INTEGER NOT NULL DEFAULT 0,
    conduit_successful_90d INTEGER NOT NULL DEFAULT 0,
    ap2_sessions_90d       INTEGER NOT NULL DEFAULT 0,
    ap2_successful_90d     INTEGER NOT NULL DEFAULT 0,
    conduit_contribution   INTEGER NOT NULL DEFAULT 0,
    ap2_contribution       INTEGER NOT NULL DEFAULT 0,
    escrow_modifier_bp     INTEGER NOT NULL CHECK (escrow_modifier_bp BETWEEN 2500 AND 10000),
    computed_at            INTEGER NOT NULL,
    expires_at             INTEGER NOT NULL,
    valid_until            INTEGER NOT NULL,
    passport_json          TEXT,
    passport_signature     TEXT
) WITHOUT ROWID;

CREATE INDEX idx_swarmscore_cache_rank ON swarmscore_cache (score DESC, agent_id);

CREATE TABLE api_tokens (
    id            TEXT PRIMARY KEY,
    operator_id   TEXT NOT NULL REFERENCES operators(id),
    token_sha256  BLOB NOT NULL UNIQUE CHECK (length(token_sha256) = 32),
    created_at    INTEGER NOT NULL,
    revoked_at    INTEGER
);

-- Which signing key was in use when; the secret itself is never stored here.
CREATE TABLE signing_keys (
    id           TEXT PRIMARY KEY,
    fingerprint  TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    retired_at   INTEGER
);

-- §11.3 appeals.
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

-- §11.1 consent and §8.4 visibility. No row means public.
CREATE TABLE consent (
    agent_id      TEXT PRIMARY KEY REFERENCES agents(id),
    visibility    TEXT NOT NULL CHECK (visibility IN ('public', 'unlisted')),
    consented_at  INTEGER NOT NULL
) WITHOUT ROWID;

-- +goose Down
DROP TABLE consent;
DROP TABLE appeals;
DROP TABLE signing_keys;
DROP TABLE api_tokens;
DROP TABLE swarmscore_cache;
DROP TABLE ledger_records;
DROP TABLE ap2_transactions;
DROP TABLE conduit_sessions;
DROP TABLE agents;
DROP TABLE operators;
