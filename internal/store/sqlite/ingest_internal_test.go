package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

func TestChunkSQL(t *testing.T) {
	got := chunkSQL("INSERT INTO t VALUES ", "(?, ?1, ?, ?2)", " ON CONFLICT DO NOTHING", 2, 2, 3)
	want := "INSERT INTO t VALUES (?3, ?1, ?4, ?2), (?5, ?1, ?6, ?2), (?7, ?1, ?8, ?2) ON CONFLICT DO NOTHING"
	if got != want {
		t.Errorf("chunkSQL\n got %s\nwant %s", got, want)
	}
	if n := countNumbered("(?, ?1, ?, ?12)"); n != 2 {
		t.Errorf("countNumbered = %d", n)
	}
}

// TestIngestAcrossChunks sends batches larger than maxChunkRows that mix
// first reports, transitions of stored and of same-batch events,
// duplicates and conflicts over several agents, and checks every outcome,
// the stored rows and that each chain head is the chain of the accepted
// reports in the order they were sent.
func TestIngestAcrossChunks(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)
	const n = 3*maxChunkRows + 5
	heads := map[string]ledger.Hash{}
	seqs := map[string]int64{}
	accept := func(op string, e ledger.Event) {
		seqs[e.AgentID]++
		heads[e.AgentID] = ledger.Link(heads[e.AgentID], (&ledger.Record{Event: e, Operator: op, Seq: seqs[e.AgentID]}).Canonical())
	}
	conduit := func(i int, st ledger.Status) ledger.Event {
		e := ledger.Event{Type: ledger.ConduitSession, ID: fmt.Sprintf("c%03d", i), AgentID: fmt.Sprintf("agent-%d", i%7),
			Status: st, StartedAt: base.Add(-time.Duration(i) * time.Hour)}
		if st.Terminal() {
			e.EndedAt = base.Add(-time.Duration(i)*time.Hour + time.Minute)
		}
		return e
	}
	ap2 := func(i int, st ledger.Status) ledger.Event {
		e := ledger.Event{Type: ledger.AP2Transaction, ID: fmt.Sprintf("t%03d", i), AgentID: fmt.Sprintf("agent-%d", i%5),
			BuyerID: "buyer", Status: st, EscrowAmountCents: int64(i), StartedAt: base.Add(-time.Duration(i) * time.Hour)}
		if st.Terminal() {
			e.EndedAt = base.Add(-time.Duration(i)*time.Hour + time.Minute)
		}
		return e
	}
	var first []ledger.Event
	for i := range n {
		first = append(first, conduit(i, ledger.Running), ap2(i, ledger.Held))
	}
	out, err := s.Ingest(ctx, ledger.Batch{Operator: "op", Events: first})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out {
		if o.Status != ledger.OutcomeAccepted {
			t.Fatalf("first batch %d: %+v", i, o)
		}
		accept("op", first[i])
	}

	type want struct {
		status ledger.OutcomeStatus
		kind   errkind.Kind
	}
	var batch []ledger.Event
	var wants []want
	add := func(e ledger.Event, w want) { batch, wants = append(batch, e), append(wants, w) }
	for i := range n {
		add(conduit(i, ledger.Verified), want{status: ledger.OutcomeAccepted})  // stored row moves
		add(conduit(i, ledger.Verified), want{status: ledger.OutcomeDuplicate}) // again in the same batch
		add(ap2(i, ledger.Running), want{status: ledger.OutcomeRejected, kind: errkind.Invalid})
		add(ap2(i, ledger.Negotiating), want{status: ledger.OutcomeSuperseded}) // an earlier status
		add(ap2(n+i, ledger.Held), want{status: ledger.OutcomeAccepted})        // new ...
		add(ap2(n+i, ledger.Settled), want{status: ledger.OutcomeAccepted})     // ... and moved in the batch
		moved := conduit(i, ledger.Failed)
		moved.AgentID = "agent-x"
		add(moved, want{status: ledger.OutcomeRejected, kind: errkind.Conflict}) // another agent: registers nothing
	}
	out, err = s.Ingest(ctx, ledger.Batch{Operator: "op", Events: batch})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out {
		if o.Status != wants[i].status || (o.Status == ledger.OutcomeRejected && errkind.Of(o.Err) != wants[i].kind) {
			t.Fatalf("second batch %d (%s %s %s): %+v, want %+v", i, batch[i].Type, batch[i].ID, batch[i].Status, o, wants[i])
		}
		if o.Status == ledger.OutcomeAccepted {
			accept("op", batch[i])
		}
	}
	for agent, h := range heads {
		a, err := s.Agent(ctx, agent)
		if err != nil || a.ChainHead != h || a.ChainLength != seqs[agent] {
			t.Errorf("%s: %+v %v, want %d records ending in %x", agent, a, err, seqs[agent], h)
		}
	}
	if _, err := s.Agent(ctx, "agent-x"); errkind.Of(err) != errkind.NotFound {
		t.Errorf("agent-x: %v, want not found", err)
	}
	r, err := s.VerifyLedger(ctx)
	if err != nil || len(r.Broken) != 0 || r.Events != 3*n {
		t.Errorf("verify: %+v %v", r, err)
	}
	c, err := s.Counts(ctx, "agent-0", base.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var wantC, wantA int64
	for i := range n {
		if i%7 == 0 {
			wantC++
		}
		if (n+i)%5 == 0 {
			wantA++
		}
	}
	if c.ConduitTotal != wantC || c.ConduitSuccess != wantC || c.AP2Total != wantA || c.AP2Success != wantA {
		t.Errorf("agent-0 counts %+v, want %d conduit and %d ap2, all successes", c, wantC, wantA)
	}
}
