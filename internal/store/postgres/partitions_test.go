package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// TestPrunePartitions: retention drops a partition closed before the
// cutoff whole, moving the rows still live into the current partition (an
// event still open, and what follows it in its chain), deletes the pruned
// rows of partitions it keeps, and leaves the same chains, anchors, counts
// and reports as row deletion. While a drop cannot get its locks, the
// pruned rows wait, dead, in their partition, and nothing reads them: the
// walk verifies, a chain starts after its anchor, a correction does not
// find a pruned event.
func TestPrunePartitions(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	now := time.Now().UTC().Truncate(time.Second)
	old := now.Add(-200 * 24 * time.Hour)
	cutoff, err := ledger.RetentionCutoff(now, ledger.Window)
	if err != nil {
		t.Fatal(err)
	}
	ev := func(id, agent string, st ledger.Status, start, end time.Time) ledger.Event {
		return ledger.Event{Type: ledger.ConduitSession, ID: id, AgentID: agent, BuyerID: "old-buyer", Status: st, StartedAt: start, EndedAt: end}
	}
	ingest := func(evs ...ledger.Event) {
		t.Helper()
		out, err := s.Ingest(ctx, ledger.Batch{Operator: "op-1", Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range out {
			if o.Status != ledger.OutcomeAccepted {
				t.Fatalf("event %d: %+v", i, o)
			}
		}
	}
	// Partition 1, closed 150 days ago: a's old events (pruned), b's old
	// event then an open one (b's records stop at it: all live), d's
	// first old event.
	var evs []ledger.Event
	for i := range 50 {
		evs = append(evs, ev(fmt.Sprintf("a-%d", i), "a", ledger.Verified, old, old.Add(time.Hour)))
	}
	evs = append(evs, ev("b-old", "b", ledger.Verified, old, old.Add(time.Hour)),
		ev("b-open", "b", ledger.Running, old, time.Time{}),
		ev("b-after", "b", ledger.Verified, old, old.Add(2*time.Hour)),
		ev("d-old-1", "d", ledger.Verified, old, old.Add(time.Hour)))
	ingest(evs...)
	if p, err := s.RotatePartitions(ctx, now.Add(-150*24*time.Hour)); err != nil || p != 2 {
		t.Fatalf("rotate: %d %v", p, err)
	}
	// Partition 2, current: b's open event ends (recently), d's second old
	// event comes late (pruned by deleting its rows), e's recent event.
	ingest(ev("b-open", "b", ledger.Verified, old, now.Add(-time.Hour)),
		ev("d-old-2", "d", ledger.Failed, old, old.Add(2*time.Hour)),
		ev("e-new", "e", ledger.Verified, now.Add(-2*time.Hour), now.Add(-time.Hour)))

	counts := func() map[string]score.Counts {
		out := map[string]score.Counts{}
		for _, a := range []string{"a", "b", "d", "e"} {
			c, err := s.Counts(ctx, a, now)
			if err != nil {
				t.Fatal(err)
			}
			out[a] = c
		}
		return out
	}
	before := counts()
	verify := func(when string) {
		t.Helper()
		rep, err := s.VerifyLedger(ctx)
		if err != nil || len(rep.Broken) != 0 {
			t.Fatalf("%s: verify %+v %v", when, rep.Broken, err)
		}
	}
	verify("before")

	// A long reader holds the tables: the drop cannot get its locks.
	blocker, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { blocker.Rollback(ctx) }) // before the pool closes
	if _, err := blocker.Exec(ctx, `LOCK TABLE conduit_sessions IN ACCESS SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Prune(ctx, cutoff, now)
	if !errors.Is(err, errkind.ErrUnavailable) {
		t.Fatalf("prune with the tables held: %+v %v, want unavailable", rep, err)
	}
	verify("pruned rows waiting in their partition")
	rows, err := s.Chain(ctx, "a")
	if err != nil || len(rows) != 1 || rows[0].Record.Type != ledger.SummaryType || rows[0].Anchor.Seq != 50 {
		t.Fatalf("a's chain with its pruned rows waiting: %d rows, first %+v, %v", len(rows), rows[0].Record, err)
	}
	_, _, err = s.Correct(ctx, ledger.CorrectionRequest{EventType: ledger.ConduitSession, EventID: "a-3", Action: ledger.ActionVoid,
		Reason: "late", By: "op-1", At: now}, nil)
	if !errors.Is(err, errkind.ErrNotFound) {
		t.Fatalf("a correction of a pruned event: %v, want not found", err)
	}
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// Unblocked: the next prune finds no chain to prune, drops partition 1
	// and rotates (partition 2 is 150 days old).
	rep, err = s.Prune(ctx, cutoff, now)
	if err != nil || rep.Agents != 0 {
		t.Fatalf("second prune: %+v %v", rep, err)
	}
	parts, err := s.Partitions(ctx)
	if err != nil || len(parts) != 2 || parts[0].Period != 2 || parts[1].Period != 3 || !parts[1].ClosedAt.IsZero() {
		t.Fatalf("partitions after the drop: %+v %v", parts, err)
	}
	verify("after the drop")
	if after := counts(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("counts changed: %v, were %v", after, before)
	}
	dump := (tamperer{}).Dump(t, s)
	for _, gone := range []string{"a-0", "a-49", "d-old-1", "d-old-2"} {
		if strings.Contains(dump, gone+",") || strings.Contains(dump, gone+")") {
			t.Errorf("%s is still stored", gone)
		}
	}
	// b's records (before its open event and after) were moved, whole.
	var bRecords, bEvents int
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM ledger_records_p2 WHERE agent_id = 'b'),
	    (SELECT count(*) FROM conduit_sessions_p2 WHERE agent_id = 'b')`).Scan(&bRecords, &bEvents); err != nil {
		t.Fatal(err)
	}
	if bRecords != 4 || bEvents != 2 {
		t.Errorf("b in partition 2: %d records, %d events; want 4 and 2", bRecords, bEvents)
	}
	as, err := s.Anchors(ctx)
	if err != nil || len(as) != 3 || as["a"].Seq != 50 || as["b"].Seq != 1 || as["d"].Seq != 2 {
		t.Errorf("anchors %+v %v", as, err)
	}
	// A re-sent report of a dropped event is a new one, as after a row
	// prune.
	ingest(ev("a-3", "a", ledger.Verified, old, old.Add(time.Hour)))
	verify("after a re-sent report")
}
