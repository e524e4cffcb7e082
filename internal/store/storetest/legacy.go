package storetest

import (
	"strconv"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Report is one report of a history: the operator and the event.
type Report struct {
	Operator string
	Event    ledger.Event
}

// LegacyHistory is a history with every shape a chain record can take: both
// types, transitions, an absent buyer, fractional and pre-1970 times, the
// largest escrow amount, two operators. The back ends' migration tests
// write it in an old layout and migrate it.
func LegacyHistory() []Report {
	base := time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)
	var out []Report
	add := func(op string, e ledger.Event) { out = append(out, Report{op, e}) }
	for i, agent := range []string{"agent-a", "agent-b", "agent-t"} {
		start := base.Add(-time.Duration(i+1) * 36 * time.Hour).Add(123456 * time.Microsecond)
		c := ledger.Event{Type: ledger.ConduitSession, ID: agent + "-c1", AgentID: agent, Status: ledger.Pending, StartedAt: start}
		add("op-1", c)
		c.Status = ledger.Running
		add("op-1", c)
		c.Status, c.EndedAt = ledger.Verified, start.Add(90*time.Minute+500*time.Millisecond)
		add("op-1", c)
		t := ledger.Event{Type: ledger.AP2Transaction, ID: agent + "-t1", AgentID: agent, BuyerID: "buyer.1", Status: ledger.Held,
			EscrowAmountCents: ledger.MaxEscrowCents, StartedAt: start}
		add("op-2", t)
		t.Status, t.EndedAt = ledger.Disputed, start.Add(time.Hour)
		add("op-2", t)
		old := time.Date(1969, 7, 20, 20, 17, 40, 1000, time.UTC)
		add("op-1", ledger.Event{Type: ledger.ConduitSession, ID: agent + "-c2", AgentID: agent, BuyerID: "b:2", Status: ledger.Failed,
			StartedAt: old, EndedAt: old.Add(time.Microsecond)})
	}
	return out
}

// Contents is every record's canonical content after reports, keyed
// "agent/seq".
func Contents(reports []Report) map[string][]byte {
	seqs := map[string]int64{}
	out := map[string][]byte{}
	for _, r := range reports {
		seqs[r.Event.AgentID]++
		seq := seqs[r.Event.AgentID]
		out[r.Event.AgentID+"/"+strconv.FormatInt(seq, 10)] = (&ledger.Record{Event: r.Event, Operator: r.Operator, Seq: seq}).Canonical()
	}
	return out
}
