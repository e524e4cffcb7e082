-- Erasure (GDPR Art. 17, spec §11.4, issue 16): an agent's id is replaced
-- by a pseudonym in every table. The records whose content named it are
-- sealed (sealed_by): the walk checks them against the digests their
-- erasure committed to (ledger/erase.go). The append-only trigger lets an
-- update through only when it changes nothing but the agent and the seal,
-- and the seal names a stored erasure. Checkpoint leaves keep their place
-- (position) and, for an erased agent, the leaf hash the checkpoint signed
-- (erased_hash). Passports record their revocation.

-- +goose Up
CREATE TABLE erasures (
    id          TEXT PRIMARY KEY,
    pseudonym   TEXT NOT NULL UNIQUE,
    identity    TEXT NOT NULL,
    actor       TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    digests     BLOB NOT NULL CHECK (length(digests) % 32 = 0)
) WITHOUT ROWID;

ALTER TABLE ledger_records ADD COLUMN sealed_by TEXT;
DROP TRIGGER ledger_records_no_update;
-- +goose StatementBegin
CREATE TRIGGER ledger_records_no_update BEFORE UPDATE ON ledger_records
WHEN NOT (NEW.seq = OLD.seq AND NEW.event_type = OLD.event_type AND NEW.event_id = OLD.event_id AND NEW.status = OLD.status
          AND NEW.hash = OLD.hash AND NEW.correction_id IS OLD.correction_id AND NEW.received_at IS OLD.received_at
          AND NEW.sealed_by IN (SELECT id FROM erasures))
BEGIN SELECT RAISE(ABORT, 'ledger_records is append-only'); END;
-- +goose StatementEnd

ALTER TABLE checkpoint_leaves ADD COLUMN position INTEGER;
UPDATE checkpoint_leaves SET position = r.pos
    FROM (SELECT number, agent_id, row_number() OVER (PARTITION BY number ORDER BY agent_id) - 1 AS pos FROM checkpoint_leaves) r
    WHERE r.number = checkpoint_leaves.number AND r.agent_id = checkpoint_leaves.agent_id;
ALTER TABLE checkpoint_leaves ADD COLUMN erased_hash BLOB CHECK (erased_hash IS NULL OR length(erased_hash) = 32);

ALTER TABLE passports ADD COLUMN revoked_at INTEGER;

-- +goose Down
ALTER TABLE passports DROP COLUMN revoked_at;
ALTER TABLE checkpoint_leaves DROP COLUMN erased_hash;
ALTER TABLE checkpoint_leaves DROP COLUMN position;
DROP TRIGGER ledger_records_no_update;
-- +goose StatementBegin
CREATE TRIGGER ledger_records_no_update BEFORE UPDATE ON ledger_records
BEGIN SELECT RAISE(ABORT, 'ledger_records is append-only'); END;
-- +goose StatementEnd
ALTER TABLE ledger_records DROP COLUMN sealed_by;
DROP TABLE erasures;
