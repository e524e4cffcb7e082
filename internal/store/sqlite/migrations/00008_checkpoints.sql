-- Signed checkpoints (issue 14, spec §8.3, internal/checkpoint): a Merkle
-- root over every agent's chain head at an instant, signed and published
-- for anyone to archive. Each checkpoint keeps its leaves (agent, seq,
-- hash), so that a verifier can recompute the current ledger's commitment
-- at those positions and name the agents that diverge.

-- +goose Up
CREATE TABLE checkpoints (
    number      INTEGER PRIMARY KEY,
    created_at  INTEGER NOT NULL,
    agents      INTEGER NOT NULL,
    root        BLOB NOT NULL CHECK (length(root) = 32),
    document    TEXT NOT NULL
);
CREATE TABLE checkpoint_leaves (
    number    INTEGER NOT NULL REFERENCES checkpoints(number),
    agent_id  TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    hash      BLOB NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (number, agent_id)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE checkpoint_leaves;
DROP TABLE checkpoints;
