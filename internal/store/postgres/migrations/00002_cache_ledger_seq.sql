-- Cache entries carry the ledger version their counts were read at, so that
-- RecomputeAll and RefreshScore need no lock against Ingest: an entry is
-- served only while its agent is still at that version (internal/store/
-- store.go, "Concurrency").
--
-- agents.terminal_seq is the chain position (seq) of the agent's latest
-- terminal report. Counts depend only on terminal reports, and every new
-- one has a seq above any earlier one, so the value changes exactly when
-- the counts may change, and never for a non-terminal report.
-- swarmscore_cache.ledger_seq is the terminal_seq the entry's counts were
-- read with, in the same snapshot.

-- +goose Up
ALTER TABLE agents ADD COLUMN terminal_seq BIGINT NOT NULL DEFAULT 0;
-- Any starting value works as long as it is below the seq of the next
-- terminal report: the chain head is.
UPDATE agents SET terminal_seq = head_seq;
ALTER TABLE agents ADD CONSTRAINT agents_terminal_seq_check CHECK (terminal_seq BETWEEN 0 AND head_seq);

-- -1 matches no agent: an entry whose version is unknown is never served.
ALTER TABLE swarmscore_cache ADD COLUMN ledger_seq BIGINT NOT NULL DEFAULT -1;
-- Entries written before this migration were computed while Ingest was
-- locked out, and any later terminal report invalidated them, so an entry
-- that is not invalidated holds the agent's current counts.
UPDATE swarmscore_cache c SET ledger_seq = a.terminal_seq
    FROM agents a WHERE a.id = c.agent_id AND c.valid_until <> c.computed_at;

-- +goose Down
ALTER TABLE swarmscore_cache DROP COLUMN ledger_seq;
ALTER TABLE agents DROP COLUMN terminal_seq;
