-- Chain records keep only what the event rows cannot give back, as on
-- SQLite (its migration 00003): one layout on both back ends, walked by one
-- algorithm (ledger.VerifyChains). A record's canonical content
-- (ledger.Record.Canonical, which its hash covers) is rebuilt for
-- verification by ledger.RebuildRecord from:
--   - the record: agent_id, seq, event_type, event_id and status (a status
--     may be an intermediate one the event row no longer holds);
--   - the event row its (event_type, event_id) names: buyer_id,
--     escrow_amount_cents, started_at and operator_id, which never change
--     after the first report, and completed_at / settled_at, which a record
--     carries exactly when its status is final, and a final status never
--     changes, so it is the row's.
-- The hash definition is unchanged (hash = SHA-256(previous hash || content)),
-- so existing chains verify as before and both back ends still produce
-- identical hashes. Editing the event row now breaks the hash of every
-- record that was built from the edited field.
--
-- Content that is not valid JSON with a string status (only tampering
-- produces it) becomes status '', which can match no hash, so such a record
-- still reports as broken.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION swarmscore_content_status(content BYTEA) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    j JSONB;
BEGIN
    j := convert_from(content, 'UTF8')::jsonb;
    IF jsonb_typeof(j -> 'status') = 'string' THEN
        RETURN j ->> 'status';
    END IF;
    RETURN '';
EXCEPTION WHEN OTHERS THEN
    RETURN '';
END
$$;
-- +goose StatementEnd

CREATE TABLE ledger_records_slim (
    agent_id    TEXT NOT NULL,
    seq         BIGINT NOT NULL CHECK (seq >= 1),
    event_type  VARCHAR(16) NOT NULL CHECK (event_type IN ('conduit_session', 'ap2_transaction')),
    event_id    TEXT NOT NULL,
    status      TEXT NOT NULL,  -- no CHECK: verification hashes whatever is here
    hash        BYTEA NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (agent_id, seq)
);

INSERT INTO ledger_records_slim (agent_id, seq, event_type, event_id, status, hash)
    SELECT agent_id, seq, event_type, event_id, swarmscore_content_status(content), hash
    FROM ledger_records ORDER BY agent_id, seq;

DROP TABLE ledger_records;
DROP FUNCTION swarmscore_content_status(BYTEA);
ALTER TABLE ledger_records_slim RENAME TO ledger_records;
ALTER TABLE ledger_records RENAME CONSTRAINT ledger_records_slim_pkey TO ledger_records_pkey;

CREATE TRIGGER ledger_records_no_update BEFORE UPDATE OR DELETE ON ledger_records
    FOR EACH ROW EXECUTE FUNCTION ledger_records_append_only();
CREATE TRIGGER ledger_records_no_truncate BEFORE TRUNCATE ON ledger_records
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_records_append_only();

-- +goose Down
-- Rebuild each record's canonical content from the same sources
-- verification uses, byte for byte as ledger.Record.Canonical writes it:
-- keys in byte order, no spaces, times as RFC 3339 UTC with the fraction's
-- trailing zeros dropped. A record whose event row is missing gets empty
-- content, which can match no hash, so it still reports as broken.
-- +goose StatementBegin
CREATE FUNCTION swarmscore_canonical_time(t TIMESTAMPTZ) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
        || CASE WHEN to_char(t AT TIME ZONE 'UTC', 'US') = '000000' THEN ''
                ELSE '.' || rtrim(to_char(t AT TIME ZONE 'UTC', 'US'), '0') END
        || 'Z'
$$;
-- +goose StatementEnd

CREATE TABLE ledger_records_full (
    agent_id    TEXT NOT NULL,
    seq         BIGINT NOT NULL CHECK (seq >= 1),
    event_type  VARCHAR(16) NOT NULL CHECK (event_type IN ('conduit_session', 'ap2_transaction')),
    event_id    TEXT NOT NULL,
    content     BYTEA NOT NULL,
    hash        BYTEA NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (agent_id, seq)
);

INSERT INTO ledger_records_full (agent_id, seq, event_type, event_id, content, hash)
    SELECT r.agent_id, r.seq, r.event_type, r.event_id,
           convert_to(CASE WHEN e.id IS NULL THEN '' ELSE
               '{"agent_id":' || to_json(e.agent)::text
               || ',"buyer_id":' || to_json(e.buyer)::text
               || ',"ended_at":' || CASE WHEN r.status IN ('VERIFIED', 'FAILED', 'ERROR', 'TIMEOUT', 'SETTLED', 'DISPUTED', 'REFUNDED', 'CANCELLED')
                                          AND e.ended IS NOT NULL
                                        THEN '"' || swarmscore_canonical_time(e.ended) || '"' ELSE '""' END
               || ',"escrow_amount_cents":' || e.escrow::text
               || ',"id":' || to_json(r.event_id)::text
               || ',"operator":' || to_json(e.operator)::text
               || ',"seq":' || r.seq::text
               || ',"started_at":"' || swarmscore_canonical_time(e.started) || '"'
               || ',"status":' || to_json(r.status)::text
               || ',"type":' || to_json(r.event_type::text)::text
               || '}' END, 'UTF8'),
           r.hash
    FROM ledger_records r
    LEFT JOIN (SELECT 'conduit_session' AS typ, id, agent_id AS agent, coalesce(buyer_id, '') AS buyer, operator_id AS operator,
                      0::bigint AS escrow, started_at AS started, completed_at AS ended FROM conduit_sessions
               UNION ALL
               SELECT 'ap2_transaction', id, provider_id, buyer_id, operator_id, escrow_amount_cents, started_at, settled_at
                 FROM ap2_transactions) e ON e.typ = r.event_type AND e.id = r.event_id
    ORDER BY r.agent_id, r.seq;

DROP TABLE ledger_records;
DROP FUNCTION swarmscore_canonical_time(TIMESTAMPTZ);
ALTER TABLE ledger_records_full RENAME TO ledger_records;
ALTER TABLE ledger_records RENAME CONSTRAINT ledger_records_full_pkey TO ledger_records_pkey;

CREATE TRIGGER ledger_records_no_update BEFORE UPDATE OR DELETE ON ledger_records
    FOR EACH ROW EXECUTE FUNCTION ledger_records_append_only();
CREATE TRIGGER ledger_records_no_truncate BEFORE TRUNCATE ON ledger_records
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_records_append_only();
