-- The transparency log (issue 23, internal/tlog): every chain record is
-- appended, in the transaction that stores it, as a leaf of one global
-- RFC 6962 Merkle log. A leaf is the record's chain hash and its position
-- in its agent's chain (ledger.LogLeaf), never an agent id, so erasure
-- renames nothing here and pruning deletes no leaf. log_index on a record
-- is its leaf's index; records from before this migration have none until
-- the backfill (Store.BackfillLog) appends them, chain by chain in order.
-- log_subtrees keeps the hash of every complete subtree of 256^level leaves
-- (the tiles above level 0); log_checkpoints the signed checkpoint notes;
-- checkpoint_cosignatures the witnesses' cosignature lines of a note.

-- +goose Up
CREATE TABLE log_leaves (
    idx   INTEGER PRIMARY KEY CHECK (idx >= 0),
    hash  BLOB NOT NULL CHECK (length(hash) = 32),
    seq   INTEGER NOT NULL CHECK (seq >= 1)
);
-- +goose StatementBegin
CREATE TRIGGER log_leaves_no_update BEFORE UPDATE ON log_leaves
BEGIN SELECT RAISE(ABORT, 'log_leaves is append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER log_leaves_no_delete BEFORE DELETE ON log_leaves
BEGIN SELECT RAISE(ABORT, 'log_leaves is append-only'); END;
-- +goose StatementEnd

CREATE TABLE log_subtrees (
    level  INTEGER NOT NULL CHECK (level >= 1),
    idx    INTEGER NOT NULL CHECK (idx >= 0),
    hash   BLOB NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (level, idx)
) WITHOUT ROWID;
-- +goose StatementBegin
CREATE TRIGGER log_subtrees_no_update BEFORE UPDATE ON log_subtrees
BEGIN SELECT RAISE(ABORT, 'log_subtrees is append-only'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER log_subtrees_no_delete BEFORE DELETE ON log_subtrees
BEGIN SELECT RAISE(ABORT, 'log_subtrees is append-only'); END;
-- +goose StatementEnd

CREATE TABLE log_checkpoints (
    size        INTEGER PRIMARY KEY CHECK (size >= 0),
    created_at  INTEGER NOT NULL,
    root        BLOB NOT NULL CHECK (length(root) = 32),
    note        TEXT NOT NULL
);
CREATE TABLE checkpoint_cosignatures (
    size        INTEGER NOT NULL REFERENCES log_checkpoints(size),
    key_name    TEXT NOT NULL,
    signature   TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (size, key_name)
) WITHOUT ROWID;

ALTER TABLE ledger_records ADD COLUMN log_index INTEGER;
-- The records the backfill has still to append, in chain order.
CREATE INDEX ledger_records_unlogged ON ledger_records (agent_id, seq) WHERE log_index IS NULL;

-- A record's log index is set once: when it is stored, or by the backfill
-- from NULL (changing nothing else); a seal keeps it.
DROP TRIGGER ledger_records_no_update;
-- +goose StatementBegin
CREATE TRIGGER ledger_records_no_update BEFORE UPDATE ON ledger_records
WHEN NOT (NEW.seq = OLD.seq AND NEW.event_type = OLD.event_type AND NEW.event_id = OLD.event_id AND NEW.status = OLD.status
          AND NEW.hash = OLD.hash AND NEW.correction_id IS OLD.correction_id AND NEW.received_at IS OLD.received_at
          AND ((NEW.log_index IS OLD.log_index AND NEW.sealed_by IN (SELECT id FROM erasures))
               OR (OLD.log_index IS NULL AND NEW.log_index IS NOT NULL AND NEW.agent_id = OLD.agent_id AND NEW.sealed_by IS OLD.sealed_by)))
BEGIN SELECT RAISE(ABORT, 'ledger_records is append-only'); END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER ledger_records_no_update;
-- +goose StatementBegin
CREATE TRIGGER ledger_records_no_update BEFORE UPDATE ON ledger_records
WHEN NOT (NEW.seq = OLD.seq AND NEW.event_type = OLD.event_type AND NEW.event_id = OLD.event_id AND NEW.status = OLD.status
          AND NEW.hash = OLD.hash AND NEW.correction_id IS OLD.correction_id AND NEW.received_at IS OLD.received_at
          AND NEW.sealed_by IN (SELECT id FROM erasures))
BEGIN SELECT RAISE(ABORT, 'ledger_records is append-only'); END;
-- +goose StatementEnd
DROP INDEX ledger_records_unlogged;
ALTER TABLE ledger_records DROP COLUMN log_index;
DROP TABLE checkpoint_cosignatures;
DROP TABLE log_checkpoints;
DROP TABLE log_subtrees;
DROP TABLE log_leaves;
