package service

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/audit/audittest"
	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/passport"
)

// auditBackend is a migrated store and a way to back-date an event row
// behind its back, as someone with database access would.
type auditBackend struct {
	store Backend
	// backdate moves a Conduit session's start and end one minute back.
	backdate func(t *testing.T, id string)
}

func sqliteAudit(t *testing.T) auditBackend {
	path := filepath.Join(t.TempDir(), "audit.db")
	st, err := sqlite.Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return auditBackend{st, func(t *testing.T, id string) {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`UPDATE conduit_sessions SET started_at = started_at - 60000000, completed_at = completed_at - 60000000 WHERE id = ?`, id); err != nil {
			t.Fatal(err)
		}
	}}
}

func postgresAudit(t *testing.T) auditBackend {
	dsn := pgtest.NewDatabase(t)
	st, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return auditBackend{st, func(t *testing.T, id string) {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), `UPDATE conduit_sessions SET started_at = started_at - interval '1 minute',
			completed_at = completed_at - interval '1 minute' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
	}}
}

func TestAuditBundleSQLite(t *testing.T)   { testAuditBundle(t, sqliteAudit(t)) }
func TestAuditBundlePostgres(t *testing.T) { testAuditBundle(t, postgresAudit(t)) }

// auditLedger fills a store through the use cases and the store's
// corrections with an agent "a" that has events of every outcome, a
// chargeback, a void, events moved away, in (from "c") and through a third
// agent, and signs a checkpoint over it.
func auditLedger(t *testing.T, be auditBackend) (*UseCases, *testClock) {
	ctx := t.Context()
	if _, err := be.store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key, err := passport.NewKey([]byte(testKey))
	if err != nil {
		t.Fatal(err)
	}
	c := &testClock{t0.Add(120 * 24 * time.Hour)}
	u := New(be.store, Config{Key: key, Platform: "test.example", Now: c.now})
	now, h := c.t, time.Hour
	ingest(t, u, []ledger.Event{
		audittest.Conduit("c1", "a", ledger.Running, now.Add(-h)),
		audittest.Conduit("c2", "a", ledger.Failed, now.Add(-100*24*h)),
		audittest.Conduit("c3", "a", ledger.Error, now.Add(-2*h)),
		audittest.Conduit("c4", "a", ledger.Running, now),
		audittest.AP2("t1", "a", "buyer-x", ledger.Held, now.Add(-3*h)),
		audittest.AP2("t2", "a", "buyer-y", ledger.Settled, now.Add(-4*h)),
		audittest.Conduit("c5", "a", ledger.Verified, now.Add(-5*h)),
		audittest.Conduit("c6", "c", ledger.Verified, now.Add(-6*h)),
		audittest.Conduit("c7", "a", ledger.Verified, now.Add(-7*h)),
		audittest.AP2("t4", "c", "buyer-z", ledger.Settled, now.Add(-8*h)),
		audittest.Conduit("c8", "b", ledger.Verified, now.Add(-9*h)),
		audittest.Conduit("c9", "a", ledger.Verified, now.Add(-10*h)),
	})
	ingest(t, u, []ledger.Event{
		audittest.Conduit("c1", "a", ledger.Verified, now.Add(-h)),
		audittest.AP2("t1", "a", "buyer-x", ledger.Settled, now.Add(-3*h)),
	})
	at := now.Add(-50 * time.Minute)
	cb := audittest.Req(ledger.ActionStatus, ledger.AP2Transaction, "t1", at)
	cb.Status, cb.AppealID = ledger.Refunded, "ap-1"
	correct(t, u, cb)
	correct(t, u, audittest.Req(ledger.ActionVoid, ledger.AP2Transaction, "t2", at))
	for _, m := range []struct {
		typ    ledger.Type
		id, to string
	}{{ledger.ConduitSession, "c5", "b"}, {ledger.ConduitSession, "c6", "a"}, {ledger.ConduitSession, "c7", "b"},
		{ledger.ConduitSession, "c7", "a"}, {ledger.AP2Transaction, "t4", "b"}, {ledger.AP2Transaction, "t4", "a"}} {
		r := audittest.Req(ledger.ActionReattribute, m.typ, m.id, at)
		r.AgentID = m.to
		correct(t, u, r)
	}
	makeCheckpoint(t, u, 1)
	return u, c
}

func correct(t *testing.T, u *UseCases, req ledger.CorrectionRequest) {
	t.Helper()
	if _, _, err := u.store.Correct(t.Context(), req, u.signRecorded); err != nil {
		t.Fatalf("correct %s %s: %v", req.EventType, req.EventID, err)
	}
}

// signRecorded is u.signer of the active key that also names the passport, so that the store
// keeps it in the passport history (PassportStore), as an audit --as-of
// reads it.
func (u *UseCases) signRecorded(e *ledger.ScoreEntry) ([]byte, string, error) {
	doc, sig, err := u.Certificates.keys.signer(u.Certificates.keys.current(context.Background()).active)(e)
	if err != nil {
		return nil, "", err
	}
	p, err := passport.Parse(doc)
	if err != nil {
		return nil, "", err
	}
	e.PassportID = p.AgentPassportID
	return doc, sig, nil
}

// makeCheckpoint signs checkpoint n over the store's heads with an HS256
// key of testKey, as `ledger checkpoint` does.
func makeCheckpoint(t *testing.T, u *UseCases, n int64) {
	t.Helper()
	leaves, err := u.store.Heads(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := checkpoint.NewTree(leaves)
	if err != nil {
		t.Fatal(err)
	}
	c := checkpoint.Checkpoint{Number: n, Time: u.Certificates.clock.now(), Agents: tree.Size(), Root: tree.Root(), Environment: "test",
		Issuer: checkpoint.Issuer{Platform: "test.example"}}
	k, err := checkpoint.NewHMACKey("ckpt-1", []byte(testKey))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sign(k); err != nil {
		t.Fatal(err)
	}
	doc, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := u.store.AddCheckpoint(t.Context(), c, doc, leaves); err != nil {
		t.Fatal(err)
	}
}

func auditKeys(t *testing.T) audit.Keys {
	k, err := audit.NewKeys([]byte(testKey), nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func exportBundle(t *testing.T, u *UseCases, agent string, q AuditQuery) *audit.Bundle {
	t.Helper()
	b, _, err := u.Audit.AuditBundle(t.Context(), agent, q)
	if err != nil {
		t.Fatal(err)
	}
	// What is verified is the document, as a third party receives it.
	back, err := audit.Parse(b.AppendJSON(nil))
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func testAuditBundle(t *testing.T, be auditBackend) {
	u, c := auditLedger(t, be)
	keys := auditKeys(t)
	b := exportBundle(t, u, "a", AuditQuery{})
	r := audit.Verify(b, keys)
	if !r.Valid {
		t.Fatalf("current bundle: %v", r.Discrepancy)
	}
	counts, err := u.store.Counts(t.Context(), "a", b.AsOf)
	if err != nil {
		t.Fatal(err)
	}
	if r.Counts != counts || r.Checkpoint != 1 || r.Anchored != b.Chains[0].Head.Seq || r.Linked != r.Records || len(b.Chains) != 2 ||
		r.Events[audit.Counted] != 6 || r.Events[audit.MovedAway] != 1 || r.Events[audit.Voided] != 1 {
		t.Fatalf("report %+v with counts %+v (store %+v), %d chains", r, r.Counts, counts, len(b.Chains))
	}
	if cert, err := u.Certificates.Certificate(t.Context(), "a"); err != nil || string(cert.Passport) != string(b.Passport) || !cert.ComputedAt.Equal(b.AsOf) {
		t.Fatalf("the bundle's passport is not the current certificate: %v", err)
	}

	t.Run("tamper", func(t *testing.T) { audittest.Run(t, b, keys) })

	t.Run("withheld", func(t *testing.T) {
		w, open, err := u.Audit.AuditBundle(t.Context(), "a", AuditQuery{Withhold: audit.Categories})
		if err != nil {
			t.Fatal(err)
		}
		doc := w.AppendJSON(nil)
		if strings.Contains(string(doc), "buyer-x") || strings.Contains(string(doc), "op-1") || len(open) == 0 {
			t.Fatal("identifiers were not withheld")
		}
		if r := audit.VerifyDocument(doc, keys); !r.Valid || r.Linked != 0 {
			t.Fatalf("withheld bundle: %+v", r)
		}
	})

	t.Run("as of", func(t *testing.T) {
		// A day later, a late report and another chargeback: the passport
		// in force before them no longer matches the corrected ledger.
		past := c.t
		c.t = c.t.Add(24 * time.Hour)
		ingest(t, u, []ledger.Event{audittest.Conduit("c10", "a", ledger.Failed, past.Add(-30*time.Minute))})
		cb := audittest.Req(ledger.ActionStatus, ledger.ConduitSession, "c1", c.t.Add(-time.Hour))
		cb.Status = ledger.Failed
		correct(t, u, cb)
		makeCheckpoint(t, u, 2)
		old := exportBundle(t, u, "a", AuditQuery{AsOf: past})
		if old.Passport == nil {
			t.Fatal("no passport in force at the earlier instant")
		}
		r := audit.Verify(old, keys)
		if r.Valid || r.Discrepancy.Code != audit.CodePassportCounts || !strings.Contains(r.Discrepancy.Message, "superseded") {
			t.Fatalf("superseded passport: %+v", r.Discrepancy)
		}
		// The same instant with no passport in force verifies, with a
		// warning.
		old.Passport = nil
		if r := audit.Verify(old, keys); !r.Valid || r.Checkpoint != 2 {
			t.Fatalf("past bundle without its passport: %+v", r)
		}
		if now := exportBundle(t, u, "a", AuditQuery{}); !audit.Verify(now, keys).Valid {
			t.Fatal("the current bundle after the correction does not verify")
		}
	})

	t.Run("row edited behind the ledger's back", func(t *testing.T) {
		be.backdate(t, "c9")
		r := audit.Verify(exportBundle(t, u, "a", AuditQuery{}), keys)
		if r.Valid || r.Discrepancy.Code != audit.CodeChainLink || r.Discrepancy.EventID != "c9" {
			t.Fatalf("back-dated row: %+v", r.Discrepancy)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			agent string
			q     AuditQuery
			kind  errkind.Kind
		}{
			{"ghost", AuditQuery{}, errkind.NotFound},
			{"not valid", AuditQuery{}, errkind.Invalid},
			{"a", AuditQuery{AsOf: c.t.Add(time.Minute)}, errkind.Invalid},
		} {
			if _, _, err := u.Audit.AuditBundle(t.Context(), tc.agent, tc.q); errkind.Of(err) != tc.kind {
				t.Errorf("%s %+v: %v, want %v", tc.agent, tc.q, err, tc.kind)
			}
		}
	})
}

// movingStore appends a report to the agent's chain every time the chain
// is read, as a busy ingest would.
type movingStore struct {
	Backend
	u     *UseCases
	t     *testing.T
	reads int
}

func (s *movingStore) Chain(ctx context.Context, agentID string) ([]ledger.ChainRow, error) {
	s.reads++
	ingest(s.t, s.u, []ledger.Event{audittest.Conduit(fmt.Sprintf("busy-%d", s.reads), agentID, ledger.Verified, s.u.Certificates.clock.now().Add(-time.Hour))})
	return s.Backend.Chain(ctx, agentID)
}

// TestAuditBundleMovingChain: a chain that moves between the reads is read
// again, and a chain that never stops moving is unavailable, not a bundle
// whose counts disagree with its records.
func TestAuditBundleMovingChain(t *testing.T) {
	u, _ := auditLedger(t, sqliteAudit(t))
	ms := &movingStore{Backend: u.store, u: u, t: t}
	moving := New(ms, Config{Key: u.cfg.Key, Platform: u.cfg.Platform, Now: u.cfg.Now})
	_, _, err := moving.Audit.AuditBundle(t.Context(), "a", AuditQuery{})
	if !errors.Is(err, errkind.ErrUnavailable) || ms.reads != auditAttempts {
		t.Fatalf("%v after %d reads", err, ms.reads)
	}
	if b := exportBundle(t, u, "a", AuditQuery{}); !audit.Verify(b, auditKeys(t)).Valid {
		t.Fatal("the bundle after the writes does not verify")
	}
}

func TestAuditPrunedChainSQLite(t *testing.T)   { testAuditPrunedChain(t, sqliteAudit(t)) }
func TestAuditPrunedChainPostgres(t *testing.T) { testAuditPrunedChain(t, postgresAudit(t)) }

// testAuditPrunedChain audits a chain whose first records a prune removed:
// the bundle starts at the anchor, holds the summary record, verifies, and
// is caught when the summary or the anchor is altered; an as_of whose
// window reaches the pruned months is refused.
func testAuditPrunedChain(t *testing.T, be auditBackend) {
	ctx := t.Context()
	if _, err := be.store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key, err := passport.NewKey([]byte(testKey))
	if err != nil {
		t.Fatal(err)
	}
	c := &testClock{t0.Add(400 * 24 * time.Hour)}
	ck, err := NewCheckpointKey([]byte(testKey))
	if err != nil {
		t.Fatal(err)
	}
	u := New(be.store, Config{Key: key, CheckpointKey: ck, Platform: "test.example", Now: c.now})
	now, day := c.t, 24*time.Hour
	ingest(t, u, []ledger.Event{
		audittest.Conduit("old-1", "p", ledger.Verified, now.Add(-200*day)),
		audittest.Conduit("old-2", "p", ledger.Failed, now.Add(-199*day)),
		audittest.AP2("old-3", "p", "buyer-x", ledger.Settled, now.Add(-198*day)),
		audittest.Conduit("new-1", "p", ledger.Verified, now.Add(-2*day)),
		audittest.Conduit("new-2", "p", ledger.Running, now.Add(-day)),
	})
	res, err := u.Audit.Prune(ctx, 90*day)
	if err != nil || res.Events != 3 {
		t.Fatalf("prune: %+v, %v", res, err)
	}
	ingest(t, u, []ledger.Event{audittest.Conduit("new-2", "p", ledger.Verified, now.Add(-day))})
	makeCheckpoint(t, u, 2)
	keys := auditKeys(t)
	b := exportBundle(t, u, "p", AuditQuery{})
	r := audit.Verify(b, keys)
	if !r.Valid {
		t.Fatalf("pruned bundle: %v", r.Discrepancy)
	}
	if ch := &b.Chains[0]; ch.FromSeq != 4 || ch.Prev == (ledger.Hash{}) || r.Counts.ConduitTotal != 2 || r.Events[audit.Counted] != 2 {
		t.Fatalf("chain from %d, report %+v", ch.FromSeq, r)
	}
	if !slices.ContainsFunc(r.Warnings, func(f audit.Finding) bool { return f.Code == audit.WarnPruned }) {
		t.Fatalf("no pruned warning: %+v", r.Warnings)
	}
	t.Run("tamper", func(t *testing.T) { audittest.Run(t, b, keys) })
	doc := string(b.AppendJSON(nil))
	for _, tc := range []struct{ name, from, to, code string }{
		{"summary count", `"count":1,`, `"count":2,`, audit.CodeChainLink},
		{"anchor", `"from_seq":4,"prev":"`, `"from_seq":4,"prev":"0`, audit.CodeMalformed},
		{"from seq", `"from_seq":4,`, `"from_seq":3,`, audit.CodeChainSeq},
	} {
		if !strings.Contains(doc, tc.from) {
			t.Fatalf("%s: %q not in the bundle", tc.name, tc.from)
		}
		r := audit.VerifyDocument([]byte(strings.Replace(doc, tc.from, tc.to, 1)), keys)
		if r.Valid || r.Discrepancy == nil || r.Discrepancy.Code != tc.code {
			t.Errorf("%s: want %s, got %+v", tc.name, tc.code, r.Discrepancy)
		}
	}
	_, _, err = u.Audit.AuditBundle(ctx, "p", AuditQuery{AsOf: now.Add(-150 * day)})
	if !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("as_of reaching pruned months: %v", err)
	}

	// Erased after the prune: the summary record is sealed with the rest,
	// and the pseudonym's bundle still verifies.
	er, err := u.Rights.EraseAgent(ctx, OperatorCaller("op-1"), "p", "")
	if err != nil {
		t.Fatal(err)
	}
	eb := exportBundle(t, u, er.Pseudonym, AuditQuery{})
	if r := audit.Verify(eb, keys); !r.Valid || r.Counts.ConduitTotal != 2 {
		t.Fatalf("the pseudonym's pruned and sealed bundle: %+v", r)
	}
	if strings.Contains(string(eb.AppendJSON(nil)), `"p"`) {
		t.Fatal("the erased id is in the pseudonym's bundle")
	}
}

func TestAuditHoldsSQLite(t *testing.T)   { testAuditHolds(t, sqliteAudit(t)) }
func TestAuditHoldsPostgres(t *testing.T) { testAuditHolds(t, postgresAudit(t)) }

// testAuditHolds: holds placed, released, disputed and refunded by a
// chargeback through the use cases are in the provider's bundle with the
// passport that priced them, which verifies (also withheld) and catches
// every tamper; the buyer's bundle holds none.
func testAuditHolds(t *testing.T, be auditBackend) {
	u, c := auditLedger(t, be)
	ctx := t.Context()
	op := OperatorCaller("op-1")
	for _, in := range []HoldInput{
		{TransactionID: "hx-1", ProviderID: "a", BuyerID: "buyer-h", AmountCents: 100000, Currency: "USD"},
		{TransactionID: "hx-2", ProviderID: "a", BuyerID: "buyer-h", AmountCents: 4321, Currency: "USD"},
	} {
		if _, _, err := u.Holds.CreateHold(ctx, op, in); err != nil {
			t.Fatal(err)
		}
	}
	c.t = c.t.Add(time.Minute)
	if _, err := u.Holds.ChangeHold(ctx, op, "hx-1", HoldAction{Action: ledger.HoldRelease, HasFee: true, FeeCents: 700}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Holds.ChangeHold(ctx, op, "hx-2", HoldAction{Action: ledger.HoldDispute, Reason: "late"}); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(time.Minute)
	cb := audittest.Req(ledger.ActionStatus, ledger.AP2Transaction, "hx-1", c.t)
	cb.Status, cb.By = ledger.Refunded, "op-1"
	correct(t, u, cb)
	if h, err := u.Holds.Hold(ctx, "hx-1"); err != nil || h.State != ledger.HoldRefunded || h.RefundCents != h.HoldCents || h.Seq != 3 {
		t.Fatalf("the charged-back hold: %+v, %v", h, err)
	}
	if r, err := u.Holds.Reconcile(ctx); err != nil || r.Broken != "" || !r.Totals.Balanced() {
		t.Fatalf("reconcile: %+v, %v", r, err)
	}
	makeCheckpoint(t, u, 2)

	keys := auditKeys(t)
	b := exportBundle(t, u, "a", AuditQuery{})
	r := audit.Verify(b, keys)
	if !r.Valid || r.Holds != 2 || len(b.HoldPassports) != 1 {
		t.Fatalf("bundle with holds: %+v, %d holds, %d passports", r.Discrepancy, r.Holds, len(b.HoldPassports))
	}
	w, _, err := u.Audit.AuditBundle(ctx, "a", AuditQuery{Withhold: audit.Categories})
	if err != nil {
		t.Fatal(err)
	}
	if r := audit.VerifyDocument(w.AppendJSON(nil), keys); !r.Valid || r.Holds != 2 {
		t.Fatalf("withheld bundle with holds: %+v", r.Discrepancy)
	}
	if strings.Contains(string(w.AppendJSON(nil)), "buyer-h") {
		t.Error("the withheld bundle names the holds' buyer")
	}
	t.Run("tamper", func(t *testing.T) { audittest.Run(t, b, keys) })
}

// TestAuditHoldErasedBuyer: after the buyer of a hold is erased, the hold
// names its pseudonym and no longer hashes; the provider's bundle marks its
// steps sealed, takes their hashes as stated with a warning, and still
// verifies its price, money and reports.
func TestAuditHoldErasedBuyer(t *testing.T) {
	u, _ := newUseCases(t)
	ctx := t.Context()
	op := OperatorCaller("op-1")
	ingest(t, u, conduit("prov", "p", 10, 9, t0))
	ingest(t, u, conduit("buyer-gone", "b", 1, 1, t0))
	if _, _, err := u.Holds.CreateHold(ctx, op, HoldInput{TransactionID: "hz-1", ProviderID: "prov", BuyerID: "buyer-gone", AmountCents: 5000, Currency: "USD"}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Holds.ChangeHold(ctx, op, "hz-1", HoldAction{Action: ledger.HoldRelease}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Rights.EraseAgent(ctx, op, "buyer-gone", ""); err != nil {
		t.Fatal(err)
	}
	b := exportBundle(t, u, "prov", AuditQuery{})
	if strings.Contains(string(b.AppendJSON(nil)), "buyer-gone") || len(b.Holds) != 1 || b.Holds[0].Steps[0].SealedBy == "" {
		t.Fatalf("the bundle after the buyer's erasure: %d holds", len(b.Holds))
	}
	r := audit.Verify(b, auditKeys(t))
	if !r.Valid || r.Holds != 1 || !slices.ContainsFunc(r.Warnings, func(f audit.Finding) bool {
		return f.Code == audit.WarnSealed && strings.Contains(f.Message, "hold steps")
	}) {
		t.Fatalf("%+v %v", r.Warnings, r.Discrepancy)
	}
}

// TestAuditHoldErasedProvider: the bundle of an erased provider's
// pseudonym holds its hold, sealed; the erasure revoked the passport that
// priced it, so its price is checked against its own score, and the
// bundle verifies.
func TestAuditHoldErasedProvider(t *testing.T) {
	u, _ := newUseCases(t)
	ctx := t.Context()
	op := OperatorCaller("op-1")
	ingest(t, u, conduit("prov-gone", "p", 10, 9, t0))
	if _, _, err := u.Holds.CreateHold(ctx, op, HoldInput{TransactionID: "hz-2", ProviderID: "prov-gone", BuyerID: "buyer-1", AmountCents: 5000, Currency: "USD"}); err != nil {
		t.Fatal(err)
	}
	e, err := u.Rights.EraseAgent(ctx, op, "prov-gone", "")
	if err != nil {
		t.Fatal(err)
	}
	b := exportBundle(t, u, e.Pseudonym, AuditQuery{})
	if len(b.Holds) != 1 || len(b.HoldPassports) != 0 {
		t.Fatalf("%d holds, %d passports", len(b.Holds), len(b.HoldPassports))
	}
	if r := audit.Verify(b, auditKeys(t)); !r.Valid || r.Holds != 1 {
		t.Fatalf("%+v", r.Discrepancy)
	}
	// A step marked sealed by an erasure the bundle does not show fails.
	b.Holds[0].Steps[0].SealedBy = "era-nowhere"
	if r := audit.Verify(b, auditKeys(t)); r.Valid || r.Discrepancy.Code != audit.CodeHoldChain {
		t.Fatalf("a false seal: %+v", r.Discrepancy)
	}
}
