package ledger

import (
	"errors"
	"fmt"
	"iter"
	"testing"
	"time"
)

// TestVerifyChains tampers with an in-memory ledger the way the back ends'
// conformance suite does with real tables, and checks the first broken
// link of each damaged chain.
func TestVerifyChains(t *testing.T) {
	end := t0.Add(-time.Hour)
	build := func(t *testing.T) *memLedger {
		m := newMemLedger()
		for _, a := range []string{"a", "b"} {
			m.ingest(t, Batch{Operator: "op", Events: []Event{
				session(a+"-c1", a, Running, time.Time{}),
				session(a+"-c1", a, Verified, end),
				payment(a+"-t1", a, Settled, end),
			}})
		}
		return m
	}
	cases := []struct {
		name   string
		tamper func(m *memLedger)
		want   string // agent/seq of the only break
	}{
		{"back-dated row", func(m *memLedger) {
			e := m.events[EventKey{ConduitSession, "b-c1"}]
			e.Event.EndedAt = e.Event.EndedAt.Add(-time.Minute)
			m.events[EventKey{ConduitSession, "b-c1"}] = e
		}, "b/2"},
		{"record status", func(m *memLedger) { m.records["b"][0].Status = Pending }, "b/1"},
		{"record hash", func(m *memLedger) { m.records["b"][2].Hash = Hash{} }, "b/3"},
		{"record removed", func(m *memLedger) { m.records["b"] = m.records["b"][:2] }, "b/2"},
		{"row moved back", func(m *memLedger) {
			e := m.events[EventKey{ConduitSession, "b-c1"}]
			e.Seq, e.Event.Status, e.Event.EndedAt = 1, Running, time.Time{}
			m.events[EventKey{ConduitSession, "b-c1"}] = e
		}, "b/2"},
		{"row deleted", func(m *memLedger) { delete(m.events, EventKey{AP2Transaction, "b-t1"}) }, "b/3"},
		{"orphan row", func(m *memLedger) {
			m.events[EventKey{ConduitSession, "b-c9"}] = StoredEvent{Event: session("b-c9", "b", Verified, end), Operator: "op", Seq: 2}
		}, "b/2"},
		{"head", func(m *memLedger) { h := m.heads["b"]; h.Seq = 2; m.heads["b"] = h }, "b/3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := build(t)
			if rep, err := VerifyChains(m.walk()); err != nil || len(rep.Broken) != 0 {
				t.Fatalf("before: %+v %v", rep, err)
			}
			tc.tamper(m)
			rep, err := VerifyChains(m.walk())
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Broken) != 1 || fmt.Sprintf("%s/%d", rep.Broken[0].AgentID, rep.Broken[0].Seq) != tc.want || rep.Broken[0].Reason == "" {
				t.Errorf("broken %v, want only %s", rep.Broken, tc.want)
			}
		})
	}

	// An agent with records but no agents row, and a registered agent
	// whose head claims records that are gone.
	rows := func(yield func(*ChainRow, error) bool) {
		r := session("g-c1", "ghost", Verified, end)
		rec := ChainRecord{AgentID: "ghost", Seq: 1, Type: r.Type, EventID: r.ID, Status: r.Status}
		h, _ := new(Chainer).Link(Hash{}, &Record{Event: r, Operator: "op", Seq: 1})
		if !yield(&ChainRow{AgentID: "ghost", HasRecord: true, Record: rec, StoredHash: h[:], HasEvent: true, Event: StoredEvent{Event: r, Operator: "op", Seq: 1}}, nil) {
			return
		}
		yield(&ChainRow{AgentID: "empty", Registered: true, HeadSeq: 3, HeadHash: make([]byte, HashSize)}, nil)
	}
	rep, err := VerifyChains(rows, func(func(*EventLink, error) bool) {})
	if err != nil || len(rep.Broken) != 2 || rep.Broken[0].AgentID != "empty" || rep.Broken[0].Seq != 0 || rep.Broken[1].AgentID != "ghost" || rep.Broken[1].Seq != 1 {
		t.Errorf("broken %v %v", rep.Broken, err)
	}

	// A read error stops the walk and is returned.
	boom := errors.New("disk on fire")
	var failing iter.Seq2[*ChainRow, error] = func(yield func(*ChainRow, error) bool) { yield(nil, boom) }
	if _, err := VerifyChains(failing, func(func(*EventLink, error) bool) {}); !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
}
