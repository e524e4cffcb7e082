-- SwarmScore ledger, PostgreSQL dialect. The model (tables, columns, the
-- meaning of seq and valid_until) is the one internal/store/store.go
-- describes and the SQLite migration implements; only the types differ.
-- Times are TIMESTAMPTZ (microsecond precision, the ledger's resolution, so
-- nothing is rounded); money is integer cents; escrow modifiers are integer
-- basis points (10000 = 1.0). Table and column names are a superset of spec
-- §12.1: its decimal columns are kept as read-only generated columns derived
-- from the exact integer ones, with types that can hold their values.

-- +goose Up
CREATE TABLE operators (
    id          TEXT PRIMARY KEY,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE agents (
    id          TEXT PRIMARY KEY,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    head_seq    BIGINT NOT NULL DEFAULT 0 CHECK (head_seq >= 0),
    head_hash   BYTEA NOT NULL DEFAULT decode(repeat('00', 32), 'hex') CHECK (length(head_hash) = 32)
);

CREATE TABLE conduit_sessions (
    id               TEXT PRIMARY KEY,
    agent_id         TEXT NOT NULL REFERENCES agents(id),
    buyer_id         TEXT,
    operator_id      TEXT NOT NULL REFERENCES operators(id),
    started_at       TIMESTAMPTZ NOT NULL,
    completed_at     TIMESTAMPTZ,
    status           VARCHAR(16) NOT NULL CHECK (status IN ('PENDING', 'RUNNING', 'VERIFIED', 'FAILED', 'ERROR', 'TIMEOUT')),
    action_count     INTEGER NOT NULL DEFAULT 0,
    session_cost_usd NUMERIC(10,4),       -- §12.1 column, unused by scoring
    proof_hash       VARCHAR(64),         -- §12.1 column, unused by scoring
    seq              BIGINT NOT NULL,     -- chain record that produced this state
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((status IN ('VERIFIED', 'FAILED', 'ERROR', 'TIMEOUT')) = (completed_at IS NOT NULL)),
    CHECK (completed_at IS NULL OR completed_at >= started_at)
);

-- Covers the window counts and the recompute (index-only scans: status is
-- in the key so the VERIFIED filter needs no heap visit).
CREATE INDEX idx_conduit_sessions_agent_date
    ON conduit_sessions (agent_id, completed_at, status)
    WHERE status IN ('VERIFIED', 'FAILED');

CREATE TABLE ap2_transactions (
    id                  TEXT PRIMARY KEY,
    provider_id         TEXT NOT NULL REFERENCES agents(id),
    buyer_id            TEXT NOT NULL,
    operator_id         TEXT NOT NULL REFERENCES operators(id),
    status              VARCHAR(16) NOT NULL CHECK (status IN ('NEGOTIATING', 'HELD', 'EXECUTING', 'DELIVERED', 'SETTLED', 'DISPUTED', 'REFUNDED', 'CANCELLED')),
    escrow_amount_cents BIGINT NOT NULL CHECK (escrow_amount_cents BETWEEN 0 AND 9007199254740991),
    escrow_modifier_bp  INTEGER CHECK (escrow_modifier_bp BETWEEN 0 AND 10000),
    -- §12.1's decimal columns, derived from the exact ones (NUMERIC(12,2)
    -- could not hold every accepted amount, NUMERIC(4,4) cannot hold 1.0).
    escrow_amount_usd   NUMERIC(16,2) GENERATED ALWAYS AS (escrow_amount_cents / 100.0) STORED,
    escrow_modifier     NUMERIC(5,4) GENERATED ALWAYS AS (escrow_modifier_bp / 10000.0) STORED,
    started_at          TIMESTAMPTZ NOT NULL,
    settled_at          TIMESTAMPTZ,
    seq                 BIGINT NOT NULL,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((status IN ('SETTLED', 'DISPUTED', 'REFUNDED', 'CANCELLED')) = (settled_at IS NOT NULL)),
    CHECK (settled_at IS NULL OR settled_at >= started_at)
);

CREATE INDEX idx_ap2_transactions_provider_date
    ON ap2_transactions (provider_id, settled_at, status)
    WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED');

-- The append-only hash chain: one record per accepted report. content is
-- the exact canonical bytes that were hashed (BYTEA, not JSONB, which would
-- normalise them). agent_id has no foreign key, unlike SQLite's: every
-- record is written by the transaction that holds its agent's row locked
-- (or inserts it), so the per-row check could only catch a store bug, and it
-- cost 15% of ingest throughput. VerifyLedger reports records whose agent
-- row is missing.
CREATE TABLE ledger_records (
    agent_id    TEXT NOT NULL,
    seq         BIGINT NOT NULL CHECK (seq >= 1),
    event_type  VARCHAR(16) NOT NULL CHECK (event_type IN ('conduit_session', 'ap2_transaction')),
    event_id    TEXT NOT NULL,
    content     BYTEA NOT NULL,
    hash        BYTEA NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (agent_id, seq)
);

-- +goose StatementBegin
CREATE FUNCTION ledger_records_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger_records is append-only' USING ERRCODE = 'restrict_violation';
END
$$;
-- +goose StatementEnd

CREATE TRIGGER ledger_records_no_update BEFORE UPDATE OR DELETE ON ledger_records
    FOR EACH ROW EXECUTE FUNCTION ledger_records_append_only();
CREATE TRIGGER ledger_records_no_truncate BEFORE TRUNCATE ON ledger_records
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_records_append_only();

CREATE TABLE swarmscore_cache (
    agent_id               TEXT PRIMARY KEY REFERENCES agents(id),
    score                  INTEGER NOT NULL CHECK (score BETWEEN 0 AND 1000),
    tier                   VARCHAR(8) NOT NULL CHECK (tier IN ('NONE', 'STANDARD', 'ELITE')),
    conduit_sessions_90d   INTEGER NOT NULL DEFAULT 0,
    conduit_successful_90d INTEGER NOT NULL DEFAULT 0,
    ap2_sessions_90d       INTEGER NOT NULL DEFAULT 0,
    ap2_successful_90d     INTEGER NOT NULL DEFAULT 0,
    conduit_contribution   INTEGER NOT NULL DEFAULT 0,
    ap2_contribution       INTEGER NOT NULL DEFAULT 0,
    escrow_modifier_bp     INTEGER NOT NULL CHECK (escrow_modifier_bp BETWEEN 2500 AND 10000),
    -- §12.1's NUMERIC(4,4) cannot hold 1.0; this one is exact and derived.
    escrow_modifier        NUMERIC(5,4) GENERATED ALWAYS AS (escrow_modifier_bp / 10000.0) STORED,
    computed_at            TIMESTAMPTZ NOT NULL,
    expires_at             TIMESTAMPTZ NOT NULL,
    valid_until            TIMESTAMPTZ NOT NULL,
    -- TEXT, not §12.1's JSONB: JSONB reorders keys and drops whitespace, and
    -- a passport must come back byte for byte as it was signed.
    passport_json          TEXT,
    passport_signature     TEXT
);

CREATE INDEX idx_swarmscore_cache_rank ON swarmscore_cache (score DESC, agent_id);

CREATE TABLE api_tokens (
    id            TEXT PRIMARY KEY,
    operator_id   TEXT NOT NULL REFERENCES operators(id),
    token_sha256  BYTEA NOT NULL UNIQUE CHECK (length(token_sha256) = 32),
    created_at    TIMESTAMPTZ NOT NULL,
    revoked_at    TIMESTAMPTZ
);

-- Which signing key was in use when; the secret itself is never stored here.
CREATE TABLE signing_keys (
    id           TEXT PRIMARY KEY,
    fingerprint  TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    retired_at   TIMESTAMPTZ
);

-- §11.3 appeals.
CREATE TABLE appeals (
    id               TEXT PRIMARY KEY,
    agent_id         TEXT NOT NULL REFERENCES agents(id),
    submitted_at     TIMESTAMPTZ NOT NULL,
    grounds          TEXT NOT NULL,
    status           VARCHAR(16) NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN', 'ACKNOWLEDGED', 'RESOLVED', 'ESCALATED')),
    acknowledged_at  TIMESTAMPTZ,
    resolved_at      TIMESTAMPTZ,
    resolution       TEXT
);

CREATE INDEX idx_appeals_agent ON appeals (agent_id);

-- §11.1 consent and §8.4 visibility. No row means public.
CREATE TABLE consent (
    agent_id      TEXT PRIMARY KEY REFERENCES agents(id),
    visibility    VARCHAR(8) NOT NULL CHECK (visibility IN ('public', 'unlisted')),
    consented_at  TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE consent;
DROP TABLE appeals;
DROP TABLE signing_keys;
DROP TABLE api_tokens;
DROP TABLE swarmscore_cache;
DROP TABLE ledger_records;
DROP FUNCTION ledger_records_append_only();
DROP TABLE ap2_transactions;
DROP TABLE conduit_sessions;
DROP TABLE agents;
DROP TABLE operators;
