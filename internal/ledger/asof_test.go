package ledger

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/score"
)

// histories gathers, from the in-memory ledger, every event's reports (its
// report records, in the chain of the agent that reported it) and its
// corrections, as a back end loads them.
func (m *memLedger) histories() []History {
	var hs []History
	for _, k := range slices.SortedFunc(maps.Keys(m.events), func(a, b EventKey) int { return cmpKey(a, b) }) {
		h := History{Event: m.events[k]}
		for _, r := range m.records[h.Event.Event.AgentID] {
			if r.Type == k.Type && r.EventID == k.ID && r.CorrectionID == "" {
				h.Reports = append(h.Reports, Receipt{Status: r.Status, ReceivedAt: r.ReceivedAt})
			}
		}
		for _, c := range m.corrections {
			if c.EventType == k.Type && c.EventID == k.ID {
				h.Corrections = append(h.Corrections, c)
			}
		}
		slices.SortFunc(h.Corrections, func(a, b Correction) int { return a.At.Compare(b.At) })
		hs = append(hs, h)
	}
	return hs
}

func cmpKey(a, b EventKey) int {
	if a.Type != b.Type {
		if a.Type < b.Type {
			return -1
		}
		return 1
	}
	switch {
	case a.ID < b.ID:
		return -1
	case a.ID > b.ID:
		return 1
	}
	return 0
}

// counts is the oracle: the agent's window counted straight from the
// events' rows as they are at this moment, and the events it counted.
func (m *memLedger) counts(agent string, asOf time.Time) (score.Counts, map[EventKey]bool) {
	var c score.Counts
	in := map[EventKey]bool{}
	for k, e := range m.events {
		end := e.Event.EndedAt
		if e.IsVoided() || e.CurrentAgent() != agent || end.IsZero() || end.Before(asOf.Add(-Window)) || end.After(asOf) {
			continue
		}
		st := e.CurrentStatus()
		if st.CountsTotal() {
			in[k] = true
		}
		switch {
		case e.Event.Type == ConduitSession && (st == Verified || st == Failed):
			c.ConduitTotal++
			if st == Verified {
				c.ConduitSuccess++
			}
		case e.Event.Type == AP2Transaction && (st == Settled || st == Disputed || st == Refunded):
			c.AP2Total++
			if st == Settled {
				c.AP2Success++
			}
		}
	}
	return c, in
}

// TestChangedSince replays random histories of reports and corrections one
// step a minute, keeps the oracle's counts after each step, and checks that
// the ledger as it stood at every step gives those counts, and that the
// events changed since name exactly those a later step touched and that
// count then or now.
func TestChangedSince(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			m := newMemLedger()
			agents := []string{"a", "b"}
			asOf := t0.Add(30 * 24 * time.Hour)
			type step struct {
				at      time.Time
				counts  score.Counts
				counted map[EventKey]bool
				touched EventKey
			}
			var steps []step
			status := map[EventKey]Status{}
			at := t0
			for i := range 40 {
				at = at.Add(time.Minute)
				typ := []Type{ConduitSession, AP2Transaction}[rng.IntN(2)]
				k := EventKey{typ, fmt.Sprintf("e%d", rng.IntN(6))}
				st, known := status[k]
				var touched bool
				switch {
				case !known || !st.Terminal():
					next := map[Type][]Status{ConduitSession: {Running, Verified, Failed}, AP2Transaction: {Held, Settled, Disputed, Refunded}}[typ]
					s := next[rng.IntN(len(next))]
					if known && s == st {
						continue
					}
					agent := agents[0]
					if e, ok := m.events[k]; ok {
						agent = e.Event.AgentID
					} else if rng.IntN(3) == 0 {
						agent = agents[1]
					}
					var end time.Time
					if s.Terminal() {
						end = at.Add(-time.Duration(rng.IntN(120*24)) * time.Hour)
						if e, ok := m.events[k]; ok && end.Before(e.Event.StartedAt) {
							end = e.Event.StartedAt
						}
					}
					e := Event{Type: typ, ID: k.ID, AgentID: agent, BuyerID: "buyer-1", Status: s, StartedAt: t0.Add(-200 * 24 * time.Hour), EndedAt: end}
					if typ == AP2Transaction {
						e.EscrowAmountCents = 100
					}
					if e2, ok := m.events[k]; ok {
						e.StartedAt = e2.Event.StartedAt
					}
					out := m.ingest(t, Batch{Operator: "op", ReceivedAt: at, MaxSkew: time.Minute, Events: []Event{e}})
					touched = out[0].Status == OutcomeAccepted
					if touched {
						status[k] = s
					}
				default:
					req := request(ActionStatus, typ, k.ID)
					req.At, req.Reason = at, fmt.Sprintf("step %d", i)
					switch rng.IntN(3) {
					case 0:
						req.Action, req.AgentID = ActionReattribute, agents[rng.IntN(2)]
					case 1:
						req.Status = map[Type][]Status{ConduitSession: {Verified, Failed}, AP2Transaction: {Settled, Disputed, Refunded}}[typ][rng.IntN(2)]
					default:
						if rng.IntN(4) != 0 {
							continue
						}
						req.Action = ActionVoid
					}
					_, err := m.correct(t, req)
					touched = err == nil
				}
				if touched {
					c, in := m.counts("a", asOf)
					steps = append(steps, step{at: at, counts: c, counted: in, touched: k})
				}
			}
			hs := m.histories()
			final, finalIn := m.counts("a", asOf)
			for i, s := range steps {
				for _, issued := range []time.Time{s.at, s.at.Add(30 * time.Second)} {
					changed, atIssue := ChangedSince("a", hs, asOf, issued)
					if atIssue != s.counts {
						t.Fatalf("step %d: counts at issue %+v, the ledger then had %+v", i, atIssue, s.counts)
					}
					later := map[EventKey]bool{}
					for _, s2 := range steps[i+1:] {
						later[s2.touched] = true
					}
					var want []EventKey
					for _, h := range hs {
						k := EventKey{h.Event.Event.Type, h.Event.Event.ID}
						if later[k] && (s.counted[k] || finalIn[k]) {
							want = append(want, k)
						}
					}
					if !slices.Equal(changed, want) {
						t.Fatalf("step %d: changed %v, want %v", i, changed, want)
					}
					if len(steps[i+1:]) == 0 && (len(changed) != 0 || atIssue != final) {
						t.Fatalf("the last step: changed %v, counts %+v want %+v", changed, atIssue, final)
					}
				}
			}
			if _, atStart := ChangedSince("a", hs, asOf, t0); atStart != (score.Counts{}) {
				t.Fatalf("before any report: %+v", atStart)
			}
		})
	}
}
