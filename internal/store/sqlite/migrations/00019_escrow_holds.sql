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
    amount_cents        INTEGER NOT NULL CHECK (amount_cents > 0),
    currency            TEXT NOT NULL,
    score               INTEGER NOT NULL,
    tier                TEXT NOT NULL,
    escrow_modifier_bp  INTEGER NOT NULL,
    passport_id         TEXT NOT NULL,
    kid                 TEXT NOT NULL,
    hold_cents          INTEGER NOT NULL,
    released_cents      INTEGER NOT NULL,
    state               TEXT NOT NULL CHECK (state IN ('held', 'disputed', 'released', 'settled', 'refunded', 'cancelled')),
    payout_cents        INTEGER NOT NULL DEFAULT 0,
    fee_cents           INTEGER NOT NULL DEFAULT 0,
    refund_cents        INTEGER NOT NULL DEFAULT 0,
    reason              TEXT NOT NULL DEFAULT '',
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    seq                 INTEGER NOT NULL,
    hash                BLOB NOT NULL CHECK (length(hash) = 32)
) WITHOUT ROWID;
CREATE INDEX idx_escrow_holds_state ON escrow_holds (state, created_at);
CREATE INDEX idx_escrow_holds_provider ON escrow_holds (provider_id, created_at);

CREATE TABLE escrow_hold_steps (
    transaction_id  TEXT NOT NULL REFERENCES escrow_holds(transaction_id),
    seq             INTEGER NOT NULL CHECK (seq >= 1),
    action          TEXT NOT NULL,
    state           TEXT NOT NULL,
    at              INTEGER NOT NULL,
    actor           TEXT NOT NULL,
    payout_cents    INTEGER NOT NULL,
    fee_cents       INTEGER NOT NULL,
    refund_cents    INTEGER NOT NULL,
    reason          TEXT NOT NULL,
    hash            BLOB NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (transaction_id, seq)
) WITHOUT ROWID;

CREATE TABLE conduit_proofs (
    event_id    TEXT NOT NULL,
    seq         INTEGER NOT NULL CHECK (seq >= 1),
    at          INTEGER NOT NULL,
    actor       TEXT NOT NULL,
    size        INTEGER NOT NULL,
    sha256      TEXT NOT NULL,
    expected    TEXT NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('proof_matched', 'proof_mismatch')),
    hash        BLOB NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (event_id, seq)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE conduit_proofs;
DROP TABLE escrow_hold_steps;
DROP TABLE escrow_holds;
