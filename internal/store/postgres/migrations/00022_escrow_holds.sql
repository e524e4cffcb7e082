-- Escrow holds (spec §5, issue 24) and Conduit proof checks (§8.2).
--
-- escrow_holds is one row per hold, keyed by the AP2 transaction it holds
-- money for: its terms, what priced it (score, tier, modifier, passport,
-- key), its state and money, and the head of its chain (seq, hash).
-- escrow_hold_steps are its changes, each hashed over the hold as the step
-- left it and the step before it (ledger.VerifyHold).
--
-- conduit_proofs are the checks of uploaded proof bundles against a
-- session's recorded proof_hash, chained per session the same way
-- (ledger.VerifyProofs).

-- +goose Up
CREATE TABLE escrow_holds (
    transaction_id      TEXT PRIMARY KEY,
    provider_id         TEXT NOT NULL,
    buyer_id            TEXT NOT NULL,
    operator_id         TEXT NOT NULL,
    amount_cents        BIGINT NOT NULL CHECK (amount_cents > 0),
    currency            TEXT NOT NULL,
    score               BIGINT NOT NULL,
    tier                TEXT NOT NULL,
    escrow_modifier_bp  BIGINT NOT NULL,
    passport_id         TEXT NOT NULL,
    kid                 TEXT NOT NULL,
    hold_cents          BIGINT NOT NULL,
    released_cents      BIGINT NOT NULL,
    state               TEXT NOT NULL CHECK (state IN ('held', 'disputed', 'released', 'settled', 'refunded', 'cancelled')),
    payout_cents        BIGINT NOT NULL DEFAULT 0,
    fee_cents           BIGINT NOT NULL DEFAULT 0,
    refund_cents        BIGINT NOT NULL DEFAULT 0,
    reason              TEXT NOT NULL DEFAULT '',
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    seq                 BIGINT NOT NULL,
    hash                BYTEA NOT NULL CHECK (length(hash) = 32)
);
CREATE INDEX idx_escrow_holds_state ON escrow_holds (state, created_at);
CREATE INDEX idx_escrow_holds_provider ON escrow_holds (provider_id, created_at);

CREATE TABLE escrow_hold_steps (
    transaction_id  TEXT NOT NULL REFERENCES escrow_holds(transaction_id),
    seq             BIGINT NOT NULL CHECK (seq >= 1),
    action          TEXT NOT NULL,
    state           TEXT NOT NULL,
    at              TIMESTAMPTZ NOT NULL,
    actor           TEXT NOT NULL,
    payout_cents    BIGINT NOT NULL,
    fee_cents       BIGINT NOT NULL,
    refund_cents    BIGINT NOT NULL,
    reason          TEXT NOT NULL,
    hash            BYTEA NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (transaction_id, seq)
);

CREATE TABLE conduit_proofs (
    event_id    TEXT NOT NULL,
    seq         BIGINT NOT NULL CHECK (seq >= 1),
    at          TIMESTAMPTZ NOT NULL,
    actor       TEXT NOT NULL,
    size        BIGINT NOT NULL,
    sha256      TEXT NOT NULL,
    expected    TEXT NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('proof_matched', 'proof_mismatch')),
    hash        BYTEA NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (event_id, seq)
);

-- +goose Down
DROP TABLE conduit_proofs;
DROP TABLE escrow_hold_steps;
DROP TABLE escrow_holds;
