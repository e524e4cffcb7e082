-- Erasure (GDPR Art. 17, spec §11.4, issue 16): an agent's id is replaced
-- by a pseudonym in every table. The records whose content named it are
-- sealed (sealed_by): the walk checks them against the digests their
-- erasure committed to (ledger/erase.go). The append-only trigger lets an
-- update through only when it changes nothing but the agent and the seal,
-- and the seal names a stored erasure; deletes stay refused. Checkpoint
-- leaves keep their place (position) and, for an erased agent, the leaf
-- hash the checkpoint signed (erased_hash). Passports record their
-- revocation.

-- +goose Up
CREATE TABLE erasures (
    id          TEXT PRIMARY KEY,
    pseudonym   TEXT NOT NULL UNIQUE,
    identity    TEXT NOT NULL,
    actor       TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    digests     BYTEA NOT NULL CHECK (length(digests) % 32 = 0)
);

ALTER TABLE ledger_records ADD COLUMN sealed_by TEXT;
ALTER TABLE ledger_records DROP CONSTRAINT ledger_records_event_type_check;
ALTER TABLE ledger_records ADD CONSTRAINT ledger_records_event_type_check
    CHECK (event_type IN ('conduit_session', 'ap2_transaction', 'task_offer', 'erasure'));

-- +goose StatementBegin
CREATE FUNCTION ledger_records_seal_only() RETURNS trigger LANGUAGE plpgsql AS $$
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
DROP TRIGGER ledger_records_no_update ON ledger_records;
CREATE TRIGGER ledger_records_no_update BEFORE UPDATE ON ledger_records
    FOR EACH ROW EXECUTE FUNCTION ledger_records_seal_only();
CREATE TRIGGER ledger_records_no_delete BEFORE DELETE ON ledger_records
    FOR EACH ROW EXECUTE FUNCTION ledger_records_append_only();

ALTER TABLE checkpoint_leaves ADD COLUMN position BIGINT;
UPDATE checkpoint_leaves l SET position = r.pos
    FROM (SELECT number, agent_id, row_number() OVER (PARTITION BY number ORDER BY agent_id COLLATE "C") - 1 AS pos FROM checkpoint_leaves) r
    WHERE r.number = l.number AND r.agent_id = l.agent_id;
ALTER TABLE checkpoint_leaves ADD COLUMN erased_hash BYTEA CHECK (erased_hash IS NULL OR length(erased_hash) = 32);

ALTER TABLE passports ADD COLUMN revoked_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE passports DROP COLUMN revoked_at;
ALTER TABLE checkpoint_leaves DROP COLUMN erased_hash;
ALTER TABLE checkpoint_leaves DROP COLUMN position;
DROP TRIGGER ledger_records_no_delete ON ledger_records;
DROP TRIGGER ledger_records_no_update ON ledger_records;
CREATE TRIGGER ledger_records_no_update BEFORE UPDATE OR DELETE ON ledger_records
    FOR EACH ROW EXECUTE FUNCTION ledger_records_append_only();
DROP FUNCTION ledger_records_seal_only();
ALTER TABLE ledger_records DROP CONSTRAINT ledger_records_event_type_check;
ALTER TABLE ledger_records ADD CONSTRAINT ledger_records_event_type_check
    CHECK (event_type IN ('conduit_session', 'ap2_transaction', 'task_offer'));
ALTER TABLE ledger_records DROP COLUMN sealed_by;
DROP TABLE erasures;
