package ledger

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// prune prunes every chain of the in-memory ledger at cutoff the way a back
// end does: the longest prefix of prunable events' records (and earlier
// summaries), their rows aggregated into a summary record at the head.
func (m *memLedger) prune(t *testing.T, cutoff, at time.Time) int {
	t.Helper()
	moved := map[EventKey]bool{}
	for _, c := range m.corrections {
		if c.Action == ActionReattribute {
			moved[EventKey{c.EventType, c.EventID}] = true
		}
	}
	pruned := 0
	for _, a := range slices.Sorted(maps.Keys(m.heads)) {
		st := PruneState{Head: m.heads[a], Anchor: m.anchors[a], Through: m.anchors[a].Seq}
		keys := map[EventKey]bool{}
		spans := map[EventKey]*EventSpan{}
		for _, r := range m.records[a] {
			k := EventKey{r.Type, r.EventID}
			if sp, ok := spans[k]; ok {
				sp.Last = r.Seq
			} else {
				spans[k] = &EventSpan{r.Seq, r.Seq}
			}
		}
		var sps []EventSpan
		for _, sp := range spans {
			sps = append(sps, *sp)
		}
		limit := m.anchors[a].Seq + int64(len(m.records[a]))
		for _, r := range m.records[a] {
			k := EventKey{r.Type, r.EventID}
			e, ok := m.events[k]
			if r.Type != SummaryType && (r.Type == ErasureType || !ok || !Prunable(&e, cutoff, moved[k])) {
				limit = r.Seq - 1
				break
			}
		}
		limit = PrunePrefix(limit, sps)
		n := 0
		for _, r := range m.records[a] {
			if r.Seq > limit {
				break
			}
			if r.Type == SummaryType {
				st.Carried = append(st.Carried, m.summaries[a][r.Seq].Rows...)
			} else {
				keys[EventKey{r.Type, r.EventID}] = true
			}
			st.Through, st.ThroughHash = r.Seq, r.Hash
			n++
		}
		for k := range keys {
			e := m.events[k]
			st.Rows = append(st.Rows, SummaryRow{Type: k.Type, Status: e.CurrentStatus(), Voided: e.IsVoided(), Month: MonthOf(e.Event.EndedAt), Count: 1, EscrowCents: e.Event.EscrowAmountCents})
		}
		plan, ok, err := DecidePrune(a, st, at)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		pruned++
		for _, r := range m.records[a][:n] {
			if r.Type == SummaryType {
				delete(m.summaries[a], r.Seq)
			}
		}
		for k := range keys {
			delete(m.events, k)
			for id, c := range m.corrections {
				if c.EventType == k.Type && c.EventID == k.ID {
					delete(m.corrections, id)
				}
			}
		}
		m.records[a] = append(slices.Clone(m.records[a][n:]), plan.Record)
		m.anchors[a] = plan.Anchor
		if m.summaries[a] == nil {
			m.summaries[a] = map[int64]*Summary{}
		}
		s := plan.Summary
		m.summaries[a][s.Seq] = &s
		m.heads[a] = plan.Head
	}
	return pruned
}

func TestRetentionCutoff(t *testing.T) {
	if _, err := RetentionCutoff(t0, 89*24*time.Hour); !errors.Is(err, errkind.ErrInvalid) {
		t.Errorf("89 days: %v", err)
	}
	if c, err := RetentionCutoff(t0, Window); err != nil || !c.Equal(t0.Add(-120*24*time.Hour)) {
		t.Errorf("90 days: %s %v", c, err)
	}
}

// TestPrune: pruned chains keep verifying from their anchors, the summary
// holds the pruned events' counts without their ids, later prunes carry
// earlier summaries, the window's counts are untouched, and tampering with
// an anchor or a summary breaks the chain.
func TestPrune(t *testing.T) {
	old, recent := t0.Add(-200*24*time.Hour), t0.Add(-10*24*time.Hour)
	cutoff := t0.Add(-120 * 24 * time.Hour)
	build := func(t *testing.T) *memLedger {
		m := newMemLedger()
		s1 := session("s1", "a", Verified, old)
		s1.StartedAt = old.Add(-time.Hour)
		s2 := session("s2", "a", Failed, old.Add(time.Hour))
		s2.StartedAt = old
		p1 := payment("p1", "a", Settled, old.Add(2*time.Hour))
		p1.StartedAt = old
		run := session("run", "a", Running, time.Time{})
		run.StartedAt = old
		m.ingest(t, Batch{Operator: "op", Events: []Event{s1, s2, p1}})
		cb := request(ActionStatus, AP2Transaction, "p1")
		cb.Status = Refunded
		if _, err := m.correct(t, cb); err != nil {
			t.Fatal(err)
		}
		b1 := session("b1", "b", Verified, old.Add(time.Hour))
		b1.StartedAt = old
		s3 := session("s3", "a", Verified, recent)
		s3.StartedAt = recent.Add(-time.Hour)
		out := m.ingest(t, Batch{Operator: "op", Events: []Event{s3, run, b1}})
		if st := statuses(out); slices.ContainsFunc(st, func(s OutcomeStatus) bool { return s != OutcomeAccepted }) {
			t.Fatalf("ingest: %v", out)
		}
		// A correction of s2 after the recent s3: s2 stays whole.
		fix := request(ActionStatus, ConduitSession, "s2")
		fix.Status = Verified
		if _, err := m.correct(t, fix); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := build(t)
	before, _ := m.counts("a", t0)
	if n := m.prune(t, cutoff, t0); n != 2 {
		t.Fatalf("pruned %d chains, want a and b", n)
	}
	if rep := m.verify(t); len(rep.Broken) != 0 {
		t.Fatalf("after the prune: %+v", rep.Broken)
	}
	if got, _ := m.counts("a", t0); got != before {
		t.Errorf("counts changed: %+v, were %+v", got, before)
	}
	s := m.summaries["a"][m.heads["a"].Seq]
	if s == nil || s.PrunedThrough != 1 || len(s.Rows) != 1 {
		t.Fatalf("summary %+v", s)
	}
	if got := fmt.Sprint(s.Rows); !strings.Contains(got, "conduit_session VERIFIED false") || strings.Contains(got, "s1") {
		t.Errorf("rows %s", got)
	}
	if _, ok := m.events[EventKey{ConduitSession, "s1"}]; ok {
		t.Error("s1 kept")
	}
	// s2 is corrected after s3, and p1 comes after s2: both stay.
	for _, k := range []EventKey{{ConduitSession, "s2"}, {AP2Transaction, "p1"}} {
		if _, ok := m.events[k]; !ok {
			t.Errorf("%v pruned", k)
		}
	}
	if _, ok := m.events[EventKey{ConduitSession, "s3"}]; !ok {
		t.Error("a recent event was pruned")
	}
	// The running session blocks the rest of a's chain; once it ends
	// (long ago), a second prune carries the first summary.
	if n := m.prune(t, cutoff, t0.Add(time.Hour)); n != 0 {
		t.Errorf("nothing new to prune, %d chains pruned", n)
	}
	run := session("run", "a", Timeout, old.Add(3*time.Hour))
	run.StartedAt = old
	m.ingest(t, Batch{Operator: "op", Events: []Event{run}})
	if rep := m.verify(t); len(rep.Broken) != 0 {
		t.Fatalf("after a report: %+v", rep.Broken)
	}
	// b's next events, once old, are pruned with its first summary carried.
	b2 := session("b2", "b", Failed, old.Add(5*time.Hour))
	b2.StartedAt = old
	m.ingest(t, Batch{Operator: "op", Events: []Event{b2}})
	if n := m.prune(t, cutoff, t0.Add(2*time.Hour)); n != 1 {
		t.Fatalf("second prune: %d chains", n)
	}
	if s := m.summaries["b"][m.heads["b"].Seq]; s == nil || len(m.summaries["b"]) != 1 || len(s.Rows) != 2 || m.anchors["b"].Seq != 3 {
		t.Errorf("b's carried summary %+v (%d summaries), anchor %+v", s, len(m.summaries["b"]), m.anchors["b"])
	}
	if rep := m.verify(t); len(rep.Broken) != 0 {
		t.Fatalf("after the second prune: %+v", rep.Broken)
	}

	// Tampering.
	for name, tamper := range map[string]func(m *memLedger){
		"anchor": func(m *memLedger) { a := m.anchors["a"]; a.Hash[0] ^= 1; m.anchors["a"] = a },
		"summary count": func(m *memLedger) {
			m.summaries["a"][m.heads["a"].Seq].Rows[0].Count++
		},
		"summary removed": func(m *memLedger) { delete(m.summaries["a"], m.heads["a"].Seq) },
		"anchor removed":  func(m *memLedger) { delete(m.anchors, "a") },
	} {
		t.Run(name, func(t *testing.T) {
			m := build(t)
			m.prune(t, cutoff, t0)
			tamper(m)
			if rep := m.verify(t); len(rep.Broken) == 0 || rep.Broken[0].AgentID != "a" {
				t.Errorf("not caught: %+v", rep.Broken)
			}
		})
	}

	// An erasure after a prune seals the summary record too.
	m = build(t)
	m.prune(t, cutoff, t0)
	if err := m.erase(t, ErasureRequest{AgentID: "a", Pseudonym: "erased-1", Identity: ident, ID: "era-1", By: "op", At: t0}); err != nil {
		t.Fatal(err)
	}
	if rep := m.verify(t); len(rep.Broken) != 0 {
		t.Fatalf("erasure after a prune: %+v", rep.Broken)
	}
	if _, _, err := DecidePrune("a", PruneState{Head: Head{Seq: 2}, Through: 3}, t0); errkind.Of(err) != errkind.Conflict {
		t.Errorf("past the head: %v", err)
	}
}
