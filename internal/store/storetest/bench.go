package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// The benchmarks both back ends run on the same data (docs/BENCHMARKS.md).
// Each back end's test wraps them with its Open.

// BenchBase is the benchmarks' fixed "now".
var BenchBase = time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)

// BenchEvents returns n terminal events spread over agents and the 80 days
// before BenchBase: half Conduit sessions (90% VERIFIED), half AP2
// transactions (90% SETTLED), ids unique within prefix, bought by
// "buyer-0001".
func BenchEvents(prefix string, n, agents int) []ledger.Event {
	evs := make([]ledger.Event, n)
	for i := range evs {
		end := BenchBase.Add(-time.Duration(i%(80*24*60)) * time.Minute)
		agent := benchAgent(i % agents)
		if i%2 == 0 {
			st := ledger.Verified
			if i%10 == 0 {
				st = ledger.Failed
			}
			evs[i] = ledger.Event{Type: ledger.ConduitSession, ID: fmt.Sprintf("%s-%09d", prefix, i), AgentID: agent, BuyerID: "buyer-0001",
				Status: st, StartedAt: end.Add(-time.Minute), EndedAt: end}
		} else {
			st := ledger.Settled
			if i%10 == 1 {
				st = ledger.Disputed
			}
			evs[i] = ledger.Event{Type: ledger.AP2Transaction, ID: fmt.Sprintf("%s-%09d", prefix, i), AgentID: agent, BuyerID: "buyer-0001",
				Status: st, EscrowAmountCents: 123456, StartedAt: end.Add(-time.Hour), EndedAt: end}
		}
	}
	return evs
}

func benchAgent(i int) string { return fmt.Sprintf("agent-%06d", i) }

// BenchIngest ingests evs in batches and fails on any outcome but
// accepted.
func BenchIngest(b *testing.B, s service.Backend, evs []ledger.Event, batch int) {
	b.Helper()
	for len(evs) > 0 {
		n := min(batch, len(evs))
		out, err := s.Ingest(context.Background(), ledger.Batch{Operator: "op-bench", Events: evs[:n]})
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range out {
			if o.Status != ledger.OutcomeAccepted {
				b.Fatalf("%v: %v", o.Status, o.Err)
			}
		}
		evs = evs[n:]
	}
}

// BenchPrune prunes 100,000 events over 1,000 agents (every one past the
// cutoff): a chain per transaction, each leaving an anchor and a summary
// record. ns/event is per event removed; the ledger is rebuilt and
// verified outside the timer for each run.
func BenchPrune(b *testing.B, open func(b *testing.B) service.Backend) {
	evs := BenchEvents("p", 100000, 1000)
	for b.Loop() {
		b.StopTimer()
		s := open(b)
		BenchIngest(b, s, evs, 5000)
		b.StartTimer()
		rep, err := s.Prune(context.Background(), BenchBase.Add(24*time.Hour), BenchBase.Add(24*time.Hour))
		if err != nil || rep.Events != 100000 || rep.Agents != 1000 {
			b.Fatal(rep, err)
		}
		b.StopTimer()
		if r, err := s.VerifyLedger(context.Background()); err != nil || len(r.Broken) != 0 {
			b.Fatal(r, err)
		}
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100000, "ns/event")
}

// BenchErase erases one agent per op from a ledger of 100,000 events over
// 1,000 agents, in which every tenth event is bought by another agent and
// each agent has a correction whose reason names it and a consent: every
// table an erasure renames in holds rows, most of them of other agents.
// An op erases the next agent, so at most 1,000 ops run on one ledger
// (-benchtime 200x is plenty).
func BenchErase(b *testing.B, open func(b *testing.B) service.Backend) {
	const agents = 1000
	ctx := context.Background()
	s := open(b)
	evs := BenchEvents("x", 100000, agents)
	for i := range evs {
		if i%10 == 5 {
			evs[i].BuyerID = benchAgent((i + 1) % agents)
		}
	}
	BenchIngest(b, s, evs, 5000)
	for i := range agents {
		e := evs[i]
		req := ledger.CorrectionRequest{Action: ledger.ActionStatus, EventType: e.Type, EventID: e.ID,
			Reason: "reported by " + e.AgentID + " to support", By: "op-bench", At: BenchBase}
		switch {
		case e.Type == ledger.AP2Transaction:
			req.Status = ledger.Refunded
		case e.Status == ledger.Verified:
			req.Status = ledger.Failed
		default:
			req.Status = ledger.Verified
		}
		if _, _, err := s.Correct(ctx, req, nil); err != nil {
			b.Fatal(err)
		}
		if err := s.RecordConsent(ctx, e.AgentID, "disclosure-1", "agent:"+e.AgentID, BenchBase); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		if i == agents {
			b.Fatal("more ops than agents: use -benchtime with at most 1000x")
		}
		req := ledger.ErasureRequest{AgentID: benchAgent(i), Pseudonym: fmt.Sprintf("erased-%06d", i), Identity: identity,
			ID: fmt.Sprintf("era-%06d", i), By: "op-bench", At: BenchBase.Add(time.Hour)}
		if _, err := s.Erase(ctx, req); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.StopTimer()
	if r, err := s.VerifyLedger(ctx); err != nil || len(r.Broken) != 0 {
		b.Fatal(r, err)
	}
}

// ResendHistory returns, for final events, the history that stored them
// (each first RUNNING or HELD, then final) and that history sent again:
// each event's history once more when export (the earlier report
// superseded, the final one a duplicate), else each final report twice
// (the same number of reports).
func ResendHistory(final []ledger.Event, export bool) (history, resend []ledger.Event) {
	for _, e := range final {
		early := e
		early.EndedAt = time.Time{}
		if e.Type == ledger.ConduitSession {
			early.Status = ledger.Running
		} else {
			early.Status = ledger.Held
		}
		history = append(history, early, e)
		if export {
			resend = append(resend, early, e)
		} else {
			resend = append(resend, e, e)
		}
	}
	return history, resend
}
