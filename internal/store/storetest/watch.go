package storetest

import (
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// WatchHarness connects RunWatch to a back end implementing
// service.CacheWatcher.
type WatchHarness struct {
	// Open returns a new, migrated, empty store (closed when the test
	// ends).
	Open func(t *testing.T) service.Backend
	// Reopen returns another handle on s's database, sharing nothing with
	// s in this process: what another process would hold. The caller
	// closes it.
	Reopen func(t *testing.T, s service.Backend) service.Backend
	// Delay is the longest a watch may take to learn of a commit made
	// through another handle: 0 when it must know at once.
	Delay time.Duration
	// PerAgent is true when the watch tells agents apart: a commit that
	// concerns only one agent leaves marks unchanged for the others.
	PerAgent bool
}

// RunWatch checks a back end's ledger.CacheWatch: marks hold while nothing is
// written, and every commit that can change a cache stamp, through any
// handle, un-holds them within the back end's delay (at once for writes
// reported with Wrote), as does every write to an agent's appeals.
func RunWatch(t *testing.T, h WatchHarness) {
	s := h.Open(t)
	other := h.Reopen(t, s)
	t.Cleanup(func() { other.Close() })
	w := watchOf(t, s)

	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	ingest(t, other, "op-a",
		conduit("a1", "a", ledger.Verified, start, end),
		conduit("b1", "b", ledger.Verified, start, end))
	issue := func(sig string) ledger.IssueFunc {
		return func(*ledger.ScoreEntry) ([]byte, string, error) { return []byte(`{"sig":"` + sig + `"}`), sig, nil }
	}
	for _, agent := range []string{"a", "b"} {
		if _, err := other.RefreshScore(ctx(t), agent, base, issue(agent+"-1")); err != nil {
			t.Fatal(err)
		}
	}
	// Everything so far is known once a mark holds for a while.
	mark := func() uint64 {
		t.Helper()
		deadline := time.Now().Add(h.Delay + 5*time.Second)
		for {
			m, ok := w.Mark()
			if ok {
				time.Sleep(settle)
				if w.Unchanged("a", m) && w.Unchanged("b", m) {
					return m
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no mark holds for %s", settle)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// changed waits up to the delay for the watch to report a change of
	// agent since m.
	changed := func(what, agent string, m uint64) {
		t.Helper()
		deadline := time.Now().Add(h.Delay)
		for w.Unchanged(agent, m) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: agent %s unchanged after %s", what, agent, h.Delay)
			}
			time.Sleep(time.Millisecond)
		}
	}
	holds := func(what, agent string, m uint64) {
		t.Helper()
		time.Sleep(settle)
		if !w.Unchanged(agent, m) {
			t.Fatalf("%s: agent %s reported changed", what, agent)
		}
	}

	m := mark()
	holds("nothing written", "a", m)

	// Another handle's terminal report.
	ingest(t, other, "op-a", conduit("a2", "a", ledger.Failed, start, end))
	changed("another handle's terminal report", "a", m)
	if h.PerAgent {
		holds("a terminal report of another agent", "b", m)
	}

	// A non-terminal report changes no stamp; a back end that tells
	// agents apart must not report it.
	if h.PerAgent {
		m = mark()
		ingest(t, other, "op-a", conduit("a3", "a", ledger.Running, start, time.Time{}))
		holds("a non-terminal report", "a", m)
	}

	// Another handle replaces b's passport, then drops every passport.
	m = mark()
	if _, err := other.RefreshScore(ctx(t), "b", base.Add(time.Minute), issue("b-2")); err != nil {
		t.Fatal(err)
	}
	changed("another handle's new passport", "b", m)
	m = mark()
	if _, err := other.RecomputeAll(ctx(t), base.Add(2*time.Minute), false); err != nil {
		t.Fatal(err)
	}
	changed("another handle's recompute", "b", m)

	// Another handle's visibility or consent choice changes what the
	// public is shown.
	m = mark()
	if err := other.SetVisibility(ctx(t), "b", ledger.VisibilityUnlisted, base.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	changed("another handle's visibility choice", "b", m)
	if h.PerAgent {
		holds("another agent's visibility choice", "a", m)
	}
	m = mark()
	if err := other.RecordConsent(ctx(t), "b", "1", "agent:b", base.Add(4*time.Minute)); err != nil {
		t.Fatal(err)
	}
	changed("another handle's consent", "b", m)

	// Another handle files an appeal against b's passport, then acts on
	// it: an agent's public page names its open appeals.
	m = mark()
	filed, err := appeal.New(appeal.Filing{ID: "apl-w", PassportID: "p-b", Grounds: appeal.IncorrectStatus, Statement: "b1 failed",
		Events: []ledger.EventKey{{Type: ledger.ConduitSession, ID: "b1"}}, By: "op-a", At: base.Add(5 * time.Minute)},
		ledger.IssuedPassport{ID: "p-b", AgentID: "b", ComputedAt: base})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.CreateAppeal(ctx(t), filed); err != nil {
		t.Fatal(err)
	}
	changed("another handle's appeal", "b", m)
	if h.PerAgent {
		holds("another agent's appeal", "a", m)
	}
	m = mark()
	rejected, err := appeal.Apply(filed, appeal.Reject, "op-a", base.Add(6*time.Minute), "no")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.SaveAppeal(ctx(t), rejected, appeal.Submitted, nil, nil); err != nil {
		t.Fatal(err)
	}
	changed("another handle's decision on an appeal", "b", m)

	// This handle's own writes, reported with Wrote: at once.
	m = mark()
	ingest(t, s, "op-a", conduit("a4", "a", ledger.Failed, start, end))
	w.Wrote([]string{"a"})
	if w.Unchanged("a", m) {
		t.Fatal("own terminal report reported with Wrote: a unchanged")
	}
	m = mark()
	w.Wrote([]string{"a"})
	if w.Unchanged("a", m) {
		t.Fatal("Wrote: a unchanged")
	}
	if h.PerAgent && !w.Unchanged("b", m) {
		t.Fatal("Wrote(a): b reported changed")
	}

	// A closed store's watch vouches for nothing.
	third := h.Reopen(t, s)
	w3 := watchOf(t, third)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := w3.Mark(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch of a fresh handle never vouches")
		}
		time.Sleep(10 * time.Millisecond)
	}
	m3, _ := w3.Mark()
	if err := third.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := w3.Mark(); ok || w3.Unchanged("a", m3) {
		t.Fatal("the watch of a closed store still vouches")
	}
	if third.(service.CacheWatcher).CacheWatch() != nil {
		t.Fatal("a closed store returns a watch")
	}
}

// settle is how long RunWatch watches a mark that must hold: past a
// PostgreSQL heartbeat, and well past the time a notification takes in
// practice (the delay is a bound for slow machines, not the expected time).
const settle = 300 * time.Millisecond

func watchOf(t *testing.T, s service.Backend) ledger.CacheWatch {
	t.Helper()
	cw, ok := s.(service.CacheWatcher)
	if !ok {
		t.Fatalf("%T does not implement service.CacheWatcher", s)
	}
	w := cw.CacheWatch()
	if w == nil {
		t.Fatalf("%T.CacheWatch() is nil", s)
	}
	return w
}
