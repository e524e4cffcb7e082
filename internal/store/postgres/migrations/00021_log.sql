-- The transparency log (issue 23, internal/tlog): every chain record is
-- appended, in the transaction that stores it, as a leaf of one global
-- RFC 6962 Merkle log. A leaf is the record's chain hash and its position
-- in its agent's chain (ledger.LogLeaf), never an agent id, so erasure
-- renames nothing here and retention (rows deleted or partitions dropped)
-- removes no leaf. log_state holds the log's size: a transaction appending
-- leaves takes its row lock last, just before it writes them, so indexes
-- are handed out in commit order without gaps. log_index on a record is
-- its leaf's index; records from before this migration have none until
-- the backfill (Store.BackfillLog) appends them, chain by chain in order.
-- log_subtrees keeps the hash of every complete subtree of 256^level leaves
-- (the tiles above level 0); log_checkpoints the signed checkpoint notes;
-- checkpoint_cosignatures the witnesses' cosignature lines of a note.

-- +goose Up
CREATE TABLE log_state (
    one   BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
    size  BIGINT NOT NULL CHECK (size >= 0)
);
INSERT INTO log_state (one, size) VALUES (true, 0);

CREATE TABLE log_leaves (
    idx   BIGINT PRIMARY KEY CHECK (idx >= 0),
    hash  BYTEA NOT NULL CHECK (length(hash) = 32),
    seq   BIGINT NOT NULL CHECK (seq >= 1)
);
CREATE TABLE log_subtrees (
    level  INTEGER NOT NULL CHECK (level >= 1),
    idx    BIGINT NOT NULL CHECK (idx >= 0),
    hash   BYTEA NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (level, idx)
);
-- +goose StatementBegin
CREATE FUNCTION log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END
$$;
-- +goose StatementEnd
CREATE TRIGGER log_leaves_append_only BEFORE UPDATE OR DELETE ON log_leaves
    FOR EACH ROW EXECUTE FUNCTION log_append_only();
CREATE TRIGGER log_leaves_no_truncate BEFORE TRUNCATE ON log_leaves
    FOR EACH STATEMENT EXECUTE FUNCTION log_append_only();
CREATE TRIGGER log_subtrees_append_only BEFORE UPDATE OR DELETE ON log_subtrees
    FOR EACH ROW EXECUTE FUNCTION log_append_only();

CREATE TABLE log_checkpoints (
    size        BIGINT PRIMARY KEY CHECK (size >= 0),
    created_at  TIMESTAMPTZ NOT NULL,
    root        BYTEA NOT NULL CHECK (length(root) = 32),
    note        TEXT NOT NULL
);
CREATE TABLE checkpoint_cosignatures (
    size        BIGINT NOT NULL REFERENCES log_checkpoints(size),
    key_name    TEXT NOT NULL,
    signature   TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (size, key_name)
);

ALTER TABLE ledger_records ADD COLUMN log_index BIGINT;
-- The records the backfill has still to append, in chain order.
CREATE INDEX ledger_records_unlogged ON ledger_records (agent_id COLLATE "C", seq) WHERE log_index IS NULL;

-- A record's log index is set once: when it is stored, or by the backfill
-- from NULL (changing nothing else); a seal keeps it.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ledger_records_seal_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.seq = OLD.seq AND NEW.event_type = OLD.event_type AND NEW.event_id = OLD.event_id AND NEW.status = OLD.status
       AND NEW.hash = OLD.hash AND NEW.correction_id IS NOT DISTINCT FROM OLD.correction_id
       AND NEW.received_at IS NOT DISTINCT FROM OLD.received_at
       AND ((NEW.log_index IS NOT DISTINCT FROM OLD.log_index AND EXISTS (SELECT 1 FROM erasures WHERE id = NEW.sealed_by))
            OR (OLD.log_index IS NULL AND NEW.log_index IS NOT NULL AND NEW.agent_id = OLD.agent_id
                AND NEW.sealed_by IS NOT DISTINCT FROM OLD.sealed_by)) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'ledger_records is append-only' USING ERRCODE = 'restrict_violation';
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ledger_records_seal_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.seq = OLD.seq AND NEW.event_type = OLD.event_type AND NEW.event_id = OLD.event_id AND NEW.status = OLD.status
       AND NEW.hash = OLD.hash AND NEW.correction_id IS NOT DISTINCT FROM OLD.correction_id
       AND NEW.received_at IS NOT DISTINCT FROM OLD.received_at
       AND EXISTS (SELECT 1 FROM erasures WHERE id = NEW.sealed_by) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'ledger_records is append-only' USING ERRCODE = 'restrict_violation';
END
$$;
-- +goose StatementEnd
DROP INDEX ledger_records_unlogged;
ALTER TABLE ledger_records DROP COLUMN log_index;
DROP TABLE checkpoint_cosignatures;
DROP TABLE log_checkpoints;
DROP TABLE log_subtrees;
DROP TABLE log_leaves;
DROP FUNCTION log_append_only();
DROP TABLE log_state;
