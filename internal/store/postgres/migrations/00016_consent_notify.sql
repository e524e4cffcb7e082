-- A consent or visibility choice changes what the public is shown of an
-- agent (its certificate and score become 404 or come back), so it
-- notifies the cache channel like a passport change: other processes drop
-- what they keep in memory of the agent at once, not at their next reload.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION swarmscore_notify_consent() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('swarmscore_cache', OLD.agent_id);
    ELSE
        PERFORM pg_notify('swarmscore_cache', NEW.agent_id);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER consent_notify AFTER INSERT OR UPDATE OR DELETE ON consent
    FOR EACH ROW EXECUTE FUNCTION swarmscore_notify_consent();

-- +goose Down
DROP TRIGGER consent_notify ON consent;
DROP FUNCTION swarmscore_notify_consent();
