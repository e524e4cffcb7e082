-- W3C Verifiable Credentials (issue 26): each passport a credential is made
-- of gets an index in the Bitstring Status List, allocated on its first
-- credential and never reused, so that revoking the passport (its agent
-- erased) or its key shows in the list at that index.

-- +goose Up
CREATE TABLE credential_status (
    idx          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    passport_id  TEXT NOT NULL UNIQUE REFERENCES passports(id)
);

-- +goose Down
DROP TABLE credential_status;
