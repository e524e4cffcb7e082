package ledger

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// erase decides an erasure against the in-memory ledger and applies the
// plan the way a back end does: rename everywhere, mark the sealed records,
// store the erasure and append its record.
func (m *memLedger) erase(t *testing.T, req ErasureRequest) error {
	t.Helper()
	x := req.AgentID
	names := func(r *ChainRow) bool {
		return r.AgentID == x || r.Event.Event.BuyerID == x || r.Event.Event.AgentID == x || r.Event.CurrentAgent() == x ||
			(r.Record.CorrectionID != "" && (r.Correction.FromAgent == x || r.Correction.ToAgent == x ||
				NamesID(r.Correction.Reason, x) || NamesID(r.Correction.By, x)))
	}
	sc := ErasureScope{Sealed: map[string][]Hash{}}
	sc.Head, sc.Found = m.heads[x]
	_, sc.Taken = m.heads[req.Pseudonym]
	for _, e := range m.erasures {
		sc.Erased = sc.Erased || e.Pseudonym == x
		sc.Taken = sc.Taken || e.Pseudonym == req.Pseudonym || e.ID == req.ID
	}
	for _, e := range m.erasures {
		sc.Sealed[e.ID] = e.Digests
	}
	for _, a := range slices.Sorted(maps.Keys(m.records)) {
		prev := m.anchors[a].Hash
		for _, rec := range m.records[a] {
			row := ChainRow{AgentID: a, Registered: true, HasRecord: true, Record: rec, StoredHash: rec.Hash[:]}
			switch rec.Type {
			case ErasureType:
			case SummaryType:
				row.Summary = m.summaries[a][rec.Seq]
			default:
				row.Event, row.HasEvent = m.events[EventKey{rec.Type, rec.EventID}]
			}
			if rec.CorrectionID != "" {
				row.Correction, row.HasCorrection = m.corrections[rec.CorrectionID]
			}
			if rec.Type != ErasureType && (a == x || names(&row)) {
				sc.Records = append(sc.Records, ScopedRow{ChainRow: row, Prev: prev})
			}
			prev = rec.Hash
		}
	}
	plan, err := DecideErasure(req, sc)
	if err != nil {
		return err
	}
	p := req.Pseudonym
	rn := func(s string) string {
		if s == x {
			return p
		}
		return s
	}
	delete(m.heads, x)
	m.heads[p] = plan.Head
	if rs, ok := m.records[x]; ok {
		delete(m.records, x)
		for i := range rs {
			rs[i].AgentID = p
		}
		m.records[p] = rs
	}
	for k, e := range m.events {
		e.Event.AgentID, e.Event.BuyerID = rn(e.Event.AgentID), rn(e.Event.BuyerID)
		if e.Corrected != nil {
			c := *e.Corrected
			c.AgentID = rn(c.AgentID)
			e.Corrected = &c
		}
		m.events[k] = e
	}
	for id, c := range m.corrections {
		c.FromAgent, c.ToAgent, c.AgentID = rn(c.FromAgent), rn(c.ToAgent), rn(c.AgentID)
		c.Reason, c.By = ReplaceID(c.Reason, x, p), ReplaceID(c.By, x, p)
		m.corrections[id] = c
	}
	if a, ok := m.anchors[x]; ok {
		delete(m.anchors, x)
		m.anchors[p] = a
	}
	if ss, ok := m.summaries[x]; ok {
		delete(m.summaries, x)
		for _, s := range ss {
			s.AgentID = p
		}
		m.summaries[p] = ss
	}
	for _, s := range plan.Sealed {
		r, _ := m.record(s.AgentID, s.Seq)
		r.SealedBy = s.SealedBy
	}
	m.records[p] = append(m.records[p], plan.Record)
	m.erasures[plan.Erasure.ID] = plan.Erasure
	return nil
}

func (m *memLedger) verify(t *testing.T) VerifyReport {
	t.Helper()
	chains, links := m.walk()
	rep, err := VerifyChains(chains, links, WithErasures(slices.Collect(maps.Values(m.erasures))), WithAnchors(m.anchors), WithSummaries(m.summaries))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// dump lists every string the ledger holds, to prove an id is gone.
func (m *memLedger) dump() string {
	return fmt.Sprint(m.heads, m.records, m.events, m.corrections, m.erasures)
}

const ident = "5e8f2a1c9b7d3e4f6a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f"

func TestErasure(t *testing.T) {
	end := t0.Add(-time.Hour)
	build := func(t *testing.T) *memLedger {
		m := newMemLedger()
		bought := session("c-bought", "seller", Verified, end)
		bought.BuyerID = "victim"
		pay := payment("t-bought", "seller", Held, time.Time{})
		pay.BuyerID = "victim"
		m.ingest(t, Batch{Operator: "op", ReceivedAt: t0, MaxSkew: time.Minute, Events: []Event{
			session("c1", "victim", Running, time.Time{}),
			session("c1", "victim", Verified, end),
			payment("t1", "victim", Settled, end),
			bought, pay,
			session("c2", "other", Verified, end),
		}})
		pay.Status, pay.EndedAt = Settled, end
		m.ingest(t, Batch{Operator: "op", Events: []Event{pay}})
		mv := request(ActionReattribute, ConduitSession, "c2")
		mv.AgentID = "victim"
		if _, err := m.correct(t, mv); err != nil {
			t.Fatal(err)
		}
		// A correction of another agent's event whose reason names the
		// agent: its record is sealed too.
		cb := request(ActionStatus, AP2Transaction, "t-bought")
		cb.Status, cb.Reason = Disputed, "chargeback filed by victim (card network)"
		if _, err := m.correct(t, cb); err != nil {
			t.Fatal(err)
		}
		if rep := m.verify(t); len(rep.Broken) != 0 {
			t.Fatalf("before: %v", rep.Broken)
		}
		return m
	}
	req := ErasureRequest{AgentID: "victim", Pseudonym: "erased-5f2c", Identity: ident, ID: "era-1", By: "op", At: t0}

	m := build(t)
	before := m.heads["seller"]
	if err := m.erase(t, req); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m.dump(), "victim") {
		t.Fatalf("the erased id is still in the ledger: %s", m.dump())
	}
	if rep := m.verify(t); len(rep.Broken) != 0 || rep.Agents != 3 {
		t.Fatalf("after the erasure: %+v", rep)
	}
	if m.heads["seller"] != before || m.heads["erased-5f2c"].Seq != 5 {
		t.Errorf("heads: seller %+v (was %+v), pseudonym %+v", m.heads["seller"], before, m.heads["erased-5f2c"])
	}
	// A second erasure of another party of a sealed record seals it again.
	if err := m.erase(t, ErasureRequest{AgentID: "seller", Pseudonym: "erased-77aa", Identity: ident, ID: "era-2", By: "op", At: t0}); err != nil {
		t.Fatal(err)
	}
	if rep := m.verify(t); len(rep.Broken) != 0 {
		t.Fatalf("after the second erasure: %+v", rep)
	}
	if err := m.erase(t, ErasureRequest{AgentID: "erased-5f2c", Pseudonym: "erased-9", Identity: ident, ID: "era-3", By: "op", At: t0}); errkind.Of(err) != errkind.Conflict {
		t.Errorf("erasing a pseudonym: %v", err)
	}

	cases := []struct {
		name   string
		tamper func(m *memLedger)
		want   string
	}{
		{"sealed row altered", func(m *memLedger) {
			e := m.events[EventKey{ConduitSession, "c1"}]
			e.Event.EndedAt = e.Event.EndedAt.Add(-time.Minute)
			m.events[EventKey{ConduitSession, "c1"}] = e
		}, "erased-5f2c/2"},
		{"digest replaced", func(m *memLedger) {
			e := m.erasures["era-1"]
			e.Digests = append([]Hash{{1}}, e.Digests[1:]...)
			m.erasures["era-1"] = e
		}, "erased-5f2c/"},
		{"identity altered", func(m *memLedger) {
			e := m.erasures["era-1"]
			e.Identity = strings.Repeat("0", 64)
			m.erasures["era-1"] = e
		}, "erased-5f2c/"},
		{"erasure removed", func(m *memLedger) { delete(m.erasures, "era-1") }, "erased-5f2c/"},
		{"seal removed", func(m *memLedger) { m.records["erased-5f2c"][0].SealedBy = "" }, "erased-5f2c/1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := build(t)
			if err := m.erase(t, req); err != nil {
				t.Fatal(err)
			}
			tc.tamper(m)
			rep := m.verify(t)
			var got []string
			for _, b := range rep.Broken {
				got = append(got, fmt.Sprintf("%s/%d", b.AgentID, b.Seq))
			}
			if len(got) == 0 || !strings.HasPrefix(got[0], tc.want) {
				t.Errorf("broken %v, want %s first", rep.Broken, tc.want)
			}
		})
	}

	// Refused: an unknown agent, a broken chain, a pseudonym that is the id.
	m = build(t)
	if err := m.erase(t, ErasureRequest{AgentID: "nobody", Pseudonym: "erased-1", Identity: ident, ID: "era-9", By: "op", At: t0}); errkind.Of(err) != errkind.NotFound {
		t.Errorf("unknown agent: %v", err)
	}
	if err := m.erase(t, ErasureRequest{AgentID: "victim", Pseudonym: "victim", Identity: ident, ID: "era-9", By: "op", At: t0}); errkind.Of(err) != errkind.Invalid {
		t.Errorf("pseudonym = id: %v", err)
	}
	if err := m.erase(t, ErasureRequest{AgentID: "victim", Pseudonym: "erased-1", Identity: "victim", ID: "era-9", By: "op", At: t0}); errkind.Of(err) != errkind.Invalid {
		t.Errorf("an identity that is not a commitment: %v", err)
	}
	e := m.events[EventKey{AP2Transaction, "t1"}]
	e.Event.EscrowAmountCents++
	m.events[EventKey{AP2Transaction, "t1"}] = e
	if err := m.erase(t, req); errkind.Of(err) != errkind.Conflict {
		t.Errorf("erasing over a broken chain: %v", err)
	}
}

func TestReplaceID(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{"victim", "P"},
		{"agent:victim", "agent:P"},
		{"chargeback filed by victim (card)", "chargeback filed by P (card)"},
		{"victim2 victim-b xvictim victim.x a_victim", "victim2 victim-b xvictim victim.x a_victim"},
		{"victim,victim victim", "P,P P"},
		// Sentence punctuation is not part of the id.
		{"reported by victim.", "reported by P."},
		{"reported by victim... and others", "reported by P... and others"},
		{"...victim, as said", "...P, as said"},
		{"(victim.)", "(P.)"},
		{"victim..x see.victim a.victim.", "victim..x see.victim a.victim."},
		{"", ""},
	} {
		if got := ReplaceID(tc.s, "victim", "P"); got != tc.want {
			t.Errorf("ReplaceID(%q) = %q, want %q", tc.s, got, tc.want)
		}
		if NamesID(tc.s, "victim") != (tc.s != tc.want) {
			t.Errorf("NamesID(%q) = %v", tc.s, !(tc.s != tc.want))
		}
	}
}

func TestChainRowNamesAgent(t *testing.T) {
	report := ChainRow{Event: StoredEvent{Event: Event{BuyerID: "agent-7"}}}
	cor := ChainRow{Record: ChainRecord{CorrectionID: "cor-1"}, Correction: Correction{FromAgent: "a", ToAgent: "b",
		CorrectionRequest: CorrectionRequest{Reason: "asked by agent-7", By: "op"}}}
	for _, c := range []struct {
		r    *ChainRow
		x    string
		want bool
	}{{&report, "agent-7", true}, {&report, "agent-70", false}, {&cor, "agent-7", true}, {&cor, "b", true}, {&cor, "op", true}, {&cor, "agent", false}} {
		if got := c.r.NamesAgent(c.x); got != c.want {
			t.Errorf("%+v names %q: %v, want %v", c.r.Record, c.x, got, c.want)
		}
	}
}
