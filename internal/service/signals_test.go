package service

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/signal"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

// gaming generates, ending before now, one history made to trip each
// signal and one made not to, named "<signal>-yes" and "<signal>-no".
func gaming(now time.Time) []ledger.Event {
	end := now.Add(-2 * time.Hour)
	var evs []ledger.Event
	add := func(typ ledger.Type, id, agent, buyer string, st ledger.Status, ended time.Time) {
		e := ledger.Event{Type: typ, ID: id, AgentID: agent, BuyerID: buyer, Status: st, StartedAt: ended.Add(-time.Hour), EndedAt: ended}
		if typ == ledger.AP2Transaction {
			e.EscrowAmountCents = 5000
		}
		evs = append(evs, e)
	}
	for i := range 20 {
		whale := fmt.Sprint("b-", i)
		if i < 15 {
			whale = "whale"
		}
		add(ledger.ConduitSession, fmt.Sprint("f1-", i), "conduit_top_buyer_share-yes", whale, ledger.Verified, end)
		add(ledger.ConduitSession, fmt.Sprint("f0-", i), "conduit_top_buyer_share-no", fmt.Sprint("b-", i%3), ledger.Verified, end)
		add(ledger.AP2Transaction, fmt.Sprint("s1-", i), "ap2_top5_buyer_share-yes", fmt.Sprint("b-", i%5), ledger.Settled, end)
		add(ledger.AP2Transaction, fmt.Sprint("s0-", i), "ap2_top5_buyer_share-no", fmt.Sprint("b-", i), ledger.Settled, end)
		add(ledger.AP2Transaction, fmt.Sprint("d1-", i), "ap2_buyer_diversity-yes", "b-1", ledger.Settled, end)
		add(ledger.AP2Transaction, fmt.Sprint("d0-", i), "ap2_buyer_diversity-no", fmt.Sprint("b-", i), ledger.Settled, end)
	}
	for i := range 3 {
		add(ledger.ConduitSession, fmt.Sprint("x1-", i), "self_dealing-yes", "self_dealing-yes", ledger.Verified, end)
		add(ledger.ConduitSession, fmt.Sprint("x0-", i), "self_dealing-no", "b-1", ledger.Verified, end)
	}
	for i := range 10 {
		picky, fine := ledger.Declined, ledger.Accepted
		if i < 2 {
			picky, fine = ledger.Accepted, ledger.Declined
		}
		add(ledger.TaskOffer, fmt.Sprint("o1-", i), "acceptance_rate-yes", "b-1", picky, end)
		add(ledger.TaskOffer, fmt.Sprint("o0-", i), "acceptance_rate-no", "b-1", fine, end)
	}
	// Bursts: 21 sessions of one buyer two minutes apart, or four
	// minutes apart (15 in any hour), among 30 of other buyers.
	for i := range 30 {
		add(ledger.ConduitSession, fmt.Sprint("u1-o", i), "conduit_burst-yes", fmt.Sprint("b-", i), ledger.Verified, end)
		add(ledger.ConduitSession, fmt.Sprint("u0-o", i), "conduit_burst-no", fmt.Sprint("b-", i), ledger.Verified, end)
	}
	for i := range 21 {
		add(ledger.ConduitSession, fmt.Sprint("u1-", i), "conduit_burst-yes", "rusher", ledger.Verified, end.Add(-time.Duration(i)*2*time.Minute))
		add(ledger.ConduitSession, fmt.Sprint("u0-", i), "conduit_burst-no", "rusher", ledger.Verified, end.Add(-time.Duration(i)*4*time.Minute))
	}
	// Reported now: one ended 48 hours ago, one 2 hours ago.
	add(ledger.ConduitSession, "l1", "report_lag-yes", "b-1", ledger.Verified, now.Add(-48*time.Hour))
	add(ledger.ConduitSession, "l0", "report_lag-no", "b-1", ledger.Verified, end)
	add(ledger.ConduitSession, "c1", "chain_break-yes", "b-1", ledger.Verified, end)
	add(ledger.ConduitSession, "c0", "chain_break-no", "b-1", ledger.Verified, end)
	// Proofs: two VERIFIED sessions each with a proof_hash; provenBundles
	// names those whose bundle is checked (both of -no's, none of -yes's).
	for _, id := range []string{"p1-0", "p1-1", "p0-0", "p0-1"} {
		agent := "unproven_verified_share-yes"
		if id[1] == '0' {
			agent = "unproven_verified_share-no"
		}
		add(ledger.ConduitSession, id, agent, "b-1", ledger.Verified, end)
		sum := sha256.Sum256([]byte("bundle of " + id))
		evs[len(evs)-1].ProofHash = hex.EncodeToString(sum[:])
	}
	return evs
}

// provenBundles are the sessions of gaming whose proof bundles are checked.
var provenBundles = []string{"p0-0", "p0-1"}

// TestSignals: each history trips its own signal and no other; each
// "-no" history trips none. chain_break follows the last walk.
func TestSignals(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "signals.db")
	st, err := sqlite.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c := &testClock{t0.Add(10 * 24 * time.Hour)}
	a := New(st, Config{Now: c.now})
	ingest(t, a, gaming(c.t))
	for _, id := range provenBundles {
		if ch, err := a.Proofs.CheckProof(ctx, OperatorCaller("op"), id, strings.NewReader("bundle of "+id)); err != nil || ch.Outcome != ledger.ProofMatched {
			t.Fatalf("proof of %s: %+v %v", id, ch, err)
		}
	}

	// Edit one row behind the ledger's back, then walk the chains.
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE conduit_sessions SET completed_at = completed_at - 1000000 WHERE id = 'c1'`); err != nil {
		t.Fatal(err)
	}
	if st, ok := a.Signals.SignalStats(); ok {
		t.Fatalf("stats before any run: %+v", st)
	}
	rep, err := a.Signals.VerifyLedger(ctx)
	if err != nil || len(rep.Broken) != 1 || rep.Broken[0].AgentID != "chain_break-yes" {
		t.Fatalf("walk: %+v %v", rep, err)
	}

	flagged, err := a.Signals.FlaggedAgents(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !flagged.AsOf.Equal(c.t) {
		t.Fatalf("flagged as of %v", flagged.AsOf)
	}
	var names []string
	for _, f := range flagged.Agents {
		names = append(names, f.AgentID)
		if !f.AsOf.Equal(c.t) || len(f.Signals) != len(signal.Names) {
			t.Fatalf("%s: %+v", f.AgentID, f)
		}
	}
	want := make([]string, 0, len(signal.Names))
	for _, n := range signal.Names {
		want = append(want, n+"-yes")
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("flagged %v, want %v", names, want)
	}
	for _, n := range signal.Names {
		for _, agent := range []string{n + "-yes", n + "-no"} {
			s, err := a.Signals.Signals(ctx, agentCaller(agent), agent, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			for _, sig := range s.Signals {
				// The partner-shuffling histories also fail the other AP2
				// share test by construction: one buyer in twenty
				// transactions is both concentrated and undiverse.
				trips := agent == n+"-yes" && (sig.Name == n || n == signal.AP2BuyerDiversity && sig.Name == signal.AP2Top5BuyerShare)
				if sig.Flagged != trips {
					t.Errorf("%s: %s = %v (threshold %v) flagged %v", agent, sig.Name, sig.Value, sig.Threshold, sig.Flagged)
				}
			}
		}
	}
	lag, _ := a.Signals.Signals(ctx, op, "report_lag-yes", time.Time{})
	if v := lag.Signals[slices.Index(signal.Names, signal.ReportLag)]; v.Value != 48 || v.Threshold != 24 {
		t.Fatalf("report lag in hours: %+v", v)
	}

	stats, err := a.Signals.RefreshSignalStats(ctx)
	if err != nil || stats.Agents != 2*len(signal.Names) || stats.Flagged != len(signal.Names) || !stats.At.Equal(c.t) {
		t.Fatalf("stats: %+v %v", stats, err)
	}
	for _, n := range signal.Names {
		if want := map[bool]int{true: 2, false: 1}[n == signal.AP2Top5BuyerShare]; stats.BySignal[n] != want {
			t.Errorf("%s: %d agents flagged, want %d", n, stats.BySignal[n], want)
		}
	}
	if got, ok := a.Signals.SignalStats(); !ok || got.BrokenChains != 1 || !got.WalkAt.Equal(c.t) || got.Flagged != stats.Flagged {
		t.Fatalf("kept stats: %+v", got)
	}

	// Lower thresholds are the deployment's: the "-no" lag history trips.
	a.Signals.thresholds = signal.Defaults
	a.Signals.thresholds.ReportLag = time.Hour
	if s, _ := a.Signals.Signals(ctx, op, "report_lag-no", time.Time{}); !s.Flagged() {
		t.Fatalf("with a 1 h threshold: %+v", s)
	}
	// A burst threshold of 10, or a 90-minute interval, catch the slower
	// burst too (15 in an hour, 21 within 80 minutes).
	burst := slices.Index(signal.Names, signal.ConduitBurst)
	a.Signals.thresholds.ConduitBurst = 10
	if s, _ := a.Signals.Signals(ctx, op, "conduit_burst-no", time.Time{}); !s.Signals[burst].Flagged || s.Signals[burst].Value != 15 {
		t.Fatalf("with a burst threshold of 10: %+v", s)
	}
	a.Signals.thresholds.ConduitBurst, a.Signals.thresholds.BurstInterval = 20, 90*time.Minute
	if s, _ := a.Signals.Signals(ctx, op, "conduit_burst-no", time.Time{}); !s.Signals[burst].Flagged || s.Signals[burst].Value != 21 {
		t.Fatalf("with a 90-minute interval: %+v", s)
	}
	a.Signals.thresholds.BurstInterval = 0
	if _, err := a.Signals.FlaggedAgents(ctx, time.Time{}); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("no burst interval: %v", err)
	}
	a.Signals.thresholds.BurstInterval = time.Hour
	a.Signals.thresholds.ReportLag = 0
	if _, err := a.Signals.FlaggedAgents(ctx, time.Time{}); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("invalid thresholds: %v", err)
	}
	a.Signals.thresholds = signal.Thresholds{}

	// As of before everything ended, nobody is flagged but the broken
	// chain; an agent with nothing in the window has zero figures.
	if f, err := a.Signals.FlaggedAgents(ctx, c.t.Add(-72*time.Hour)); err != nil || len(f.Agents) > 1 || !f.AsOf.Equal(c.t.Add(-72*time.Hour)) {
		t.Fatalf("as of the past: %+v %v", f, err)
	}
	if s, err := a.Signals.Signals(ctx, op, "fair", c.t.Add(-72*time.Hour)); !errors.Is(err, errkind.ErrNotFound) {
		t.Fatalf("unknown agent: %+v %v", s, err)
	}
	s, err := a.Signals.Signals(ctx, op, "conduit_top_buyer_share-yes", c.t.Add(-72*time.Hour))
	if err != nil || s.Flagged() || s.Signals[0].Value != 0 {
		t.Fatalf("nothing in the window: %+v %v", s, err)
	}

	// Repaired and walked again: the break is gone.
	if _, err := raw.Exec(`UPDATE conduit_sessions SET completed_at = completed_at + 1000000 WHERE id = 'c1'`); err != nil {
		t.Fatal(err)
	}
	if rep, err := a.Signals.VerifyLedger(ctx); err != nil || len(rep.Broken) != 0 {
		t.Fatalf("walk: %+v %v", rep, err)
	}
	if s, _ := a.Signals.Signals(ctx, op, "chain_break-yes", time.Time{}); s.Flagged() {
		t.Fatalf("after a clean walk: %+v", s)
	}
}

// TestAcceptanceRateNeedsOffers: acceptance_rate is judged only from task
// offers the operator reported and that were decided. A busy agent with no
// offers, or with offers still open, is not flagged and says why; offers
// accepted at exactly the threshold are not flagged, one fewer is.
func TestAcceptanceRateNeedsOffers(t *testing.T) {
	ctx := context.Background()
	a, c := newUseCases(t)
	now := c.t
	end := now.Add(-2 * time.Hour)
	var evs []ledger.Event
	offer := func(id, agent string, st ledger.Status) {
		e := ledger.Event{Type: ledger.TaskOffer, ID: id, AgentID: agent, BuyerID: "b-1", Status: st, StartedAt: end.Add(-time.Hour)}
		if st != ledger.Offered {
			e.EndedAt = end
		}
		evs = append(evs, e)
	}
	for i := range 40 {
		evs = append(evs, ledger.Event{Type: ledger.ConduitSession, ID: fmt.Sprint("busy-", i), AgentID: "busy", BuyerID: fmt.Sprint("b-", i),
			Status: ledger.Failed, StartedAt: end.Add(-time.Hour), EndedAt: end})
	}
	for i := range 10 {
		offer(fmt.Sprint("open-", i), "open", ledger.Offered)
		st, st2 := ledger.Declined, ledger.Declined
		if i < 3 {
			st = ledger.Accepted
		}
		if i < 2 {
			st2 = ledger.Accepted
		}
		offer(fmt.Sprint("edge-", i), "edge", st)
		offer(fmt.Sprint("below-", i), "below", st2)
	}
	ingest(t, a, evs)
	rate := slices.Index(signal.Names, signal.AcceptanceRate)
	for agent, want := range map[string]struct {
		flagged bool
		value   float64
		note    string
	}{
		"busy":  {false, 0, signal.NoteNoOffers},
		"open":  {false, 0, signal.NoteNoOffers},
		"edge":  {false, 0.3, ""},
		"below": {true, 0.2, ""},
	} {
		s, err := a.Signals.Signals(ctx, op, agent, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Signals[rate]; got.Flagged != want.flagged || got.Value != want.value || got.Note != want.note || got.Threshold != 0.3 {
			t.Errorf("%s: %+v, want flagged %v value %v note %q", agent, got, want.flagged, want.value, want.note)
		}
	}
	flagged, err := a.Signals.FlaggedAgents(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range flagged.Agents {
		names = append(names, f.AgentID)
	}
	if !slices.Equal(names, []string{"below"}) {
		t.Fatalf("flagged %v, want only below", names)
	}
}
