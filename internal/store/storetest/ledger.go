package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

func testReady(t *testing.T, h Harness) {
	s := h.Open(t)
	if err := s.Ready(ctx(t)); err != nil {
		t.Fatalf("Ready on a migrated store: %v", err)
	}
	if _, err := s.Migrate(ctx(t)); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	if err := s.Ready(ctx(t)); err != nil {
		t.Fatalf("Ready after a second Migrate: %v", err)
	}
}

func testIngestNew(t *testing.T, h Harness) {
	s := h.Open(t)
	start := base.Add(-time.Hour)
	out := ingest(t, s, "op-a",
		conduit("c1", "agent-1", ledger.Verified, start, base.Add(-time.Minute)),
		ap2("t1", "agent-1", ledger.Settled, start, base.Add(-time.Minute)),
		conduit("c2", "agent-2", ledger.Pending, start, time.Time{}))
	wantOutcomes(t, out, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted)
	if got := counts(t, s, "agent-1", base); got != [4]int64{1, 1, 1, 1} {
		t.Errorf("counts %v, want [1 1 1 1]", got)
	}
	if got := counts(t, s, "agent-2", base); got != [4]int64{} {
		t.Errorf("a PENDING session counted: %v", got)
	}
	a, err := s.Agent(ctx(t), "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != "agent-1" || a.ChainLength != 2 || a.ChainHead == (ledger.Hash{}) || a.Visibility != ledger.VisibilityPublic {
		t.Errorf("Agent = %+v", a)
	}
	// The chain head is the hash chain of the two records, computed here
	// independently of the back end.
	var prev ledger.Hash
	for i, e := range []ledger.Event{conduit("c1", "agent-1", ledger.Verified, start, base.Add(-time.Minute)), ap2("t1", "agent-1", ledger.Settled, start, base.Add(-time.Minute))} {
		r := ledger.Record{Event: e, Operator: "op-a", Seq: int64(i + 1)}
		prev = ledger.Link(prev, r.Canonical())
	}
	if a.ChainHead != prev {
		t.Errorf("chain head %x, want %x", a.ChainHead, prev)
	}
	mustVerify(t, s)
}

func testIdempotent(t *testing.T, h Harness) {
	s := h.Open(t)
	e := conduit("c1", "agent-1", ledger.Verified, base.Add(-time.Hour), base.Add(-time.Minute))
	wantOutcomes(t, ingest(t, s, "op-a", e, e), ledger.OutcomeAccepted, ledger.OutcomeDuplicate)
	wantOutcomes(t, ingest(t, s, "op-a", e), ledger.OutcomeDuplicate)
	// The same instant in another offset is the same event.
	shifted := e
	shifted.StartedAt = e.StartedAt.In(time.FixedZone("x", 5*3600)).UTC()
	wantOutcomes(t, ingest(t, s, "op-a", shifted), ledger.OutcomeDuplicate)
	if n := chainLength(t, s, "agent-1"); n != 1 {
		t.Errorf("duplicates added chain records: length %d", n)
	}
	if got := counts(t, s, "agent-1", base); got != [4]int64{1, 1, 0, 0} {
		t.Errorf("counts %v after re-sends", got)
	}
	mustVerify(t, s)
}

func testTransitions(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	wantOutcomes(t, ingest(t, s, "op-a",
		conduit("c1", "a", ledger.Pending, start, time.Time{}),
		conduit("c1", "a", ledger.Running, start, time.Time{}),
		conduit("c1", "a", ledger.Verified, start, end),
		conduit("c2", "a", ledger.Pending, start, time.Time{}),
		conduit("c2", "a", ledger.Failed, start, end), // skipping RUNNING is forward
	), ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted)
	steps := []ledger.Status{ledger.Negotiating, ledger.Held, ledger.Executing, ledger.Delivered, ledger.Settled}
	for _, st := range steps {
		var ended time.Time
		if st.Terminal() {
			ended = end
		}
		wantOutcomes(t, ingest(t, s, "op-a", ap2("t1", "a", st, start, ended)), ledger.OutcomeAccepted)
	}
	wantOutcomes(t, ingest(t, s, "op-a",
		ap2("t2", "a", ledger.Held, start, time.Time{}),
		ap2("t2", "a", ledger.Cancelled, start, end),
		ap2("t3", "a", ledger.Delivered, start, time.Time{}),
		ap2("t3", "a", ledger.Disputed, start, end),
	), ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted)
	if got := counts(t, s, "a", base); got != [4]int64{2, 1, 2, 1} {
		t.Errorf("counts %v, want [2 1 2 1]", got)
	}
	if n := chainLength(t, s, "a"); n != 14 {
		t.Errorf("chain length %d, want 14 (one record per accepted report)", n)
	}
	mustVerify(t, s)
}

func testConflicts(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	c := conduit("c1", "a", ledger.Verified, start, end)
	p := ap2("t1", "a", ledger.Held, start, time.Time{})
	r := conduit("c2", "a", ledger.Running, start, time.Time{})
	wantOutcomes(t, ingest(t, s, "op-a", c, p, r), ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted)
	before, err := s.Agent(ctx(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	change := func(e ledger.Event, f func(*ledger.Event)) ledger.Event { f(&e); return e }
	bad := []struct {
		name     string
		operator string
		e        ledger.Event
	}{
		{"other agent", "op-a", change(c, func(e *ledger.Event) { e.AgentID = "b" })},
		{"other buyer", "op-a", change(c, func(e *ledger.Event) { e.BuyerID = "buyer-2" })},
		{"no buyer", "op-a", change(c, func(e *ledger.Event) { e.BuyerID = "" })},
		{"other start", "op-a", change(c, func(e *ledger.Event) { e.StartedAt = start.Add(time.Microsecond) })},
		{"other end", "op-a", change(c, func(e *ledger.Event) { e.EndedAt = end.Add(time.Second) })},
		{"terminal to terminal", "op-a", change(c, func(e *ledger.Event) { e.Status = ledger.Failed })},
		{"earlier status, other start", "op-a", change(c, func(e *ledger.Event) {
			e.Status, e.EndedAt, e.StartedAt = ledger.Running, time.Time{}, start.Add(time.Second)
		})},
		{"earlier status, other operator", "op-b", change(p, func(e *ledger.Event) { e.Status = ledger.Negotiating })},
		{"other amount", "op-a", change(p, func(e *ledger.Event) { e.EscrowAmountCents++ })},
		{"other operator", "op-b", c},
		{"other operator transition", "op-b", change(r, func(e *ledger.Event) { e.Status, e.EndedAt = ledger.Verified, end })},
	}
	for _, b := range bad {
		out := ingest(t, s, b.operator, b.e)
		if out[0].Status != ledger.OutcomeRejected || errkind.Of(out[0].Err) != errkind.Conflict {
			t.Errorf("%s: outcome %v (%v), want a rejected conflict", b.name, out[0].Status, out[0].Err)
		}
	}
	after, err := s.Agent(ctx(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("rejected reports changed the agent: %+v -> %+v", before, after)
	}
	if got := counts(t, s, "a", base); got != [4]int64{1, 1, 0, 0} {
		t.Errorf("counts %v after rejected reports", got)
	}
	if _, err := s.Agent(ctx(t), "b"); !isNotFound(err) {
		t.Errorf("an agent named only by a rejected report was registered: %v", err)
	}
	// The valid transition still works after all that.
	wantOutcomes(t, ingest(t, s, "op-a", change(r, func(e *ledger.Event) { e.Status, e.EndedAt = ledger.Timeout, end })), ledger.OutcomeAccepted)
	mustVerify(t, s)
}

// testSuperseded: an export re-sent with each event's whole history, and
// statuses that arrive out of order, change nothing.
func testSuperseded(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	export := []ledger.Event{
		conduit("c1", "a", ledger.Pending, start, time.Time{}),
		conduit("c1", "a", ledger.Running, start, time.Time{}),
		conduit("c1", "a", ledger.Verified, start, end),
		ap2("t1", "a", ledger.Negotiating, start, time.Time{}),
		ap2("t1", "a", ledger.Held, start, time.Time{}),
		ap2("t1", "a", ledger.Executing, start, time.Time{}),
		ap2("t1", "a", ledger.Settled, start, end),
		conduit("c2", "a", ledger.Running, start, time.Time{}),
	}
	accepted := make([]ledger.OutcomeStatus, len(export))
	for i := range accepted {
		accepted[i] = ledger.OutcomeAccepted
	}
	wantOutcomes(t, ingest(t, s, "op-a", export...), accepted...)
	before, err := s.Agent(ctx(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	// The whole export again: the latest status of each event is a
	// duplicate, every earlier one superseded.
	wantOutcomes(t, ingest(t, s, "op-a", export...),
		ledger.OutcomeSuperseded, ledger.OutcomeSuperseded, ledger.OutcomeDuplicate,
		ledger.OutcomeSuperseded, ledger.OutcomeSuperseded, ledger.OutcomeSuperseded, ledger.OutcomeDuplicate,
		ledger.OutcomeDuplicate)
	// A final status that arrived before its earlier ones, in one batch and
	// across batches.
	wantOutcomes(t, ingest(t, s, "op-a",
		conduit("c3", "a", ledger.Failed, start, end),
		conduit("c3", "a", ledger.Running, start, time.Time{}),
		ap2("t2", "a", ledger.Refunded, start, end),
	), ledger.OutcomeAccepted, ledger.OutcomeSuperseded, ledger.OutcomeAccepted)
	wantOutcomes(t, ingest(t, s, "op-a",
		ap2("t2", "a", ledger.Held, start, time.Time{}),
		ap2("t2", "a", ledger.Delivered, start, time.Time{}),
	), ledger.OutcomeSuperseded, ledger.OutcomeSuperseded)
	after, err := s.Agent(ctx(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	if after.ChainLength != before.ChainLength+2 {
		t.Errorf("chain length %d -> %d, want only the two new events recorded", before.ChainLength, after.ChainLength)
	}
	if got := counts(t, s, "a", base); got != [4]int64{2, 1, 2, 1} {
		t.Errorf("counts %v, want [2 1 2 1]", got)
	}
	mustVerify(t, s)
}

// testClockSkew: a report dated after the batch's clock plus the allowance
// is rejected as invalid, naming the field; one inside the allowance is
// accepted.
func testClockSkew(t *testing.T, h Harness) {
	s := h.Open(t)
	skew := 5 * time.Minute
	batch := ledger.Batch{Operator: "op-a", ReceivedAt: base, MaxSkew: skew, Events: []ledger.Event{
		conduit("c1", "a", ledger.Verified, base.Add(-time.Hour), base.Add(skew)),
		conduit("c2", "a", ledger.Verified, base.Add(-time.Hour), base.Add(skew+time.Microsecond)),
		conduit("c3", "a", ledger.Running, base.Add(time.Hour), time.Time{}),
		ap2("t1", "a", ledger.Settled, base, time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)),
	}}
	out, err := s.Ingest(ctx(t), batch)
	if err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, out, ledger.OutcomeAccepted, ledger.OutcomeRejected, ledger.OutcomeRejected, ledger.OutcomeRejected)
	for i, field := range map[int]string{1: "completed_at", 2: "started_at", 3: "settled_at"} {
		var fe *ledger.FieldError
		if errkind.Of(out[i].Err) != errkind.Invalid || !errors.As(out[i].Err, &fe) || fe.Field != field {
			t.Errorf("event %d: %v, want an invalid %s", i, out[i].Err, field)
		}
	}
	if n := chainLength(t, s, "a"); n != 1 {
		t.Errorf("chain length %d, want 1", n)
	}
}

func testInvalid(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	bad := []ledger.Event{
		conduit("c1", "a", ledger.Verified, start, time.Time{}), // terminal without completed_at
		conduit("c2", "a", ledger.Running, start, end),          // completed_at while running
		conduit("c3", "a", ledger.Verified, end, start),         // ends before it starts
		conduit("c4", "a", ledger.Settled, start, end),          // AP2 status on Conduit
		conduit("c5", "bad agent", ledger.Verified, start, end), // invalid id
		conduit("", "a", ledger.Verified, start, end),           // empty id
		ap2("t1", "a", ledger.Settled, start, time.Time{}),      // terminal without settled_at
		{Type: "other", ID: "x", AgentID: "a", Status: ledger.Verified, StartedAt: start, EndedAt: end},
	}
	out := ingest(t, s, "op-a", bad...)
	for i, o := range out {
		if o.Status != ledger.OutcomeRejected || errkind.Of(o.Err) != errkind.Invalid {
			t.Errorf("event %d: outcome %v (%v), want a rejected invalid event", i, o.Status, o.Err)
		}
	}
	if _, err := s.Agent(ctx(t), "a"); !isNotFound(err) {
		t.Errorf("invalid events registered their agent: %v", err)
	}
	if _, err := s.Ingest(ctx(t), ledger.Batch{Operator: "bad operator", Events: []ledger.Event{conduit("c9", "a", ledger.Verified, start, end)}}); errkind.Of(err) != errkind.Invalid {
		t.Errorf("invalid operator: %v, want an invalid error", err)
	}
}

func testBatchAtomicity(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	// Rejected events do not stop the valid ones around them.
	out := ingest(t, s, "op-a",
		conduit("c1", "a", ledger.Verified, start, end),
		conduit("c2", "a", ledger.Verified, start, time.Time{}),
		conduit("c3", "a", ledger.Failed, start, end),
		conduit("c1", "a", ledger.Failed, start, end))
	wantOutcomes(t, out, ledger.OutcomeAccepted, ledger.OutcomeRejected, ledger.OutcomeAccepted, ledger.OutcomeRejected)
	if got := counts(t, s, "a", base); got != [4]int64{2, 1, 0, 0} {
		t.Errorf("counts %v, want [2 1 0 0]", got)
	}
	// A batch that cannot commit writes nothing at all.
	cancelled, cancel := context.WithCancel(ctx(t))
	cancel()
	if _, err := s.Ingest(cancelled, ledger.Batch{Operator: "op-a", Events: []ledger.Event{
		conduit("c4", "a", ledger.Verified, start, end), conduit("c5", "z", ledger.Verified, start, end),
	}}); err == nil {
		t.Fatal("Ingest with a cancelled context succeeded")
	}
	if got := counts(t, s, "a", base); got != [4]int64{2, 1, 0, 0} {
		t.Errorf("a failed batch changed counts: %v", got)
	}
	if _, err := s.Agent(ctx(t), "z"); !isNotFound(err) {
		t.Errorf("a failed batch registered an agent: %v", err)
	}
	mustVerify(t, s)
}

func testUnknownAgent(t *testing.T, h Harness) {
	s := h.Open(t)
	if _, err := s.Counts(ctx(t), "nobody", base); !isNotFound(err) {
		t.Errorf("Counts: %v, want not found", err)
	}
	if _, _, err := s.CachedScore(ctx(t), "nobody", base); !isNotFound(err) {
		t.Errorf("CachedScore: %v, want not found", err)
	}
	if _, err := s.RefreshScore(ctx(t), "nobody", base, nil); !isNotFound(err) {
		t.Errorf("RefreshScore: %v, want not found", err)
	}
	if _, err := s.Agent(ctx(t), "nobody"); !isNotFound(err) {
		t.Errorf("Agent: %v, want not found", err)
	}
	if err := s.SetVisibility(ctx(t), "nobody", ledger.VisibilityUnlisted, base); !isNotFound(err) {
		t.Errorf("SetVisibility: %v, want not found", err)
	}
}

func testWindowBoundaries(t *testing.T, h Harness) {
	s := h.Open(t)
	asOf := base
	lo := asOf.Add(-ledger.Window)
	us := time.Microsecond
	mk := func(i int, end time.Time, status ledger.Status) ledger.Event {
		return conduit(fmt.Sprintf("c%d", i), "a", status, end.Add(-time.Hour), end)
	}
	wantOutcomes(t, ingest(t, s, "op-a",
		mk(1, lo.Add(-us), ledger.Verified), // one microsecond too old
		mk(2, lo, ledger.Verified),          // exactly the window start: counted
		mk(3, lo.Add(us), ledger.Failed),
		mk(4, asOf, ledger.Verified),         // exactly as_of: counted
		mk(5, asOf.Add(us), ledger.Verified), // not yet happened
		ap2("t1", "a", ledger.Settled, lo.Add(-time.Hour), lo),
		ap2("t2", "a", ledger.Refunded, asOf.Add(-time.Hour), asOf),
		ap2("t3", "a", ledger.Settled, asOf.Add(-time.Hour), asOf.Add(us)),
	), ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted)
	if got := counts(t, s, "a", asOf); got != [4]int64{3, 2, 2, 1} {
		t.Errorf("counts at as_of %v, want [3 2 2 1]", got)
	}
	if got := counts(t, s, "a", asOf.Add(us)); got != [4]int64{3, 2, 2, 1} {
		// c2 and t1 leave, c5 and t3 enter
		t.Errorf("counts one microsecond later %v, want [3 2 2 1]", got)
	}
	if got := counts(t, s, "a", asOf.Add(2*us)); got != [4]int64{2, 2, 2, 1} {
		// c3 (FAILED) leaves too
		t.Errorf("counts two microseconds later %v, want [2 2 2 1]", got)
	}
	// Half a microsecond later, c2 and t1 (at the old start) are out, but c5
	// and t3 (one microsecond after as_of) have not happened yet.
	if got := counts(t, s, "a", asOf.Add(us/2)); got != [4]int64{2, 1, 1, 0} {
		t.Errorf("counts half a microsecond later %v, want [2 1 1 0]", got)
	}
	// Offsets other than UTC name the same instants.
	if got := counts(t, s, "a", asOf.In(time.FixedZone("x", -7*3600))); got != [4]int64{3, 2, 2, 1} {
		t.Errorf("counts with an as_of in another zone %v", got)
	}
}

func testStatuses(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	var evs []ledger.Event
	for i, st := range []ledger.Status{ledger.Pending, ledger.Running, ledger.Verified, ledger.Failed, ledger.Error, ledger.Timeout} {
		var e time.Time
		if st.Terminal() {
			e = end
		}
		evs = append(evs, conduit(fmt.Sprintf("c%d", i), "a", st, start, e))
	}
	for i, st := range []ledger.Status{ledger.Negotiating, ledger.Held, ledger.Executing, ledger.Delivered, ledger.Settled, ledger.Disputed, ledger.Refunded, ledger.Cancelled} {
		var e time.Time
		if st.Terminal() {
			e = end
		}
		evs = append(evs, ap2(fmt.Sprintf("t%d", i), "a", st, start, e))
	}
	for _, o := range ingest(t, s, "op-a", evs...) {
		if o.Status != ledger.OutcomeAccepted {
			t.Fatalf("outcome %v: %v", o.Status, o.Err)
		}
	}
	// Pitfall 4: VERIFIED+FAILED; SETTLED+DISPUTED+REFUNDED.
	if got := counts(t, s, "a", base); got != [4]int64{2, 1, 3, 1} {
		t.Errorf("counts %v, want [2 1 3 1]", got)
	}
}

// testConcurrent ingests overlapping streams from several goroutines: every
// event is accepted exactly once and the counts are exact.
func testConcurrent(t *testing.T, h Harness) {
	s := h.Open(t)
	const writers, events = 4, 60
	start := base.Add(-48 * time.Hour)
	stream := func(w int) []ledger.Event {
		var evs []ledger.Event
		for i := range events {
			// Every writer reports the same events (overlap), in a different
			// order and batch split, plus transitions of half of them.
			j := (i*7 + w*13) % events
			agent := fmt.Sprintf("agent-%d", j%3)
			end := start.Add(time.Duration(j) * time.Minute)
			if j%2 == 0 {
				evs = append(evs, conduit(fmt.Sprintf("c%d", j), agent, ledger.Running, start, time.Time{}))
			}
			st := ledger.Verified
			if j%5 == 0 {
				st = ledger.Failed
			}
			evs = append(evs, conduit(fmt.Sprintf("c%d", j), agent, st, start, end))
		}
		return evs
	}
	var wg sync.WaitGroup
	accepted := make([]int, writers)
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			evs := stream(w)
			for len(evs) > 0 {
				n := min(len(evs), 7+w)
				out, err := s.Ingest(context.Background(), ledger.Batch{Operator: "op-a", Events: evs[:n]})
				if err != nil {
					errs <- err
					return
				}
				for _, o := range out {
					if o.Status == ledger.OutcomeAccepted {
						accepted[w]++
					}
				}
				evs = evs[n:]
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Ingest: %v", err)
	}
	total := 0
	for _, n := range accepted {
		total += n
	}
	// Each event is accepted once as terminal; a RUNNING report is accepted
	// only if it arrived before the terminal one, so between 60 and 90.
	var want [3][4]int64
	for j := range events {
		a := j % 3
		want[a][0]++
		if j%5 != 0 {
			want[a][1]++
		}
	}
	var chain int64
	for a := range 3 {
		agent := fmt.Sprintf("agent-%d", a)
		if got := counts(t, s, agent, base); got != want[a] {
			t.Errorf("%s: counts %v, want %v", agent, got, want[a])
		}
		chain += chainLength(t, s, agent)
	}
	if chain != int64(total) || total < events || total > events+events/2 {
		t.Errorf("accepted %d reports, chains hold %d records (want equal, in %d..%d)", total, chain, events, events+events/2)
	}
	mustVerify(t, s)
}

// testReceivedAt: the server's clock is recorded in each accepted report's
// chain record, hashed with it, and an edit to it breaks the chain.
func testReceivedAt(t *testing.T, h Harness) {
	s := h.Open(t)
	at := base.Add(123456 * time.Microsecond)
	e := conduit("c1", "a", ledger.Verified, base.Add(-2*time.Hour), base.Add(-time.Hour))
	out, err := s.Ingest(ctx(t), ledger.Batch{Operator: "op-a", Events: []ledger.Event{e}, ReceivedAt: at, MaxSkew: time.Minute})
	if err != nil || out[0].Status != ledger.OutcomeAccepted {
		t.Fatalf("ingest: %+v %v", out, err)
	}
	a, err := s.Agent(ctx(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := ledger.Link(ledger.Hash{}, (&ledger.Record{Event: e, Operator: "op-a", Seq: 1, ReceivedAt: at}).Canonical()); a.ChainHead != want {
		t.Errorf("chain head %x, want the hash of the record with its received_at %x", a.ChainHead, want)
	}
	chain, err := s.Chain(ctx(t), "a")
	if err != nil || len(chain) != 1 || !chain[0].Record.ReceivedAt.Equal(at) {
		t.Fatalf("chain %+v %v", chain, err)
	}
	mustVerify(t, s)
	h.Tamper.Exec(t, s, "UPDATE ledger_records SET received_at = "+h.Tamper.Time(at.Add(48*time.Hour))+" WHERE agent_id = 'a'")
	if r, err := s.VerifyLedger(ctx(t)); err != nil || len(r.Broken) != 1 || r.Broken[0].Seq != 1 {
		t.Errorf("a moved received_at: %+v %v", r, err)
	}
}

func offer(id, agent string, status ledger.Status, started, decided time.Time) ledger.Event {
	return ledger.Event{Type: ledger.TaskOffer, ID: id, AgentID: agent, BuyerID: "buyer-1", Status: status, StartedAt: started, EndedAt: decided}
}

// testTaskOffers: task offers are chained like the other events, follow
// their own lifecycle, can be corrected, and never count in the score.
func testTaskOffers(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	wantOutcomes(t, ingest(t, s, "op-a",
		offer("o1", "a", ledger.Offered, start, time.Time{}),
		offer("o1", "a", ledger.Accepted, start, end),
		offer("o2", "a", ledger.Declined, start, end),
		offer("o1", "a", ledger.Offered, start, time.Time{}),
		offer("o2", "a", ledger.Accepted, start, end),
		conduit("c1", "a", ledger.Verified, start, end),
	), ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeSuperseded, ledger.OutcomeRejected, ledger.OutcomeAccepted)
	if got := counts(t, s, "a", base); got != [4]int64{1, 1, 0, 0} {
		t.Errorf("task offers counted: %v", got)
	}
	if n := chainLength(t, s, "a"); n != 4 {
		t.Errorf("chain length %d, want 4", n)
	}
	bad := offer("o3", "a", ledger.Offered, start, time.Time{})
	bad.BuyerID = ""
	wantOutcomes(t, ingest(t, s, "op-a", bad), ledger.OutcomeRejected)
	v := correction(ledger.ActionVoid, ledger.TaskOffer, "o2", base)
	correct(t, s, v, nil)
	mustVerify(t, s)
	deleteEvent(t, h, s, ledger.TaskOffer, "o1")
	if r, err := s.VerifyLedger(ctx(t)); err != nil || len(r.Broken) != 1 || r.Broken[0].Seq != 1 {
		t.Errorf("a deleted task offer: %+v %v", r, err)
	}
}
