package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// testChangedSince: the ledger as it stood at an instant — reports by their
// received time, corrections always applied — gives the counts a passport issued
// then carried, and names the events changed since.
func testChangedSince(t *testing.T, h Harness) {
	s := h.Open(t)
	cf := s
	ended := base.Add(-48 * time.Hour)
	t1, t2, t3, t4 := base.Add(-24*time.Hour), base.Add(-12*time.Hour), base.Add(-6*time.Hour), base.Add(-3*time.Hour)
	in := func(at time.Time, events ...ledger.Event) {
		t.Helper()
		out, err := s.Ingest(ctx(t), ledger.Batch{Operator: "op-a", Events: events, ReceivedAt: at, MaxSkew: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			if o.Status != ledger.OutcomeAccepted {
				t.Fatalf("ingest at %s: %+v", at, out)
			}
		}
	}
	start := ended.Add(-time.Hour)
	in(t1, conduit("c1", "a", ledger.Verified, start, ended), ap2("t1", "a", ledger.Settled, start, ended),
		conduit("c2", "a", ledger.Running, start, time.Time{}))
	in(t2, conduit("c2", "a", ledger.Failed, start, ended), conduit("c3", "b", ledger.Verified, start, ended))
	mv := correction(ledger.ActionReattribute, ledger.ConduitSession, "c3", t3)
	mv.AgentID = "a"
	correct(t, s, mv, nil)
	st := correction(ledger.ActionStatus, ledger.AP2Transaction, "t1", t4)
	st.Status = ledger.Disputed
	correct(t, s, st, nil)

	cs := func(n ...int64) score.Counts {
		return score.Counts{ConduitTotal: n[0], ConduitSuccess: n[1], AP2Total: n[2], AP2Success: n[3]}
	}
	// Corrections apply at every instant; reports as they were received.
	for _, tc := range []struct {
		issued  time.Time
		changed string
		counts  score.Counts
	}{
		{t1.Add(-time.Second), "[ap2_transaction/t1 conduit_session/c1 conduit_session/c2 conduit_session/c3]", cs(0, 0, 0, 0)},
		{t1, "[conduit_session/c2 conduit_session/c3]", cs(1, 1, 1, 0)},
		{t2, "[]", cs(3, 2, 1, 0)},
		{t4, "[]", cs(3, 2, 1, 0)},
	} {
		changed, counts, err := cf.ChangedSince(ctx(t), "a", base, tc.issued)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, k := range changed {
			names = append(names, string(k.Type)+"/"+k.ID)
		}
		if got := fmt.Sprint(names); got != tc.changed || counts != tc.counts {
			t.Errorf("issued %s: changed %s counts %+v, want %s %+v", tc.issued, got, counts, tc.changed, tc.counts)
		}
	}
	// c3, reported for b at t2, was moved to a: corrected, b's window
	// never held it, then or now.
	for _, at := range []time.Time{t1, t2} {
		if changed, counts, err := cf.ChangedSince(ctx(t), "b", base, at); err != nil || len(changed) != 0 || counts != cs(0, 0, 0, 0) {
			t.Errorf("b at %s: %v %+v %v", at, changed, counts, err)
		}
	}
	// A window that ends before the events ended holds none of them.
	if changed, counts, err := cf.ChangedSince(ctx(t), "a", ended.Add(-time.Second), t1); err != nil || len(changed) != 0 || counts != (score.Counts{}) {
		t.Errorf("an earlier window: %v %+v %v", changed, counts, err)
	}
	if _, _, err := cf.ChangedSince(ctx(t), "nobody", base, t1); errkind.Of(err) != errkind.NotFound {
		t.Errorf("unknown agent: %v", err)
	}
}
