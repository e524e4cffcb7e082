// Package service holds SwarmScore's use cases, in groups by feature, each
// a type holding only the storage ports it uses (ports_groups.go):
//
//   - Ingestion: reported events recorded (ingest.go, activity.go);
//   - Certificates: scores through the cache, signed certificates
//     (Execution Passports, remembered per process: certmemo.go) and what
//     a caller may see of them (rights.go), escrow holds, the ranking, the
//     agent pages' profile;
//   - Verifier: presented passports checked offline and against the ledger
//     (verify.go, verify_policy.go);
//   - Keys: the signing keys (Keyring: sealed in the database or static),
//     rotated, re-issuing what older keys signed, the public keys published;
//   - Tokens: operators' and agents' API tokens;
//   - Corrections: corrections and appeals (§11.3);
//   - Rights: consent, visibility, an agent's records, erasure (§8.4, §11);
//   - Signals: the gaming signals and the chain walk behind chain_break;
//   - Audit: audit bundles, signed checkpoints (§8.3) and retention;
//   - Credentials: what a passport's W3C Verifiable Credential is made of
//     (its certificate, key and status index), the status lists' revoked
//     entries and the keys of the DID document (credentials.go);
//   - Schema: migrations and readiness.
//
// New makes them all over one back end, sharing the clock, the signing keys
// and the process's memory of certificates, publication and history; the
// transports take the groups they call. The CLI (internal/cli), the HTTP
// API (internal/httpapi) and the pages (internal/web) differ only in how
// they read input and render results, which this package never does beyond
// parsing events.
//
// Storage is reached through the ports in ports*.go (aggregates such as
// LedgerStore and ScoreStore, made of narrow ports, gathered in Backend,
// and the optional CacheWatcher), which the sqlite and postgres back ends
// implement; cmd/swarmscore opens one and the CLI hands it to New. The
// domain vocabulary is internal/ledger's, internal/auth's and
// internal/keyring's.
//
// Errors are classified by internal/errkind and say in their message what
// was wrong, naming the field, so the transports can show them as they are.
package service
