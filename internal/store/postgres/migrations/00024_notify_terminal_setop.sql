-- The cache notification trigger of agents (00003) found the agents whose
-- terminal_seq changed by joining its two transition tables on id. A
-- PL/pgSQL query without parameters keeps the plan made at its first run
-- for the life of the connection, and a transition table's size is known
-- only at that run: a first update of one agent (an HTTP request of one
-- event) planned a nested loop, which each later bulk batch of 1000 agents
-- then ran as a million comparisons (issue 25; docs/BENCHMARKS.md).
-- Ingest also prices hash and merge joins out (postgres/ingest.go,
-- keyPlans), which made every first plan a nested loop. EXCEPT has no
-- nested-loop plan: it hashes or sorts, whatever the sizes. The two forms
-- select the same agents: a row of new_agents whose (id, terminal_seq) is
-- not in old_agents, NULLs comparing equal as with IS DISTINCT FROM (ids
-- are unique in each table).

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION swarmscore_notify_terminal() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids text[];
    payload text;
BEGIN
    SELECT array_agg(id) INTO ids FROM (
        SELECT id, terminal_seq FROM new_agents
        EXCEPT
        SELECT id, terminal_seq FROM old_agents) c;
    IF ids IS NULL THEN
        RETURN NULL;
    END IF;
    IF cardinality(ids) > 1000 THEN
        PERFORM pg_notify('swarmscore_cache', '*');
        RETURN NULL;
    END IF;
    FOR payload IN
        SELECT string_agg(id, ' ' ORDER BY id) FROM (
            SELECT id, (sum(length(id) + 1) OVER (ORDER BY id) - 1) / 7000 AS chunk
            FROM unnest(ids) AS u(id)) c
        GROUP BY chunk
    LOOP
        PERFORM pg_notify('swarmscore_cache', payload);
    END LOOP;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION swarmscore_notify_terminal() RETURNS trigger LANGUAGE plpgsql AS $$
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
