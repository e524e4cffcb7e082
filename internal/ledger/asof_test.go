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
// step a minute. Its oracle for the ledger as it stood at a step replays,
// on an empty ledger, the reports accepted by then and every correction
// of the events whose reports were all in by then (a correction applies
// at every instant, ledger/asof.go): the counts must match, and the events
// changed since must be exactly those reported again later that count
// then or now.
func TestChangedSince(t *testing.T) {
	type op struct {
		at     time.Time
		key    EventKey
		report *Event
		fix    *CorrectionRequest
	}
	replay := func(t *testing.T, ops []op, upTo time.Time) *memLedger {
		lastReport := map[EventKey]time.Time{}
		for _, o := range ops {
			if o.report != nil {
				lastReport[o.key] = o.at
			}
		}
		m := newMemLedger()
		for _, o := range ops {
			switch {
			case o.report != nil && !o.at.After(upTo):
				m.ingest(t, Batch{Operator: "op", ReceivedAt: o.at, MaxSkew: time.Minute, Events: []Event{*o.report}})
			case o.fix != nil && !lastReport[o.key].After(upTo):
				if _, err := m.correct(t, *o.fix); err != nil {
					t.Fatalf("replaying %+v: %v", *o.fix, err)
				}
			}
		}
		return m
	}
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			m := newMemLedger()
			agents := []string{"a", "b"}
			asOf := t0.Add(30 * 24 * time.Hour)
			var ops []op
			status := map[EventKey]Status{}
			at := t0
			for i := range 40 {
				at = at.Add(time.Minute)
				typ := []Type{ConduitSession, AP2Transaction}[rng.IntN(2)]
				k := EventKey{typ, fmt.Sprintf("e%d", rng.IntN(6))}
				st, known := status[k]
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
					if out := m.ingest(t, Batch{Operator: "op", ReceivedAt: at, MaxSkew: time.Minute, Events: []Event{e}}); out[0].Status == OutcomeAccepted {
						status[k] = s
						ops = append(ops, op{at: at, key: k, report: &e})
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
					if _, err := m.correct(t, req); err == nil {
						ops = append(ops, op{at: at, key: k, fix: &req})
					}
				}
			}
			hs := m.histories()
			_, nowIn := m.counts("a", asOf)
			for i, o := range ops {
				for _, issued := range []time.Time{o.at, o.at.Add(30 * time.Second)} {
					then, thenIn := replay(t, ops, issued).counts("a", asOf)
					changed, atIssue := ChangedSince("a", hs, asOf, issued)
					if atIssue != then {
						t.Fatalf("op %d: counts at issue %+v, the ledger then had %+v", i, atIssue, then)
					}
					later := map[EventKey]bool{}
					for _, o2 := range ops[i+1:] {
						if o2.report != nil {
							later[o2.key] = true
						}
					}
					var want []EventKey
					for _, h := range hs {
						k := EventKey{h.Event.Event.Type, h.Event.Event.ID}
						if later[k] && (thenIn[k] || nowIn[k]) {
							want = append(want, k)
						}
					}
					if !slices.Equal(changed, want) {
						t.Fatalf("op %d: changed %v, want %v", i, changed, want)
					}
				}
			}
			if _, atStart := ChangedSince("a", hs, asOf, t0); atStart != (score.Counts{}) {
				t.Fatalf("before any report: %+v", atStart)
			}
		})
	}
}
