-- Signed checkpoints (issue 14, spec §8.3, internal/checkpoint): a Merkle
-- root over every agent's chain head at an instant, signed and published
-- for anyone to archive. Each checkpoint keeps its leaves (agent, seq,
-- hash), so that a verifier can recompute the current ledger's commitment
-- at those positions and name the agents that diverge.

-- +goose Up
CREATE TABLE checkpoints (
    number      BIGINT PRIMARY KEY,
    created_at  TIMESTAMPTZ NOT NULL,
    agents      BIGINT NOT NULL,
    root        BYTEA NOT NULL CHECK (length(root) = 32),
    document    TEXT NOT NULL
);
CREATE TABLE checkpoint_leaves (
    number    BIGINT NOT NULL REFERENCES checkpoints(number),
    agent_id  TEXT NOT NULL,
    seq       BIGINT NOT NULL,
    hash      BYTEA NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (number, agent_id)
);

-- +goose Down
DROP TABLE checkpoint_leaves;
DROP TABLE checkpoints;
