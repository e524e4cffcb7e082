-- The server's clock when each report arrived, recorded in its chain
-- record (ledger.Record.ReceivedAt), so that a report back-dated far behind
-- its arrival is visible (§8.3, §15.2). NULL for records written before:
-- their hashed content has no received_at.

-- +goose Up
ALTER TABLE ledger_records ADD COLUMN received_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE ledger_records DROP COLUMN received_at;
