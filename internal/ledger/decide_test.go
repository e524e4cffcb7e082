package ledger

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// memLedger is the dumbest possible back end: it loads State from maps and
// applies plans to them, so the tests exercise every rule with no I/O.
type memLedger struct {
	heads       map[string]Head
	events      map[EventKey]StoredEvent
	records     map[string][]ChainRecord // by agent, in seq order
	corrections map[string]Correction
	erasures    map[string]Erasure
	anchors     map[string]Anchor
	summaries   map[string]map[int64]*Summary
}

// record returns the agent's record at seq (records before its anchor are
// pruned).
func (m *memLedger) record(agent string, seq int64) (*ChainRecord, bool) {
	i := seq - 1 - m.anchors[agent].Seq
	rs := m.records[agent]
	if i < 0 || i >= int64(len(rs)) {
		return nil, false
	}
	return &rs[i], true
}

func newMemLedger() *memLedger {
	return &memLedger{heads: map[string]Head{}, events: map[EventKey]StoredEvent{}, records: map[string][]ChainRecord{}, corrections: map[string]Correction{},
		erasures: map[string]Erasure{}, anchors: map[string]Anchor{}, summaries: map[string]map[int64]*Summary{}}
}

func (m *memLedger) ingest(t *testing.T, b Batch) []Outcome {
	t.Helper()
	p, err := Prepare(b)
	if err != nil {
		t.Fatal(err)
	}
	st := State{Heads: map[string]Head{}, Events: map[EventKey]StoredEvent{}}
	for _, a := range p.Agents {
		if h, ok := m.heads[a]; ok {
			st.Heads[a] = h
		}
	}
	for _, k := range p.Events {
		if e, ok := m.events[k]; ok {
			st.Events[k] = e
		}
	}
	plan := p.Decide(st)
	m.apply(t, &plan)
	return plan.Outcomes
}

func (m *memLedger) apply(t *testing.T, plan *Plan) {
	t.Helper()
	for _, h := range plan.Heads {
		if _, ok := m.heads[h.AgentID]; ok == h.New {
			t.Fatalf("head %+v: registered %v", h, ok)
		}
		m.heads[h.AgentID] = h.Head
	}
	for _, w := range plan.Inserts {
		k := EventKey{w.Event.Type, w.Event.ID}
		if _, ok := m.events[k]; ok {
			t.Fatalf("insert of stored event %v", k)
		}
		m.events[k] = StoredEvent{Event: w.Event, Operator: w.Operator, Seq: w.Seq}
	}
	for _, w := range plan.Updates {
		k := EventKey{w.Event.Type, w.Event.ID}
		if old, ok := m.events[k]; !ok || old.Seq != w.LoadedSeq {
			t.Fatalf("update of %v loaded at seq %d: stored %+v", k, w.LoadedSeq, old)
		}
		m.events[k] = StoredEvent{Event: w.Event, Operator: w.Operator, Seq: w.Seq}
	}
	for _, r := range plan.Records {
		rs := m.records[r.AgentID]
		if want := m.anchors[r.AgentID].Seq + int64(len(rs)+1); r.Seq != want {
			t.Fatalf("record %s/%d appended at position %d", r.AgentID, r.Seq, want)
		}
		m.records[r.AgentID] = append(rs, r)
	}
}

// walk yields the rows a back end's chain walk would.
func (m *memLedger) walk() (iter.Seq2[*ChainRow, error], iter.Seq2[*EventLink, error]) {
	chains := func(yield func(*ChainRow, error) bool) {
		for _, a := range slices.Sorted(maps.Keys(m.heads)) {
			h := m.heads[a]
			rs := m.records[a]
			if len(rs) == 0 {
				if !yield(&ChainRow{AgentID: a, Registered: true, HeadSeq: h.Seq, HeadHash: h.Hash[:]}, nil) {
					return
				}
			}
			for _, r := range rs {
				row := &ChainRow{AgentID: a, Registered: true, HeadSeq: h.Seq, HeadHash: h.Hash[:], HasRecord: true, Record: r, StoredHash: r.Hash[:]}
				switch r.Type {
				case ErasureType:
				case SummaryType:
					row.Summary = m.summaries[a][r.Seq]
				default:
					row.Event, row.HasEvent = m.events[EventKey{r.Type, r.EventID}]
				}
				if r.CorrectionID != "" {
					row.Correction, row.HasCorrection = m.corrections[r.CorrectionID]
				}
				if !yield(row, nil) {
					return
				}
			}
		}
	}
	links := func(yield func(*EventLink, error) bool) {
		for k, e := range m.events {
			l := &EventLink{Type: k.Type, ID: k.ID, AgentID: e.CurrentAgent(), Seq: e.Seq}
			if r, ok := m.record(e.CurrentAgent(), e.Seq); ok {
				l.Linked, l.RecordType, l.RecordID = true, r.Type, r.EventID
			}
			if !yield(l, nil) {
				return
			}
		}
	}
	return chains, links
}

var t0 = time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)

func session(id, agent string, st Status, ended time.Time) Event {
	return Event{Type: ConduitSession, ID: id, AgentID: agent, BuyerID: "buyer-1", Status: st, StartedAt: t0.Add(-48 * time.Hour), EndedAt: ended}
}

func payment(id, agent string, st Status, ended time.Time) Event {
	return Event{Type: AP2Transaction, ID: id, AgentID: agent, BuyerID: "buyer-1", Status: st, EscrowAmountCents: 1234, StartedAt: t0.Add(-48 * time.Hour), EndedAt: ended}
}

func statuses(out []Outcome) []OutcomeStatus {
	var s []OutcomeStatus
	for _, o := range out {
		s = append(s, o.Status)
	}
	return s
}

func TestDecide(t *testing.T) {
	m := newMemLedger()
	end := t0.Add(-time.Hour)
	out := m.ingest(t, Batch{Operator: "op", Events: []Event{
		session("c1", "b", Running, time.Time{}),
		session("c1", "b", Verified, end), // a new event moved within the batch
		payment("t1", "a", Held, time.Time{}),
		session("c1", "b", Running, time.Time{}), // superseded by the batch's own report
		session("c1", "b", Verified, end),        // a duplicate of it
		session("c1", "x", Failed, end),          // another agent: registers nothing
		session("c2", "b", Settled, end),         // invalid
	}})
	want := []OutcomeStatus{OutcomeAccepted, OutcomeAccepted, OutcomeAccepted, OutcomeSuperseded, OutcomeDuplicate, OutcomeRejected, OutcomeRejected}
	if got := statuses(out); !slices.Equal(got, want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	if errkind.Of(out[5].Err) != errkind.Conflict || errkind.Of(out[6].Err) != errkind.Invalid {
		t.Errorf("errors %v, %v", out[5].Err, out[6].Err)
	}
	if _, ok := m.heads["x"]; ok {
		t.Error("an agent named only by a rejected report was registered")
	}
	// The heads are the hash chains of the accepted reports, computed here
	// with Link over Canonical, independently of Decide's Chainer.
	chain := func(agent string, evs ...Event) Head {
		var h Head
		for _, e := range evs {
			h.Seq++
			h.Hash = Link(h.Hash, (&Record{Event: e, Operator: "op", Seq: h.Seq}).Canonical())
		}
		return h
	}
	if h := m.heads["b"]; h != chain("b", session("c1", "b", Running, time.Time{}), session("c1", "b", Verified, end)) {
		t.Errorf("head of b %+v", h)
	}
	if h := m.heads["a"]; h != chain("a", payment("t1", "a", Held, time.Time{})) {
		t.Errorf("head of a %+v", h)
	}

	// A second batch moves the stored payment twice: one update, from the
	// seq it was loaded at, to its final state.
	p, err := Prepare(Batch{Operator: "op", Events: []Event{
		payment("t1", "a", Executing, time.Time{}),
		payment("t1", "a", Settled, end),
		payment("t1", "a", Negotiating, time.Time{}),
		payment("t1", "a", Refunded, end),
	}})
	if err != nil {
		t.Fatal(err)
	}
	st := State{Heads: map[string]Head{"a": m.heads["a"]}, Events: map[EventKey]StoredEvent{{AP2Transaction, "t1"}: m.events[EventKey{AP2Transaction, "t1"}]}}
	before := fmt.Sprint(st)
	plan := p.Decide(st)
	if again := p.Decide(st); !reflect.DeepEqual(plan, again) || fmt.Sprint(st) != before {
		t.Fatal("Decide is not pure: a second call differs, or the state changed")
	}
	if got := statuses(plan.Outcomes); !slices.Equal(got, []OutcomeStatus{OutcomeAccepted, OutcomeAccepted, OutcomeSuperseded, OutcomeRejected}) {
		t.Fatalf("outcomes %v", got)
	}
	if len(plan.Inserts) != 0 || len(plan.Updates) != 1 || plan.Updates[0].LoadedSeq != 1 || plan.Updates[0].Seq != 3 || plan.Updates[0].Event.Status != Settled {
		t.Errorf("writes %+v %+v", plan.Inserts, plan.Updates)
	}
	if len(plan.Heads) != 1 || plan.Heads[0].New || plan.Heads[0].Terminal != 3 || plan.Heads[0].Head.Seq != 3 {
		t.Errorf("heads %+v", plan.Heads)
	}
	if got := plan.Invalidated(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("invalidated %v", got)
	}
	m.apply(t, &plan)
	if rep, err := VerifyChains(m.walk()); err != nil || len(rep.Broken) != 0 || rep.Agents != 2 || rep.Records != 5 || rep.Events != 2 {
		t.Errorf("verify %+v %v", rep, err)
	}
}

func TestPrepare(t *testing.T) {
	if _, err := Prepare(Batch{Operator: "bad operator"}); !errors.Is(err, errkind.ErrInvalid) {
		t.Errorf("invalid operator: %v", err)
	}
	skew := 5 * time.Minute
	p, err := Prepare(Batch{Operator: "op", ReceivedAt: t0, MaxSkew: skew, Events: []Event{
		session("c1", "b", Verified, t0.Add(skew)),
		session("c2", "a", Verified, t0.Add(skew+time.Microsecond)),
		payment("t1", "a", Held, time.Time{}),
		payment("t1", "a", Settled, t0),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Agents, []string{"a", "b"}) || !slices.Equal(p.IDs(ConduitSession), []string{"c1"}) || !slices.Equal(p.IDs(AP2Transaction), []string{"t1"}) {
		t.Errorf("agents %v, events %v", p.Agents, p.Events)
	}
	out := p.Decide(State{}).Outcomes
	var fe *FieldError
	if out[1].Status != OutcomeRejected || !errors.As(out[1].Err, &fe) || fe.Field != "completed_at" || !strings.Contains(fe.Reason, "clock skew of 5m0s") {
		t.Errorf("future report: %+v", out[1])
	}
	if out[0].Status != OutcomeAccepted || out[2].Status != OutcomeAccepted || out[3].Status != OutcomeAccepted {
		t.Errorf("outcomes %+v", out)
	}
	// A zero ReceivedAt turns the check off.
	if out := newMemLedger().ingest(t, Batch{Operator: "op", Events: []Event{session("c9", "z", Verified, t0.AddDate(5, 0, 0))}}); out[0].Status != OutcomeAccepted {
		t.Errorf("without a clock: %+v", out[0])
	}
}

// TestDecideBatchEqualsSequence: deciding reports as one batch gives the
// same outcomes, rows, heads and chains as deciding each on its own, in
// order, with the ledger written in between; and every chain verifies.
func TestDecideBatchEqualsSequence(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	for round := range 50 {
		var reports []Event
		conduitPath := []Status{Pending, Running, Verified, Failed, Error, Timeout}
		ap2Path := []Status{Negotiating, Held, Executing, Delivered, Settled, Disputed, Refunded, Cancelled}
		for range 60 {
			id := rng.IntN(12)
			agent := fmt.Sprint("agent-", rng.IntN(3))
			var e Event
			if id%2 == 0 {
				st := conduitPath[rng.IntN(len(conduitPath))]
				e = session(fmt.Sprint("c", id), agent, st, time.Time{})
			} else {
				st := ap2Path[rng.IntN(len(ap2Path))]
				e = payment(fmt.Sprint("t", id), agent, st, time.Time{})
			}
			if e.Status.Terminal() {
				e.EndedAt = t0.Add(-time.Duration(rng.IntN(3)) * time.Hour)
			}
			reports = append(reports, e)
		}
		batch, seq := newMemLedger(), newMemLedger()
		bo := batch.ingest(t, Batch{Operator: "op", Events: reports})
		var so []Outcome
		for _, e := range reports {
			so = append(so, seq.ingest(t, Batch{Operator: "op", Events: []Event{e}})...)
		}
		for i := range bo {
			if bo[i].Status != so[i].Status || fmt.Sprint(bo[i].Err) != fmt.Sprint(so[i].Err) {
				t.Fatalf("seed %d round %d report %d (%+v): batch %+v, one by one %+v", seed, round, i, reports[i], bo[i], so[i])
			}
		}
		if !reflect.DeepEqual(batch, seq) {
			t.Fatalf("seed %d round %d: the ledgers differ", seed, round)
		}
		if rep, err := VerifyChains(batch.walk()); err != nil || len(rep.Broken) != 0 {
			t.Fatalf("seed %d round %d: verify %+v %v", seed, round, rep, err)
		}
	}
}

// FuzzDecide drives the batch-equals-sequence property from fuzzed bytes:
// each pair of bytes picks an event, an agent and a status.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 3, 4, 1, 9, 2, 2})
	f.Add([]byte{5, 5, 5, 5, 0, 0, 7, 7})
	conduitPath := []Status{Pending, Running, Verified, Failed, Error, Timeout}
	ap2Path := []Status{Negotiating, Held, Executing, Delivered, Settled, Disputed, Refunded, Cancelled}
	f.Fuzz(func(t *testing.T, in []byte) {
		var reports []Event
		for i := 0; i+1 < len(in) && len(reports) < 64; i += 2 {
			id, pick := int(in[i]%8), int(in[i+1])
			agent := fmt.Sprint("agent-", pick>>6)
			var e Event
			if id%2 == 0 {
				e = session(fmt.Sprint("c", id), agent, conduitPath[pick%len(conduitPath)], time.Time{})
			} else {
				e = payment(fmt.Sprint("t", id), agent, ap2Path[pick%len(ap2Path)], time.Time{})
			}
			if e.Status.Terminal() {
				e.EndedAt = t0.Add(-time.Duration(pick>>4&3) * time.Hour)
			}
			reports = append(reports, e)
		}
		batch, seq := newMemLedger(), newMemLedger()
		bo := batch.ingest(t, Batch{Operator: "op", Events: reports})
		for i, e := range reports {
			so := seq.ingest(t, Batch{Operator: "op", Events: []Event{e}})
			if bo[i].Status != so[0].Status || fmt.Sprint(bo[i].Err) != fmt.Sprint(so[0].Err) {
				t.Fatalf("report %d (%+v): batch %+v, one by one %+v", i, e, bo[i], so[0])
			}
		}
		if !reflect.DeepEqual(batch, seq) {
			t.Fatal("the ledgers differ")
		}
		if rep, err := VerifyChains(batch.walk()); err != nil || len(rep.Broken) != 0 {
			t.Fatalf("verify %+v %v", rep, err)
		}
	})
}
