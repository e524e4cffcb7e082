package storetest

import (
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

func stamp(t *testing.T, s service.Backend, agent string) ledger.ScoreStamp {
	t.Helper()
	st, err := s.CacheStamp(ctx(t), agent)
	if err != nil {
		t.Fatalf("CacheStamp(%s): %v", agent, err)
	}
	return st
}

// wantStamp checks that the stamp identifies exactly the entry CachedScore
// serves as of asOf.
func wantStamp(t *testing.T, s service.Backend, agent string, asOf time.Time) ledger.ScoreStamp {
	t.Helper()
	st := stamp(t, s, agent)
	e, ok := cached(t, s, agent, asOf)
	if !ok {
		t.Fatalf("%s: no entry answers %s", agent, asOf)
	}
	if !st.Current || !st.ComputedAt.Equal(e.ComputedAt) || !st.ValidUntil.Equal(e.ValidUntil) || st.Signature != e.Signature {
		t.Errorf("%s: stamp %+v, entry computed %s valid until %s signature %q", agent, st, e.ComputedAt, e.ValidUntil, e.Signature)
	}
	if !st.Answers(asOf) {
		t.Errorf("%s: stamp does not answer %s although the entry does", agent, asOf)
	}
	return st
}

// testCacheStamp: the stamp is what a process holding a passport relies on
// to serve it again without reading it, so every change that stops
// CachedScore serving an entry must change or un-current the stamp.
func testCacheStamp(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	if _, err := s.CacheStamp(ctx(t), "ghost"); !isNotFound(err) {
		t.Errorf("unknown agent: %v, want not found", err)
	}
	ingest(t, s, "op-a",
		conduit("c1", "a", ledger.Verified, start, end),
		conduit("n1", "n", ledger.Verified, start, end))
	if st := stamp(t, s, "n"); st != (ledger.ScoreStamp{}) || st.Answers(base) {
		t.Errorf("never computed: stamp %+v, want zero", st)
	}

	issue := func(sig string) ledger.IssueFunc {
		return func(*ledger.ScoreEntry) ([]byte, string, error) { return []byte(`{"sig":"` + sig + `"}`), sig, nil }
	}
	if _, err := s.RefreshScore(ctx(t), "a", base, issue("sig-1")); err != nil {
		t.Fatal(err)
	}
	first := wantStamp(t, s, "a", base)
	if first.Signature != "sig-1" {
		t.Errorf("signature %q, want sig-1", first.Signature)
	}
	if first.Answers(first.ValidUntil) || first.Answers(base.Add(-time.Microsecond)) {
		t.Errorf("stamp %+v answers outside [computed_at, valid_until)", first)
	}

	// A refresh without a passport keeps the entry current, with none.
	refresh(t, s, "a", base.Add(time.Minute))
	if st := wantStamp(t, s, "a", base.Add(time.Minute)); st.Signature != "" {
		t.Errorf("entry without a passport: signature %q", st.Signature)
	}
	if _, err := s.RefreshScore(ctx(t), "a", base.Add(2*time.Minute), issue("sig-2")); err != nil {
		t.Fatal(err)
	}
	second := wantStamp(t, s, "a", base.Add(2*time.Minute))

	// A non-terminal report changes nothing.
	ingest(t, s, "op-a", conduit("c2", "a", ledger.Running, start, time.Time{}))
	if st := stamp(t, s, "a"); st != second {
		t.Errorf("after a non-terminal report: %+v, want %+v", st, second)
	}
	// A terminal report does.
	ingest(t, s, "op-a", conduit("c2", "a", ledger.Failed, start, end))
	if st := stamp(t, s, "a"); st.Current || st.Answers(base.Add(2*time.Minute)) {
		t.Errorf("after a terminal report: stamp %+v still current", st)
	}
	if _, err := s.RefreshScore(ctx(t), "a", base.Add(3*time.Minute), issue("sig-3")); err != nil {
		t.Fatal(err)
	}
	third := wantStamp(t, s, "a", base.Add(3*time.Minute))

	// The version alone decides: an entry whose ledger_seq is behind (a
	// refresh that lost the race with a batch) or ahead of the agent's
	// terminal_seq is not current, whatever its valid_until says.
	ledgerSeq, terminalSeq := h.Tamper.CacheVersion(t, s, "a")
	if ledgerSeq != terminalSeq {
		t.Fatalf("fresh entry at version %d, agent at %d", ledgerSeq, terminalSeq)
	}
	for _, v := range []int64{terminalSeq - 1, terminalSeq + 1} {
		setCacheVersion(t, h, s, "a", v, third.ValidUntil)
		if st := stamp(t, s, "a"); st.Current {
			t.Errorf("entry at version %d, agent at %d: stamp %+v is current", v, terminalSeq, st)
		}
		if _, ok := cached(t, s, "a", base.Add(3*time.Minute)); ok {
			t.Errorf("entry at version %d, agent at %d: served", v, terminalSeq)
		}
	}
	setCacheVersion(t, h, s, "a", terminalSeq, third.ValidUntil)
	if st := wantStamp(t, s, "a", base.Add(3*time.Minute)); st != third {
		t.Errorf("control: stamp %+v, want %+v", st, third)
	}
	// Other agents are unaffected throughout.
	if st := stamp(t, s, "n"); st.Current {
		t.Errorf("agent n: %+v", st)
	}
}
