-- Cache notifications: every commit that may change an agent's cache stamp
-- (store.Store.CacheStamp: the agent's terminal_seq, and the passport of
-- its cache entry) notifies channel swarmscore_cache, so that a serving
-- process remembering passports (postgres.Store.CacheWatch) learns of it
-- without reading the stamp on every request. NOTIFY is transactional: the
-- notification is delivered at commit, never on rollback, and identical
-- payloads in one transaction are delivered once.
--
-- Payload: the agent ids concerned, separated by spaces (ids are at most
-- 128 characters from [A-Za-z0-9._:-]), in chunks of at most 7000 bytes
-- (NOTIFY's limit is 8000), or "*" for every agent when a statement changed
-- more than 1000 agents or truncated the cache.
--
-- Only what can invalidate a remembered passport notifies: a passport is
-- remembered only while its entry is current (ledger_seq = terminal_seq)
-- and carries it, so an entry without a passport, or a change that keeps
-- the passport and the agent's terminal_seq (Ingest's own defensive
-- invalidation comes with a terminal_seq change), needs none. Triggers are
-- off under session_replication_role = replica (restores, logical
-- replication); serving processes revalidate every remembered passport at
-- least once a second, which bounds what such writes can leave stale.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION swarmscore_notify_terminal() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed bigint;
    payload text;
BEGIN
    SELECT count(*) INTO changed
        FROM new_agents n JOIN old_agents o ON o.id = n.id
        WHERE n.terminal_seq IS DISTINCT FROM o.terminal_seq;
    IF changed = 0 THEN
        RETURN NULL;
    END IF;
    IF changed > 1000 THEN
        PERFORM pg_notify('swarmscore_cache', '*');
        RETURN NULL;
    END IF;
    FOR payload IN
        SELECT string_agg(id, ' ' ORDER BY id) FROM (
            SELECT n.id, (sum(length(n.id) + 1) OVER (ORDER BY n.id) - 1) / 7000 AS chunk
            FROM new_agents n JOIN old_agents o ON o.id = n.id
            WHERE n.terminal_seq IS DISTINCT FROM o.terminal_seq) c
        GROUP BY chunk
    LOOP
        PERFORM pg_notify('swarmscore_cache', payload);
    END LOOP;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER agents_notify_terminal AFTER UPDATE ON agents
    REFERENCING OLD TABLE AS old_agents NEW TABLE AS new_agents
    FOR EACH STATEMENT EXECUTE FUNCTION swarmscore_notify_terminal();

-- +goose StatementBegin
CREATE FUNCTION swarmscore_notify_passport() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('swarmscore_cache', OLD.agent_id);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER swarmscore_cache_notify_update AFTER UPDATE ON swarmscore_cache
    FOR EACH ROW
    WHEN (OLD.passport_signature IS NOT NULL AND OLD.passport_signature IS DISTINCT FROM NEW.passport_signature)
    EXECUTE FUNCTION swarmscore_notify_passport();

CREATE TRIGGER swarmscore_cache_notify_delete AFTER DELETE ON swarmscore_cache
    FOR EACH ROW WHEN (OLD.passport_signature IS NOT NULL)
    EXECUTE FUNCTION swarmscore_notify_passport();

-- +goose StatementBegin
CREATE FUNCTION swarmscore_notify_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('swarmscore_cache', '*');
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER swarmscore_cache_notify_truncate AFTER TRUNCATE ON swarmscore_cache
    FOR EACH STATEMENT EXECUTE FUNCTION swarmscore_notify_all();

-- +goose Down
DROP TRIGGER swarmscore_cache_notify_truncate ON swarmscore_cache;
DROP TRIGGER swarmscore_cache_notify_delete ON swarmscore_cache;
DROP TRIGGER swarmscore_cache_notify_update ON swarmscore_cache;
DROP TRIGGER agents_notify_terminal ON agents;
DROP FUNCTION swarmscore_notify_all();
DROP FUNCTION swarmscore_notify_passport();
DROP FUNCTION swarmscore_notify_terminal();
