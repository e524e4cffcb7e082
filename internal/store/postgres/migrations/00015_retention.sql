-- Retention (spec §11.4, issue 16; internal/ledger/prune.go): a pruned
-- chain starts after its anchor (the stored hash of its last pruned
-- record); each prune appends a summary record whose content is a row of
-- ledger_summaries and its counts in ledger_summary_rows (no event or
-- buyer ids). ledger_records stays append-only except that records at or
-- before their chain's anchor may be deleted.

-- +goose Up
CREATE TABLE chain_anchors (
    agent_id  TEXT PRIMARY KEY REFERENCES agents(id),
    seq       BIGINT NOT NULL CHECK (seq >= 1),
    hash      BYTEA NOT NULL CHECK (length(hash) = 32)
);
CREATE TABLE ledger_summaries (
    agent_id        TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    pruned_through  BIGINT NOT NULL,
    anchor          BYTEA NOT NULL CHECK (length(anchor) = 32),
    PRIMARY KEY (agent_id, seq)
);
CREATE TABLE ledger_summary_rows (
    agent_id      TEXT NOT NULL,
    seq           BIGINT NOT NULL,
    month         TEXT NOT NULL,
    event_type    TEXT NOT NULL,
    status        TEXT NOT NULL,
    voided        BOOLEAN NOT NULL,
    count         BIGINT NOT NULL,
    escrow_cents  BIGINT NOT NULL,
    PRIMARY KEY (agent_id, seq, month, event_type, status, voided)
);
ALTER TABLE ledger_records DROP CONSTRAINT ledger_records_event_type_check;
ALTER TABLE ledger_records ADD CONSTRAINT ledger_records_event_type_check
    CHECK (event_type IN ('conduit_session', 'ap2_transaction', 'task_offer', 'erasure', 'summary'));

-- +goose StatementBegin
CREATE FUNCTION ledger_records_prune_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM chain_anchors a WHERE a.agent_id = OLD.agent_id AND a.seq >= OLD.seq) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'ledger_records is append-only' USING ERRCODE = 'restrict_violation';
END
$$;
-- +goose StatementEnd
DROP TRIGGER ledger_records_no_delete ON ledger_records;
CREATE TRIGGER ledger_records_no_delete BEFORE DELETE ON ledger_records
    FOR EACH ROW EXECUTE FUNCTION ledger_records_prune_only();

-- +goose Down
DROP TRIGGER ledger_records_no_delete ON ledger_records;
CREATE TRIGGER ledger_records_no_delete BEFORE DELETE ON ledger_records
    FOR EACH ROW EXECUTE FUNCTION ledger_records_append_only();
DROP FUNCTION ledger_records_prune_only();
ALTER TABLE ledger_records DROP CONSTRAINT ledger_records_event_type_check;
ALTER TABLE ledger_records ADD CONSTRAINT ledger_records_event_type_check
    CHECK (event_type IN ('conduit_session', 'ap2_transaction', 'task_offer', 'erasure'));
DROP TABLE ledger_summary_rows;
DROP TABLE ledger_summaries;
DROP TABLE chain_anchors;
