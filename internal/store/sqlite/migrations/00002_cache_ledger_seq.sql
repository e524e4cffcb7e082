-- Cache entries carry the ledger version their counts were read at; see the
-- PostgreSQL migration of the same name and internal/store/store.go
-- ("Concurrency"). SQLite's single writer already excludes Ingest from a
-- refresh, but both back ends keep one model and pass one suite.
--
-- agents.terminal_seq is the chain position (seq) of the agent's latest
-- terminal report: it changes exactly when the counts may change.
-- swarmscore_cache.ledger_seq is the terminal_seq the entry's counts were
-- read with, in the same transaction.

-- +goose Up
ALTER TABLE agents ADD COLUMN terminal_seq INTEGER NOT NULL DEFAULT 0 CHECK (terminal_seq >= 0);
-- Any starting value works as long as it is below the seq of the next
-- terminal report: the chain head is.
UPDATE agents SET terminal_seq = head_seq;

-- -1 matches no agent: an entry whose version is unknown is never served.
ALTER TABLE swarmscore_cache ADD COLUMN ledger_seq INTEGER NOT NULL DEFAULT -1;
-- Entries written before this migration were computed inside the single
-- writer, and any later terminal report invalidated them, so an entry that
-- is not invalidated holds the agent's current counts.
UPDATE swarmscore_cache SET ledger_seq = (SELECT a.terminal_seq FROM agents a WHERE a.id = swarmscore_cache.agent_id)
    WHERE valid_until <> computed_at;

-- +goose Down
ALTER TABLE swarmscore_cache DROP COLUMN ledger_seq;
ALTER TABLE agents DROP COLUMN terminal_seq;
