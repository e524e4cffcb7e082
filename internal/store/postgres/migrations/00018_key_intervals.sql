-- The interval each key signed in (issue 23, the key history): from when it
-- became active until another key replaced it, so that what a retired key
-- signed while active can still be verified by its date, and what a key
-- signed outside it refused. state_changed_at cannot tell it: a retirement
-- or revocation overwrites the demotion's time. Every key so far was made
-- active, and a new active key demotes the one before it in the same
-- transaction, so a key's interval ends when the next key was created (its
-- own demotion time when it is the last, which cannot happen but is safe).

-- +goose Up
ALTER TABLE signing_keys ADD COLUMN active_from TIMESTAMPTZ;
ALTER TABLE signing_keys ADD COLUMN active_until TIMESTAMPTZ;
UPDATE signing_keys SET active_from = created_at;
UPDATE signing_keys SET active_until = COALESCE(
    (SELECT MIN(n.created_at) FROM signing_keys n
      WHERE n.created_at > signing_keys.created_at
         OR (n.created_at = signing_keys.created_at AND n.id > signing_keys.id)),
    state_changed_at)
  WHERE state <> 'active';

-- +goose Down
ALTER TABLE signing_keys DROP COLUMN active_until;
ALTER TABLE signing_keys DROP COLUMN active_from;
