-- Webhooks (issue 24): the endpoints operators register, the outbox of
-- messages written in the transaction of each change, the attempts to
-- deliver them, and the last score and tier announced for each agent.
--
-- webhooks.secret is the signing secret (whsec_…): the program reads it
-- only to sign, and prints it once, when the endpoint is registered.
-- webhook_messages is the outbox: one row per event and subscribed
-- endpoint, its id the webhook-id of every attempt. webhook_scores holds
-- what score.changed and tier.changed compare with (ERRATA E60); it starts
-- as the score cache stands, so that upgrading announces nothing that has
-- not changed.

-- +goose Up
CREATE TABLE webhooks (
    id          TEXT PRIMARY KEY,
    url         TEXT NOT NULL,
    events      TEXT NOT NULL,
    secret      TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    created_by  TEXT NOT NULL,
    deleted_at  TIMESTAMPTZ
);

CREATE TABLE webhook_messages (
    id               TEXT PRIMARY KEY,
    endpoint_id      TEXT NOT NULL REFERENCES webhooks(id),
    event_type       TEXT NOT NULL,
    agent_id         TEXT,
    payload          TEXT NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'cancelled')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TIMESTAMPTZ NOT NULL,
    delivered_at     TIMESTAMPTZ,
    last_status      INTEGER,
    last_error       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX webhook_messages_due ON webhook_messages (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_messages_endpoint ON webhook_messages (endpoint_id, created_at);

CREATE TABLE webhook_attempts (
    message_id   TEXT NOT NULL REFERENCES webhook_messages(id),
    n            INTEGER NOT NULL,
    at           TIMESTAMPTZ NOT NULL,
    status       INTEGER NOT NULL,
    error        TEXT NOT NULL DEFAULT '',
    duration_us  BIGINT NOT NULL,
    PRIMARY KEY (message_id, n)
);

CREATE TABLE webhook_scores (
    agent_id  TEXT PRIMARY KEY,
    score     INTEGER NOT NULL,
    tier      TEXT NOT NULL
);
INSERT INTO webhook_scores (agent_id, score, tier) SELECT agent_id, score, tier FROM swarmscore_cache;

-- +goose Down
DROP TABLE webhook_scores;
DROP TABLE webhook_attempts;
DROP TABLE webhook_messages;
DROP TABLE webhooks;
