-- Agents' rights (issue 16, spec §11.1): a token may be scoped to one agent
-- (api_tokens.agent_id; NULL for an operator's), and consent records what
-- the agent agreed to, when, by whom, and which disclosure text version,
-- beside its visibility choice.

-- +goose Up
ALTER TABLE api_tokens ADD COLUMN agent_id TEXT;
ALTER TABLE consent ADD COLUMN disclosure_version TEXT;
ALTER TABLE consent ADD COLUMN consent_given_at TIMESTAMPTZ;
ALTER TABLE consent ADD COLUMN consent_by TEXT;

-- +goose Down
ALTER TABLE consent DROP COLUMN consent_by;
ALTER TABLE consent DROP COLUMN consent_given_at;
ALTER TABLE consent DROP COLUMN disclosure_version;
ALTER TABLE api_tokens DROP COLUMN agent_id;
