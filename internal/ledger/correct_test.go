package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// correct decides req against the in-memory ledger and applies the plan.
func (m *memLedger) correct(t *testing.T, req CorrectionRequest) (CorrectionPlan, error) {
	t.Helper()
	k := EventKey{req.EventType, req.EventID}
	st := CorrectionState{Heads: map[string]Head{}}
	st.Event, st.Found = m.events[k]
	if c, ok := m.corrections[req.ID()]; ok {
		st.Existing = &c
	}
	for _, a := range []string{st.Event.CurrentAgent(), req.AgentID} {
		if h, ok := m.heads[a]; ok {
			st.Heads[a] = h
		}
	}
	plan, err := DecideCorrection(req, st)
	if err != nil || plan.Existing {
		return plan, err
	}
	for _, h := range plan.Heads {
		if _, ok := m.heads[h.AgentID]; ok == h.New {
			t.Fatalf("head %+v: registered %v", h, ok)
		}
		m.heads[h.AgentID] = h.Head
	}
	for _, r := range plan.Records {
		if want := m.anchors[r.AgentID].Seq + int64(len(m.records[r.AgentID])+1); r.Seq != want {
			t.Fatalf("record %s/%d appended at %d", r.AgentID, r.Seq, want)
		}
		m.records[r.AgentID] = append(m.records[r.AgentID], r)
	}
	if m.events[k].Seq != plan.LoadedSeq {
		t.Fatalf("row moved since it was loaded")
	}
	m.events[k] = plan.Event
	m.corrections[plan.Correction.ID] = plan.Correction
	return plan, nil
}

func request(action CorrectionAction, typ Type, id string) CorrectionRequest {
	return CorrectionRequest{EventType: typ, EventID: id, Action: action, Reason: "chargeback reported by the card network", By: "op", At: t0}
}

func TestCorrections(t *testing.T) {
	m := newMemLedger()
	end := t0.Add(-time.Hour)
	m.ingest(t, Batch{Operator: "op", Events: []Event{
		session("c1", "a", Verified, end),
		payment("t1", "a", Settled, end),
		payment("t2", "a", Held, time.Time{}),
		session("c2", "b", Failed, end),
	}})

	chargeback := request(ActionStatus, AP2Transaction, "t1")
	chargeback.Status = Refunded
	plan, err := m.correct(t, chargeback)
	if err != nil {
		t.Fatal(err)
	}
	c := plan.Correction
	if c.FromStatus != Settled || c.ToStatus != Refunded || c.FromAgent != "a" || c.ToAgent != "a" || len(plan.Records) != 1 ||
		plan.Heads[0].Terminal != plan.Records[0].Seq || !strings.HasPrefix(c.ID, "cor-") {
		t.Fatalf("chargeback plan %+v", plan)
	}
	if e := m.events[EventKey{AP2Transaction, "t1"}]; e.CurrentStatus() != Refunded || e.Event.Status != Settled || e.Seq != plan.Records[0].Seq {
		t.Errorf("row after the chargeback %+v", e)
	}
	// The same correction again, at another time, is a no-op.
	again := chargeback
	again.At = t0.Add(time.Hour)
	if p, err := m.correct(t, again); err != nil || !p.Existing || p.Correction.ID != c.ID || !p.Correction.At.Equal(t0) {
		t.Errorf("repeat: %+v %v", p, err)
	}
	// A re-sent export of the original report is still a duplicate.
	if out := m.ingest(t, Batch{Operator: "op", Events: []Event{payment("t1", "a", Settled, end), payment("t1", "a", Held, time.Time{})}}); out[0].Status != OutcomeDuplicate || out[1].Status != OutcomeSuperseded {
		t.Errorf("re-send after a correction: %+v", out)
	}

	move := request(ActionReattribute, ConduitSession, "c1")
	move.AgentID = "z"
	plan, err = m.correct(t, move)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Records) != 2 || plan.Records[0].AgentID != "a" || plan.Records[1].AgentID != "z" || !plan.Heads[1].New || plan.Event.Seq != 1 {
		t.Fatalf("re-attribution plan %+v", plan)
	}
	back := request(ActionReattribute, ConduitSession, "c1")
	back.AgentID, back.Reason = "a", "moved by mistake"
	if _, err := m.correct(t, back); err != nil {
		t.Fatal(err)
	}
	void := request(ActionVoid, ConduitSession, "c2")
	if _, err := m.correct(t, void); err != nil {
		t.Fatal(err)
	}
	if rep, err := VerifyChains(m.walk()); err != nil || len(rep.Broken) != 0 || rep.Agents != 3 {
		t.Fatalf("verify after corrections: %+v %v", rep, err)
	}

	bad := []struct {
		name string
		req  CorrectionRequest
		kind errkind.Kind
	}{
		{"unknown event", request(ActionVoid, ConduitSession, "c9"), errkind.NotFound},
		{"not final", request(ActionVoid, AP2Transaction, "t2"), errkind.Conflict},
		{"voided", func() CorrectionRequest {
			r := request(ActionStatus, ConduitSession, "c2")
			r.Status = Verified
			return r
		}(), errkind.Conflict},
		{"same status", func() CorrectionRequest {
			r := request(ActionStatus, AP2Transaction, "t1")
			r.Status = Refunded
			r.Reason = "x"
			return r
		}(), errkind.Invalid},
		{"same agent", func() CorrectionRequest {
			r := request(ActionReattribute, ConduitSession, "c1")
			r.AgentID = "a"
			r.Reason = "y"
			return r
		}(), errkind.Invalid},
		{"not a final status", func() CorrectionRequest { r := request(ActionStatus, AP2Transaction, "t1"); r.Status = Held; return r }(), errkind.Invalid},
		{"other type's status", func() CorrectionRequest {
			r := request(ActionStatus, AP2Transaction, "t1")
			r.Status = Verified
			return r
		}(), errkind.Invalid},
		{"no reason", func() CorrectionRequest { r := request(ActionVoid, AP2Transaction, "t1"); r.Reason = ""; return r }(), errkind.Invalid},
		{"control character", func() CorrectionRequest { r := request(ActionVoid, AP2Transaction, "t1"); r.Reason = "a\nb"; return r }(), errkind.Invalid},
		{"void with a status", func() CorrectionRequest {
			r := request(ActionVoid, AP2Transaction, "t1")
			r.Status = Refunded
			return r
		}(), errkind.Invalid},
		{"unknown action", request("undo", AP2Transaction, "t1"), errkind.Invalid},
	}
	for _, b := range bad {
		if _, err := m.correct(t, b.req); errkind.Of(err) != b.kind {
			t.Errorf("%s: %v, want %v", b.name, err, b.kind)
		}
	}
	if rep, err := VerifyChains(m.walk()); err != nil || len(rep.Broken) != 0 {
		t.Fatalf("verify after refused corrections: %+v %v", rep, err)
	}
}

// TestCorrectionTampering: a correction altered or removed, or a row
// moved or voided without one, breaks the chain where it happened.
func TestCorrectionTampering(t *testing.T) {
	end := t0.Add(-time.Hour)
	build := func(t *testing.T) *memLedger {
		m := newMemLedger()
		m.ingest(t, Batch{Operator: "op", Events: []Event{session("c1", "a", Verified, end), session("c2", "a", Verified, end), payment("t1", "b", Settled, end)}})
		r := request(ActionStatus, ConduitSession, "c1")
		r.Status = Failed
		if _, err := m.correct(t, r); err != nil {
			t.Fatal(err)
		}
		return m
	}
	cases := []struct {
		name   string
		tamper func(m *memLedger)
		want   string
	}{
		{"reason rewritten", func(m *memLedger) {
			for id, c := range m.corrections {
				c.Reason = "nothing to see"
				m.corrections[id] = c
			}
		}, "a/3"},
		{"correction deleted", func(m *memLedger) { clear(m.corrections) }, "a/3"},
		{"row moved without a correction", func(m *memLedger) {
			e := m.events[EventKey{ConduitSession, "c2"}]
			e.Corrected = &Current{AgentID: "b", Status: Verified}
			m.events[EventKey{ConduitSession, "c2"}] = e
		}, "a/2"},
		{"row voided without a correction", func(m *memLedger) {
			e := m.events[EventKey{AP2Transaction, "t1"}]
			e.Corrected = &Current{AgentID: "b", Status: Settled, Voided: true}
			m.events[EventKey{AP2Transaction, "t1"}] = e
		}, "b/1"},
		{"correction reverted in the row", func(m *memLedger) {
			e := m.events[EventKey{ConduitSession, "c1"}]
			e.Corrected = nil
			m.events[EventKey{ConduitSession, "c1"}] = e
		}, "a/3"},
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
			var got []string
			for _, b := range rep.Broken {
				got = append(got, fmt.Sprintf("%s/%d", b.AgentID, b.Seq))
			}
			if len(got) == 0 || got[0] != tc.want {
				t.Errorf("broken %v, want %s first", rep.Broken, tc.want)
			}
		})
	}
}

// TestCorrectionCanonical checks the hand-written encoder against RFC 8785
// through the jcs library, with text that needs escaping.
func TestCorrectionCanonical(t *testing.T) {
	c := Correction{ID: "cor-1", CorrectionRequest: CorrectionRequest{EventType: AP2Transaction, EventID: "t-1", Action: ActionStatus,
		Status: Refunded, Reason: `a "quoted" \ reason — é €  < > & ` + "\u2028", AppealID: "ap-1", By: "op", At: t0.Add(123 * time.Microsecond)},
		FromAgent: "a", FromStatus: Settled, ToAgent: "a", ToStatus: Refunded}
	got := c.AppendCanonical(nil, "a", 7)
	m := map[string]any{"action": "status", "agent_id": "a", "appeal_id": "ap-1", "at": FormatTime(c.At), "by": "op", "correction": "cor-1",
		"event_id": "t-1", "from_agent": "a", "from_status": "SETTLED", "reason": c.Reason, "seq": 7, "to_agent": "a", "to_status": "REFUNDED",
		"type": "ap2_transaction"}
	raw, _ := json.Marshal(m)
	want, err := jcs.Transform(raw)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("canonical\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(string(got), `"buyer_id"`) {
		t.Error("a correction's content must not look like a report's")
	}
	if err := (&CorrectionRequest{}).Validate(); !errors.Is(err, errkind.ErrInvalid) {
		t.Errorf("empty request: %v", err)
	}
}

// TestCorrectionCanonicalKeepsInvalidBytes: a reason holding U+FFFD,
// rewritten in a row as an invalid byte, is other content, so the chain
// breaks. (Replacing invalid bytes with U+FFFD when hashing, as this
// encoder once did, made the two hash alike.)
func TestCorrectionCanonicalKeepsInvalidBytes(t *testing.T) {
	c := Correction{ID: "cor-1", CorrectionRequest: CorrectionRequest{EventType: ConduitSession, EventID: "c-1", Action: ActionVoid,
		Reason: "duplicate \uFFFD entry", By: "op", At: t0}, FromAgent: "a", ToAgent: "a"}
	tampered := c
	tampered.Reason = "duplicate \xff entry"
	if got, bad := c.AppendCanonical(nil, "a", 1), tampered.AppendCanonical(nil, "a", 1); bytes.Equal(got, bad) {
		t.Fatalf("an invalid byte hashes as U+FFFD: %s", got)
	}
}
