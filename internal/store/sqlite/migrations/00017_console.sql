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
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    at           INTEGER NOT NULL,
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
CREATE TRIGGER operator_actions_no_delete BEFORE DELETE ON operator_actions
BEGIN
    SELECT RAISE(ABORT, 'operator_actions is append-only');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER operator_actions_no_update
BEFORE UPDATE OF seq, at, operator_id, token_id, role, via, client, action, target, outcome, code ON operator_actions
BEGIN
    SELECT RAISE(ABORT, 'operator_actions is append-only (an erasure may rename agent_id and detail only)');
END;
-- +goose StatementEnd

CREATE TABLE console_sessions (
    id_sha256   BLOB PRIMARY KEY CHECK (length(id_sha256) = 32),
    token_id    TEXT NOT NULL REFERENCES api_tokens(id),
    created_at  INTEGER NOT NULL,
    seen_at     INTEGER NOT NULL,
    client      TEXT NOT NULL,
    browser     TEXT NOT NULL,
    revoked_at  INTEGER,
    revoked_by  TEXT
) WITHOUT ROWID;
CREATE INDEX console_sessions_seen ON console_sessions (seen_at);

-- +goose Down
DROP TABLE console_sessions;
DROP TABLE operator_actions;
ALTER TABLE api_tokens DROP COLUMN role;
