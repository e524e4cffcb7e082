-- The history of issued passports (§7.2, §11.3, §11.1): every passport the
-- server signed, by its agent_passport_id, so that an appeal names the
-- passport it disputes, an agent can see what was issued about it, and a
-- rotation finds the passports a retired key signed. The cache entry
-- remembers which key signed its passport.

-- +goose Up
CREATE TABLE passports (
    id           TEXT PRIMARY KEY,
    agent_id     TEXT NOT NULL REFERENCES agents(id),
    computed_at  TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL,
    key_id       TEXT NOT NULL DEFAULT '',
    signature    TEXT NOT NULL,
    document     TEXT NOT NULL
);
CREATE INDEX idx_passports_agent ON passports (agent_id, computed_at);
ALTER TABLE swarmscore_cache ADD COLUMN passport_kid TEXT;

-- +goose Down
ALTER TABLE swarmscore_cache DROP COLUMN passport_kid;
DROP TABLE passports;
