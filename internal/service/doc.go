// Package service holds SwarmScore's use cases: ingesting reported events,
// scores through the cache, signed certificates (Execution Passports, kept
// in memory per process), verification, escrow holds, ranking, the ledger's
// checks, operator tokens, corrections and appeals (§11.3: corrections.go,
// appeals.go), signed checkpoints (§8.3: checkpoints.go) and the signing
// keys (Keyring: sealed in the database or static, rotated, re-issuing what
// older keys signed, the public keys published, checkpoints signed). UseCases
// is the one entry point; the CLI (internal/cli) and the HTTP API
// (internal/httpapi) both call it, and
// differ only in how they read input and render results, which this
// package never does beyond parsing events and giving verification checks
// their one JSON form (Checks.MarshalJSON), so both edges report the same
// checks however many there are.
//
// Storage is reached through the ports in ports.go (Database, LedgerStore,
// ScoreStore, ConsentStore, TokenStore, gathered in Backend, and the
// optional CacheWatcher), which the sqlite and postgres back ends implement;
// cmd/swarmscore opens one and the CLI hands it to UseCases. The domain
// vocabulary is internal/ledger's, internal/auth's and internal/keyring's.
//
// Errors are classified by internal/errkind and say in their message what
// was wrong, naming the field, so the transports can show them as they are.
package service
