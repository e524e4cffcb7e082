-- The breaks the last full walk of the chains found (ledger verify, or the
-- server's schedule), one row per broken chain, so that the gaming signals
-- (internal/signal, chain_break) can be listed set-based.

-- +goose Up
CREATE TABLE chain_breaks (
    agent_id  TEXT PRIMARY KEY,
    found_at  TIMESTAMPTZ NOT NULL,
    seq       BIGINT NOT NULL,
    reason    TEXT NOT NULL
);

-- +goose Down
DROP TABLE chain_breaks;
