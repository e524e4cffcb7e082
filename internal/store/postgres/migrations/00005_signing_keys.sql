-- The keyring (spec §8.1, internal/keyring): every signing key of the
-- deployment with its algorithm, environment and state, the secret sealed
-- (AES-256-GCM) under SWARMSCORE_MASTER_KEY, which the database never sees,
-- so every replica sees a rotation at once. The table of migration 00001
-- was never written; it is replaced. At most one key is active, enforced by
-- a partial unique index.

-- +goose Up
DROP TABLE signing_keys;
CREATE TABLE signing_keys (
    id                TEXT PRIMARY KEY,
    alg               TEXT NOT NULL CHECK (alg IN ('HS256', 'EdDSA')),
    environment       TEXT NOT NULL,
    state             TEXT NOT NULL CHECK (state IN ('active', 'verify-only', 'retired', 'revoked')),
    created_at        TIMESTAMPTZ NOT NULL,
    state_changed_at  TIMESTAMPTZ NOT NULL,
    public_key        BYTEA,
    sealed_key        BYTEA NOT NULL
);
CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (state) WHERE state = 'active';

-- +goose Down
DROP TABLE signing_keys;
CREATE TABLE signing_keys (
    id           TEXT PRIMARY KEY,
    fingerprint  TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    retired_at   TIMESTAMPTZ
);
