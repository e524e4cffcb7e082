package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// testPrune: retention removes the prefix of each chain whose events ended
// before the cutoff, with their rows and buyers, leaves an anchor and a
// summary of their counts; the ledger still verifies, no score in the
// window changes, a second prune finds nothing new, later old events are
// pruned with the first summary carried, and tampering with an anchor or a
// summary is caught.
func testPrune(t *testing.T, h Harness) {
	s := h.Open(t)
	old := base.Add(-200 * 24 * time.Hour)
	cutoff, err := ledger.RetentionCutoff(base, ledger.Window)
	if err != nil {
		t.Fatal(err)
	}
	at := func(e ledger.Event, buyer string) ledger.Event { e.BuyerID = buyer; return e }
	ingest(t, s, "op-a",
		at(conduit("a-old-1", "a", ledger.Verified, old, old.Add(time.Hour)), "old-buyer-9"),
		at(conduit("a-old-2", "a", ledger.Failed, old, old.Add(2*time.Hour)), "old-buyer-9"),
		at(ap2("a-old-3", "a", ledger.Settled, old, old.Add(3*time.Hour)), "old-buyer-9"),
		at(ap2("a-old-4", "a", ledger.Settled, old, old.Add(4*time.Hour)), "old-buyer-9"),
		conduit("a-new-1", "a", ledger.Verified, base.Add(-2*time.Hour), base.Add(-time.Hour)),
		at(conduit("a-old-5", "a", ledger.Verified, old, old.Add(5*time.Hour)), "old-buyer-9"), // after a recent one: kept
		at(conduit("b-old-1", "b", ledger.Verified, old, old.Add(time.Hour)), "old-buyer-9"),
		conduit("c-old-1", "c", ledger.Verified, old, old.Add(time.Hour)),
	)
	cb := correction(ledger.ActionStatus, ledger.AP2Transaction, "a-old-3", base.Add(-time.Hour))
	cb.Status = ledger.Refunded
	correct(t, s, cb, nil)
	v := correction(ledger.ActionVoid, ledger.AP2Transaction, "a-old-4", base.Add(-time.Hour))
	correct(t, s, v, nil)
	mv := correction(ledger.ActionReattribute, ledger.ConduitSession, "c-old-1", base.Add(-time.Hour))
	mv.AgentID = "b"
	correct(t, s, mv, nil)
	mustVerify(t, s)
	counts := func() map[string]score.Counts {
		out := map[string]score.Counts{}
		for _, id := range []string{"a", "b", "c"} {
			c, err := s.Counts(ctx(t), id, base)
			if err != nil {
				t.Fatal(err)
			}
			out[id] = c
		}
		return out
	}
	before := counts()

	rep, err := s.Prune(ctx(t), cutoff, base)
	if err != nil {
		t.Fatal(err)
	}
	// a: a-old-1 and a-old-2 (a-new-1 stops the prefix at 4, and a-old-3
	// and a-old-4 were corrected after it, so they stay whole); b: b-old-1,
	// then the moved c-old-1's correction stops it.
	if rep.Agents != 2 || rep.Events != 3 || rep.Records != 3 {
		t.Errorf("report %+v, want 2 chains, 3 events, 3 records", rep)
	}
	mustVerify(t, s)
	if after := counts(); after != nil {
		for id, c := range after {
			if c != before[id] {
				t.Errorf("counts of %s changed: %+v, were %+v", id, c, before[id])
			}
		}
	}
	as, err := s.Anchors(ctx(t))
	if err != nil || len(as) != 2 || as["a"].Seq != 2 || as["b"].Seq != 1 {
		t.Errorf("anchors %+v %v", as, err)
	}
	if a, err := s.Agent(ctx(t), "a"); err != nil || a.PrunedThrough != 2 {
		t.Errorf("agent a: pruned through %d, want 2 (%v)", a.PrunedThrough, err)
	}
	rows, err := s.Chain(ctx(t), "a")
	if err != nil || rows[0].Anchor != as["a"] || rows[0].Record.Seq != 3 || rows[len(rows)-1].Summary == nil {
		t.Errorf("chain of a after the prune: starts at %d, anchor %+v (want %+v), %v", rows[0].Record.Seq, rows[0].Anchor, as["a"], err)
	}
	dump := h.Tamper.Dump(t, s)
	for _, gone := range []string{"a-old-1", "a-old-2", "b-old-1"} {
		if strings.Contains(dump, gone) {
			t.Errorf("%s is still stored", gone)
		}
	}
	for _, kept := range []string{"a-old-3", "a-old-4", "a-old-5", "a-new-1", "c-old-1"} {
		if !strings.Contains(dump, kept) {
			t.Errorf("%s was pruned", kept)
		}
	}
	if n := strings.Count(dump, "old-buyer-9"); n != 3 {
		t.Errorf("the old buyer is named %d times, want 3 (the rows kept)", n)
	}
	if rep, err := s.Prune(ctx(t), cutoff, base.Add(time.Minute)); err != nil || rep.Agents != 0 {
		t.Errorf("a second prune: %+v %v", rep, err)
	}
	// b's next old event is pruned with the first summary carried.
	ingest(t, s, "op-a", conduit("b-old-2", "b", ledger.Failed, old, old.Add(6*time.Hour)))
	if rep, err := s.Prune(ctx(t), cutoff, base.Add(2*time.Minute)); err != nil || rep.Agents != 0 {
		t.Errorf("b-old-2 comes after the moved c-old-1, which stays: %+v %v", rep, err)
	}
	ingest(t, s, "op-a", conduit("d-old-1", "d", ledger.Verified, old, old.Add(time.Hour)))
	if rep, err := s.Prune(ctx(t), cutoff, base.Add(3*time.Minute)); err != nil || rep.Agents != 1 || rep.Events != 1 {
		t.Errorf("d: %+v %v", rep, err)
	}
	ingest(t, s, "op-a", conduit("d-old-2", "d", ledger.Failed, old, old.Add(2*time.Hour)))
	if rep, err := s.Prune(ctx(t), cutoff, base.Add(4*time.Minute)); err != nil || rep.Agents != 1 || rep.Records != 2 {
		t.Errorf("d again, its first summary carried: %+v %v", rep, err)
	}
	mustVerify(t, s)
	// An erasure seals a pruned chain's summary record like any other.
	if _, err := s.Erase(ctx(t), ledger.ErasureRequest{AgentID: "d", Pseudonym: "erased-d", Identity: identity, ID: "era-d", By: "op-a", At: base}); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, s)

	// Tampering with what pruning left.
	h.Tamper.Exec(t, s, "UPDATE ledger_summary_rows SET count = count + 1 WHERE agent_id = 'erased-d'")
	h.Tamper.Exec(t, s, "UPDATE chain_anchors SET hash = "+h.Tamper.Bytes(make([]byte, 32))+" WHERE agent_id = 'a'")
	r, err := s.VerifyLedger(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	broken := map[string]bool{}
	for _, b := range r.Broken {
		broken[b.AgentID] = true
	}
	if !broken["a"] || !broken["erased-d"] || len(broken) != 2 {
		t.Errorf("tampering caught in %v, want a and erased-d", r.Broken)
	}
}
