// Package api holds the JSON shapes of the SwarmScore HTTP API: what
// `swarmscore serve` reads and writes on every route, what the CLI prints
// with --json for the same use case, and what the public client
// (github.com/swarmscore/swarmscore/client) decodes. The server, the CLI and
// the client all use these types, so a third party that decodes a response
// into them sees exactly the members the server wrote, and marshalling a
// value that came from the server gives back the server's bytes (the tests
// of internal/httpapi check this route by route).
//
// The package imports only the module's other public packages: score (the
// formula's tiers, modifiers and results) and passport (verification
// problems). Documents with formats of their own are not here: passports
// (package passport), JWK sets (passport.JWKSet), signed checkpoints and
// audit bundles are served as those formats define them.
//
// Instants are time.Time, marshalled in UTC as RFC 3339 with the precision
// the server keeps (seconds for scores and passports, microseconds for the
// ledger's events and actions); an instant that has not happened is a
// pointer, null in JSON. The OpenAPI document the server serves at
// /openapi.json describes the same shapes.
package api
