-- The console's roles, action log and sessions (issue 27).
--
-- api_tokens.role is what an operator's token may do (internal/auth): the
-- token bootstrapped from SWARMSCORE_ADMIN_TOKEN (id "env-…") is admin,
-- every other existing token operator, the default. An agent's token
-- ignores it.
--
-- operator_actions is the action log: append-only. No row is ever deleted,
-- and only an erasure may change a row, renaming the agent it names
-- (agent_id, and detail's free text) as it does in every other table.
--
-- console_sessions are the console's signed-in sessions, by the SHA-256 of
-- their cookie: a session ends when it is revoked, idle or too old, or
-- when its token is revoked.

-- +goose Up
ALTER TABLE api_tokens ADD COLUMN role TEXT NOT NULL DEFAULT 'operator' CHECK (role IN ('viewer', 'operator', 'admin'));
UPDATE api_tokens SET role = 'admin' WHERE id LIKE 'env-%';

CREATE TABLE operator_actions (
    seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           TIMESTAMPTZ NOT NULL,
    operator_id  TEXT NOT NULL,
    token_id     TEXT,
    role         TEXT,
    via          TEXT NOT NULL CHECK (via IN ('api', 'console', 'cli')),
    client       TEXT,
    action       TEXT NOT NULL,
    agent_id     TEXT,
    target       TEXT,
    detail       TEXT NOT NULL DEFAULT '',
    outcome      TEXT NOT NULL CHECK (outcome IN ('ok', 'denied', 'failed')),
    code         TEXT
);
CREATE INDEX operator_actions_agent ON operator_actions (agent_id) WHERE agent_id IS NOT NULL;
-- +goose StatementBegin
CREATE FUNCTION swarmscore_actions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'TRUNCATE') THEN
        RAISE EXCEPTION 'operator_actions is append-only';
    END IF;
    IF (NEW.seq, NEW.at, NEW.operator_id, NEW.token_id, NEW.role, NEW.via, NEW.client, NEW.action, NEW.target, NEW.outcome, NEW.code)
       IS DISTINCT FROM
       (OLD.seq, OLD.at, OLD.operator_id, OLD.token_id, OLD.role, OLD.via, OLD.client, OLD.action, OLD.target, OLD.outcome, OLD.code) THEN
        RAISE EXCEPTION 'operator_actions is append-only (an erasure may rename agent_id and detail only)';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER operator_actions_append_only BEFORE UPDATE OR DELETE ON operator_actions
    FOR EACH ROW EXECUTE FUNCTION swarmscore_actions_append_only();
CREATE TRIGGER operator_actions_no_truncate BEFORE TRUNCATE ON operator_actions
    FOR EACH STATEMENT EXECUTE FUNCTION swarmscore_actions_append_only();

CREATE TABLE console_sessions (
    id_sha256   BYTEA PRIMARY KEY CHECK (length(id_sha256) = 32),
    token_id    TEXT NOT NULL REFERENCES api_tokens(id),
    created_at  TIMESTAMPTZ NOT NULL,
    seen_at     TIMESTAMPTZ NOT NULL,
    client      TEXT NOT NULL,
    browser     TEXT NOT NULL,
    revoked_at  TIMESTAMPTZ,
    revoked_by  TEXT
);
CREATE INDEX console_sessions_seen ON console_sessions (seen_at);

-- +goose Down
DROP TABLE console_sessions;
DROP TABLE operator_actions;
DROP FUNCTION swarmscore_actions_append_only();
ALTER TABLE api_tokens DROP COLUMN role;
