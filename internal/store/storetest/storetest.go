// Package storetest is the conformance suite every service.Backend back end
// passes. A back end's test calls
//
//	storetest.Run(t, storetest.Harness{Open: ..., Tamper: ...})
//
// Open returns a fresh, migrated, empty store (and registers its cleanup);
// Tamper edits that store's database behind its back, the way an attacker
// with database access would (spec §15.2), so that the suite can prove
// VerifyLedger notices.
package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// Harness connects the suite to a back end.
type Harness struct {
	// Open returns a new, migrated, empty store. It must fail the test (not
	// skip) if the database is unreachable under CI.
	Open func(t *testing.T) service.Backend
	// Tamper rewrites stored data directly. Required.
	Tamper Tamperer
}

// Tamperer edits a store's database behind its back, as an attacker with
// database access would.
type Tamperer interface {
	// Exec runs SQL statements (one or several, separated by semicolons)
	// directly on s's database, with every guard the back end puts on its
	// tables out of the way: append-only triggers, foreign keys and check
	// constraints. The statements use only SQL both dialects share, with
	// time and byte literals written by Time and Bytes.
	Exec(t *testing.T, s service.Backend, sql string)
	// Guarded runs SQL statements on s's database with its guards in
	// place, as a client of the database that is not this program would,
	// and returns the database's error.
	Guarded(t *testing.T, s service.Backend, sql string) error
	// Time renders an instant as a literal of the back end's timestamp
	// columns.
	Time(at time.Time) string
	// Bytes renders b as a literal of the back end's hash columns.
	Bytes(b []byte) string
	// Dump returns every row of every table of s's database as text, one
	// line per row prefixed by its table: to prove a value is nowhere.
	Dump(t *testing.T, s service.Backend) string
	// Schema returns every column of every table of s's database as the
	// database reports it (information_schema.columns,
	// pragma_table_info), the database's own tables left out.
	Schema(t *testing.T, s service.Backend) []ledger.SchemaColumn
	// CacheVersion returns the ledger_seq of the agent's cache entry and
	// the agent's terminal_seq (store.go: the version of its counts).
	CacheVersion(t *testing.T, s service.Backend, agentID string) (ledgerSeq, terminalSeq int64)
}

// Run runs every conformance test as a subtest.
func Run(t *testing.T, h Harness) {
	if h.Open == nil || h.Tamper == nil {
		t.Fatal("storetest: Harness.Open and Harness.Tamper are required")
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"Ready", testReady},
		{"IngestNew", testIngestNew},
		{"Idempotent", testIdempotent},
		{"Transitions", testTransitions},
		{"Conflicts", testConflicts},
		{"Superseded", testSuperseded},
		{"ClockSkew", testClockSkew},
		{"ReceivedAt", testReceivedAt},
		{"ChangedSince", testChangedSince},
		{"TaskOffers", testTaskOffers},
		{"Invalid", testInvalid},
		{"BatchAtomicity", testBatchAtomicity},
		{"UnknownAgent", testUnknownAgent},
		{"WindowBoundaries", testWindowBoundaries},
		{"Statuses", testStatuses},
		{"Cache", testCache},
		{"CacheFutureEvent", testCacheFutureEvent},
		{"CacheInvalidation", testCacheInvalidation},
		{"CacheVersion", testCacheVersion},
		{"CacheStamp", testCacheStamp},
		{"IssueInTransaction", testIssue},
		{"RecomputeAll", testRecomputeAll},
		{"ListScores", testListScores},
		{"ListScoresBy", testListScoresBy},
		{"Verify", testVerify},
		{"VerifyTampering", testVerifyTampering},
		{"VerifyTamperingLayout", testVerifyTamperingLayout},
		{"Corrections", testCorrections},
		{"EventsByKey", testEventsByKey},
		{"VerifyCorrectionTampering", testVerifyCorrectionTampering},
		{"Tokens", testTokens},
		{"Roles", testRoles},
		{"Actions", testActions},
		{"Sessions", testSessions},
		{"Webhooks", testWebhooks},
		{"WebhookOutbox", testWebhookOutbox},
		{"WebhookClaimsConcurrent", testWebhookClaimsConcurrent},
		{"WebhookAppeals", testWebhookAppeals},
		{"WebhookHolds", testWebhookHolds},
		{"WebhookErasure", testWebhookErasure},
		{"Keys", testKeys},
		{"Passports", testPassports},
		{"Credentials", testCredentials},
		{"Appeals", testAppeals},
		{"Checkpoints", testCheckpoints},
		{"Log", testLog},
		{"Consent", testConsent},
		{"Records", testRecords},
		{"Catalogue", testCatalogue},
		{"CatalogueCatchesUnregistered", testCatalogueCatchesUnregistered},
		{"Erasure", testErasure},
		{"Prune", testPrune},
		{"Signals", testSignals},
		{"SignalsProperty", testSignalsProperty},
		{"Concurrent", testConcurrent},
		{"Holds", testHolds},
		{"HoldsConcurrent", testHoldsConcurrent},
		{"HoldCorrections", testHoldCorrections},
		{"Proofs", testProofs},
		{"Property", testProperty},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

// base is the fixed "now" of the suite: times are arguments, never clocks.
var base = time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)

func ctx(t *testing.T) context.Context { return t.Context() }

// conduit builds a Conduit session; a zero end means non-terminal.
func conduit(id, agent string, status ledger.Status, started, ended time.Time) ledger.Event {
	return ledger.Event{Type: ledger.ConduitSession, ID: id, AgentID: agent, BuyerID: "buyer-1", Status: status, StartedAt: started, EndedAt: ended}
}

// ap2 builds an AP2 transaction for 1000.00.
func ap2(id, agent string, status ledger.Status, started, ended time.Time) ledger.Event {
	return ledger.Event{Type: ledger.AP2Transaction, ID: id, AgentID: agent, BuyerID: "buyer-1", Status: status,
		EscrowAmountCents: 100000, StartedAt: started, EndedAt: ended}
}

func ingest(t *testing.T, s service.Backend, operator string, events ...ledger.Event) []ledger.Outcome {
	t.Helper()
	out, err := s.Ingest(ctx(t), ledger.Batch{Operator: operator, Events: events})
	if err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	if len(out) != len(events) {
		t.Fatalf("Ingest returned %d outcomes for %d events", len(out), len(events))
	}
	return out
}

func wantOutcomes(t *testing.T, got []ledger.Outcome, want ...ledger.OutcomeStatus) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d outcomes, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Status != w {
			t.Errorf("event %d: outcome %v (%v), want %v", i, got[i].Status, got[i].Err, w)
		}
		if (got[i].Err != nil) != (w == ledger.OutcomeRejected) {
			t.Errorf("event %d: outcome %v with error %v", i, got[i].Status, got[i].Err)
		}
	}
}

func wantKind(t *testing.T, err error, kind errkind.Kind) {
	t.Helper()
	if got := errkind.Of(err); got != kind {
		t.Errorf("error %v is kind %v, want %v", err, got, kind)
	}
}

func counts(t *testing.T, s service.Backend, agent string, asOf time.Time) [4]int64 {
	t.Helper()
	c, err := s.Counts(ctx(t), agent, asOf)
	if err != nil {
		t.Fatalf("Counts(%s, %s): %v", agent, asOf, err)
	}
	return [4]int64{c.ConduitTotal, c.ConduitSuccess, c.AP2Total, c.AP2Success}
}

func chainLength(t *testing.T, s service.Backend, agent string) int64 {
	t.Helper()
	a, err := s.Agent(ctx(t), agent)
	if err != nil {
		t.Fatalf("Agent(%s): %v", agent, err)
	}
	return a.ChainLength
}

func mustVerify(t *testing.T, s service.Backend) ledger.VerifyReport {
	t.Helper()
	r, err := s.VerifyLedger(ctx(t))
	if err != nil {
		t.Fatalf("VerifyLedger: %v", err)
	}
	if len(r.Broken) != 0 {
		t.Fatalf("VerifyLedger found breaks in an untouched ledger: %v", r.Broken)
	}
	return r
}

func isNotFound(err error) bool { return errors.Is(err, errkind.ErrNotFound) }
