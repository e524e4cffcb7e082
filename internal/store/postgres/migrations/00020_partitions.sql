-- Partitions (issue 25): the event tables and the chain records are
-- partitioned by LIST on period, the partition a row was inserted into, so
-- that retention drops whole partitions instead of deleting rows
-- (postgres/partitions.go). period is the column's default, which names the
-- current partition; a rotation opens the next one and moves the default
-- to it, and ledger_partitions says when each was opened and closed. The
-- rows of this migration's time are partition 1.
--
-- A partitioned table's unique keys must hold its partition key, so event
-- ids are unique per partition by the primary key (id, period), and across
-- partitions because a rotation locks out every ingest while it moves the
-- default (no batch reads in one partition and writes in the next); chain
-- records keep (agent_id, seq) unique by their agent's row lock, as before.
-- Indexes, foreign keys and the append-only triggers move to the
-- partitioned tables, which give them to every partition.

-- +goose Up
CREATE TABLE ledger_partitions (
    period      INTEGER PRIMARY KEY CHECK (period >= 1),
    opened_at   TIMESTAMPTZ NOT NULL,
    closed_at   TIMESTAMPTZ,
    dropped_at  TIMESTAMPTZ,
    CHECK (dropped_at IS NULL OR closed_at IS NOT NULL)
);
-- At most one partition is open: the current one.
CREATE UNIQUE INDEX ledger_partitions_current ON ledger_partitions ((true)) WHERE closed_at IS NULL;
INSERT INTO ledger_partitions (period, opened_at) VALUES (1, now());

-- conduit_sessions
ALTER TABLE conduit_sessions DROP CONSTRAINT conduit_sessions_pkey;
ALTER TABLE conduit_sessions DROP CONSTRAINT conduit_sessions_agent_id_fkey;
ALTER TABLE conduit_sessions DROP CONSTRAINT conduit_sessions_operator_id_fkey;
DROP INDEX idx_conduit_sessions_agent_date;
ALTER TABLE conduit_sessions ADD COLUMN period INTEGER NOT NULL DEFAULT 1;
ALTER TABLE conduit_sessions RENAME TO conduit_sessions_p1;
CREATE TABLE conduit_sessions (LIKE conduit_sessions_p1 INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED) PARTITION BY LIST (period);
ALTER TABLE conduit_sessions ADD PRIMARY KEY (id, period);
ALTER TABLE conduit_sessions ADD FOREIGN KEY (agent_id) REFERENCES agents(id);
ALTER TABLE conduit_sessions ADD FOREIGN KEY (operator_id) REFERENCES operators(id);
CREATE INDEX idx_conduit_sessions_agent_date ON conduit_sessions (agent_id, completed_at, status)
    WHERE status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL;
ALTER TABLE conduit_sessions ATTACH PARTITION conduit_sessions_p1 FOR VALUES IN (1);

-- ap2_transactions
ALTER TABLE ap2_transactions DROP CONSTRAINT ap2_transactions_pkey;
ALTER TABLE ap2_transactions DROP CONSTRAINT ap2_transactions_provider_id_fkey;
ALTER TABLE ap2_transactions DROP CONSTRAINT ap2_transactions_operator_id_fkey;
DROP INDEX idx_ap2_transactions_provider_date;
ALTER TABLE ap2_transactions ADD COLUMN period INTEGER NOT NULL DEFAULT 1;
ALTER TABLE ap2_transactions RENAME TO ap2_transactions_p1;
CREATE TABLE ap2_transactions (LIKE ap2_transactions_p1 INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED) PARTITION BY LIST (period);
ALTER TABLE ap2_transactions ADD PRIMARY KEY (id, period);
ALTER TABLE ap2_transactions ADD FOREIGN KEY (provider_id) REFERENCES agents(id);
ALTER TABLE ap2_transactions ADD FOREIGN KEY (operator_id) REFERENCES operators(id);
CREATE INDEX idx_ap2_transactions_provider_date ON ap2_transactions (provider_id, settled_at, status)
    WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL;
ALTER TABLE ap2_transactions ATTACH PARTITION ap2_transactions_p1 FOR VALUES IN (1);

-- task_offers
ALTER TABLE task_offers DROP CONSTRAINT task_offers_pkey;
ALTER TABLE task_offers DROP CONSTRAINT task_offers_agent_id_fkey;
ALTER TABLE task_offers DROP CONSTRAINT task_offers_operator_id_fkey;
DROP INDEX idx_task_offers_agent;
ALTER TABLE task_offers ADD COLUMN period INTEGER NOT NULL DEFAULT 1;
ALTER TABLE task_offers RENAME TO task_offers_p1;
CREATE TABLE task_offers (LIKE task_offers_p1 INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED) PARTITION BY LIST (period);
ALTER TABLE task_offers ADD PRIMARY KEY (id, period);
ALTER TABLE task_offers ADD FOREIGN KEY (agent_id) REFERENCES agents(id);
ALTER TABLE task_offers ADD FOREIGN KEY (operator_id) REFERENCES operators(id);
CREATE INDEX idx_task_offers_agent ON task_offers (agent_id, started_at);
ALTER TABLE task_offers ATTACH PARTITION task_offers_p1 FOR VALUES IN (1);

-- ledger_records
ALTER TABLE ledger_records DROP CONSTRAINT ledger_records_pkey;
DROP TRIGGER ledger_records_no_update ON ledger_records;
DROP TRIGGER ledger_records_no_delete ON ledger_records;
DROP TRIGGER ledger_records_no_truncate ON ledger_records;
ALTER TABLE ledger_records ADD COLUMN period INTEGER NOT NULL DEFAULT 1;
ALTER TABLE ledger_records RENAME TO ledger_records_p1;
CREATE TABLE ledger_records (LIKE ledger_records_p1 INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED) PARTITION BY LIST (period);
ALTER TABLE ledger_records ADD PRIMARY KEY (agent_id, seq, period);
CREATE TRIGGER ledger_records_no_update BEFORE UPDATE ON ledger_records
    FOR EACH ROW EXECUTE FUNCTION ledger_records_seal_only();
CREATE TRIGGER ledger_records_no_delete BEFORE DELETE ON ledger_records
    FOR EACH ROW EXECUTE FUNCTION ledger_records_prune_only();
CREATE TRIGGER ledger_records_no_truncate BEFORE TRUNCATE ON ledger_records
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_records_append_only();
ALTER TABLE ledger_records ATTACH PARTITION ledger_records_p1 FOR VALUES IN (1);

-- +goose Down
-- conduit_sessions
CREATE TABLE conduit_sessions_flat (LIKE conduit_sessions INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED);
INSERT INTO conduit_sessions_flat SELECT * FROM conduit_sessions;
DROP TABLE conduit_sessions;
ALTER TABLE conduit_sessions_flat RENAME TO conduit_sessions;
ALTER TABLE conduit_sessions DROP COLUMN period;
ALTER TABLE conduit_sessions ADD PRIMARY KEY (id);
ALTER TABLE conduit_sessions ADD FOREIGN KEY (agent_id) REFERENCES agents(id);
ALTER TABLE conduit_sessions ADD FOREIGN KEY (operator_id) REFERENCES operators(id);
CREATE INDEX idx_conduit_sessions_agent_date ON conduit_sessions (agent_id, completed_at, status)
    WHERE status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL;

-- ap2_transactions
CREATE TABLE ap2_transactions_flat (LIKE ap2_transactions INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED);
INSERT INTO ap2_transactions_flat (id, provider_id, buyer_id, operator_id, status, escrow_amount_cents, escrow_modifier_bp, started_at, settled_at, seq, created_at, updated_at, reported_agent_id, reported_status, voided_at, period) SELECT id, provider_id, buyer_id, operator_id, status, escrow_amount_cents, escrow_modifier_bp, started_at, settled_at, seq, created_at, updated_at, reported_agent_id, reported_status, voided_at, period FROM ap2_transactions;
DROP TABLE ap2_transactions;
ALTER TABLE ap2_transactions_flat RENAME TO ap2_transactions;
ALTER TABLE ap2_transactions DROP COLUMN period;
ALTER TABLE ap2_transactions ADD PRIMARY KEY (id);
ALTER TABLE ap2_transactions ADD FOREIGN KEY (provider_id) REFERENCES agents(id);
ALTER TABLE ap2_transactions ADD FOREIGN KEY (operator_id) REFERENCES operators(id);
CREATE INDEX idx_ap2_transactions_provider_date ON ap2_transactions (provider_id, settled_at, status)
    WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL;

-- task_offers
CREATE TABLE task_offers_flat (LIKE task_offers INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED);
INSERT INTO task_offers_flat SELECT * FROM task_offers;
DROP TABLE task_offers;
ALTER TABLE task_offers_flat RENAME TO task_offers;
ALTER TABLE task_offers DROP COLUMN period;
ALTER TABLE task_offers ADD PRIMARY KEY (id);
ALTER TABLE task_offers ADD FOREIGN KEY (agent_id) REFERENCES agents(id);
ALTER TABLE task_offers ADD FOREIGN KEY (operator_id) REFERENCES operators(id);
CREATE INDEX idx_task_offers_agent ON task_offers (agent_id, started_at);

-- ledger_records
CREATE TABLE ledger_records_flat (LIKE ledger_records INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED);
INSERT INTO ledger_records_flat SELECT * FROM ledger_records;
DROP TABLE ledger_records;
ALTER TABLE ledger_records_flat RENAME TO ledger_records;
ALTER TABLE ledger_records DROP COLUMN period;
ALTER TABLE ledger_records ADD PRIMARY KEY (agent_id, seq);
CREATE TRIGGER ledger_records_no_update BEFORE UPDATE ON ledger_records
    FOR EACH ROW EXECUTE FUNCTION ledger_records_seal_only();
CREATE TRIGGER ledger_records_no_delete BEFORE DELETE ON ledger_records
    FOR EACH ROW EXECUTE FUNCTION ledger_records_prune_only();
CREATE TRIGGER ledger_records_no_truncate BEFORE TRUNCATE ON ledger_records
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_records_append_only();

DROP TABLE ledger_partitions;
