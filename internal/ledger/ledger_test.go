package ledger

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

const (
	conduitJSON = `{"type":"conduit_session","id":"s-1","agent_id":"agent-1","buyer_id":"buyer-1","status":"VERIFIED","started_at":"2026-03-17T14:00:00+02:00","completed_at":"2026-03-17T12:30:00.25Z"}`
	ap2JSON     = `{"type":"ap2_transaction","id":"t-1","provider_id":"agent-1","buyer_id":"buyer-1","status":"SETTLED","escrow_amount_cents":100000,"started_at":"2026-03-17T14:00:00Z","settled_at":"2026-03-18T14:00:00Z"}`
)

func TestParseEvent(t *testing.T) {
	e, err := ParseEvent([]byte(conduitJSON))
	if err != nil {
		t.Fatal(err)
	}
	want := Event{Type: ConduitSession, ID: "s-1", AgentID: "agent-1", BuyerID: "buyer-1", Status: Verified,
		StartedAt: time.Date(2026, 3, 17, 12, 0, 0, 0, time.UTC), EndedAt: time.Date(2026, 3, 17, 12, 30, 0, 250e6, time.UTC)}
	if !e.Equal(&want) || e.StartedAt.Location() != time.UTC {
		t.Errorf("got %+v\nwant %+v", e, want)
	}
	a, err := ParseEvent([]byte(ap2JSON))
	if err != nil {
		t.Fatal(err)
	}
	if a.Type != AP2Transaction || a.AgentID != "agent-1" || a.EscrowAmountCents != 100000 || a.Status != Settled {
		t.Errorf("got %+v", a)
	}
	// Round trip through MarshalJSON.
	for _, ev := range []Event{e, a} {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseEvent(b)
		if err != nil || !back.Equal(&ev) {
			t.Errorf("round trip %s: %+v, %v", b, back, err)
		}
	}
	// Optional buyer for Conduit; non-terminal without a completion time.
	if _, err := ParseEvent([]byte(`{"type":"conduit_session","id":"s","agent_id":"a","status":"RUNNING","started_at":"2026-03-17T14:00:00Z"}`)); err != nil {
		t.Errorf("a running session without buyer: %v", err)
	}
}

func TestParseEventErrors(t *testing.T) {
	cases := []struct{ in, field string }{
		{`[]`, ""},
		{`{`, ""},
		{`{"type":"conduit_session"} x`, ""},
		{`{"type":"other"}`, "type"},
		{`{"id":"x"}`, "type"},
		{`{"type":"conduit_session","type":"conduit_session"}`, "type"},
		{strings.Replace(conduitJSON, `"id":"s-1"`, `"id":""`, 1), "id"},
		{strings.Replace(conduitJSON, `"id":"s-1"`, `"id":"s 1"`, 1), "id"},
		{strings.Replace(conduitJSON, `"id":"s-1"`, `"id":"`+strings.Repeat("x", 129)+`"`, 1), "id"},
		{strings.Replace(conduitJSON, `"id":"s-1"`, `"id":7`, 1), "id"},
		{strings.Replace(conduitJSON, `"id":"s-1"`, `"id":"."`, 1), "id"},
		{strings.Replace(conduitJSON, `"id":"s-1"`, `"id":".."`, 1), "id"},
		{strings.Replace(conduitJSON, `"agent_id":"agent-1"`, `"agent_id":".."`, 1), "agent_id"},
		{strings.Replace(conduitJSON, `"buyer_id":"buyer-1"`, `"buyer_id":"."`, 1), "buyer_id"},
		{strings.Replace(conduitJSON, `"agent_id"`, `"provider_id"`, 1), "provider_id"},
		{strings.Replace(conduitJSON, `"agent_id":"agent-1",`, ``, 1), "agent_id"},
		{strings.Replace(conduitJSON, `"buyer_id":"buyer-1"`, `"buyer_id":""`, 1), "buyer_id"},
		{strings.Replace(conduitJSON, `"VERIFIED"`, `"SETTLED"`, 1), "status"},
		{strings.Replace(conduitJSON, `"VERIFIED"`, `"verified"`, 1), "status"},
		{strings.Replace(conduitJSON, `,"completed_at":"2026-03-17T12:30:00.25Z"`, ``, 1), "completed_at"},
		{strings.Replace(conduitJSON, `"VERIFIED"`, `"RUNNING"`, 1), "completed_at"},
		{strings.Replace(conduitJSON, `12:30:00.25Z`, `11:59:59.999999Z`, 1), "completed_at"},
		{strings.Replace(conduitJSON, `12:30:00.25Z`, `12:30:00.2500001Z`, 1), "completed_at"},
		{strings.Replace(conduitJSON, `2026-03-17T12:30:00.25Z`, `2026-03-17 12:30:00Z`, 1), "completed_at"},
		{strings.Replace(conduitJSON, `"2026-03-17T14:00:00+02:00"`, `null`, 1), "started_at"},
		{strings.Replace(conduitJSON, `}`, `,"extra":1}`, 1), "extra"},
		{strings.Replace(conduitJSON, `}`, `,"escrow_amount_cents":1}`, 1), "escrow_amount_cents"},
		{strings.Replace(ap2JSON, `100000`, `1000.5`, 1), "escrow_amount_cents"},
		{strings.Replace(ap2JSON, `100000`, `1e5`, 1), "escrow_amount_cents"},
		{strings.Replace(ap2JSON, `100000`, `-1`, 1), "escrow_amount_cents"},
		{strings.Replace(ap2JSON, `100000`, `"100000"`, 1), "escrow_amount_cents"},
		{strings.Replace(ap2JSON, `100000`, `9007199254740992`, 1), "escrow_amount_cents"},
		{strings.Replace(ap2JSON, `100000`, `0100000`, 1), ""},
		{strings.Replace(ap2JSON, `"escrow_amount_cents":100000,`, ``, 1), "escrow_amount_cents"},
		{strings.Replace(ap2JSON, `"buyer_id":"buyer-1",`, ``, 1), "buyer_id"},
		{strings.Replace(ap2JSON, `"settled_at"`, `"completed_at"`, 1), "completed_at"},
	}
	for _, c := range cases {
		_, err := ParseEvent([]byte(c.in))
		var fe *FieldError
		if !errors.As(err, &fe) || !errors.Is(err, errkind.ErrInvalid) {
			t.Errorf("%s: error %v, want a *FieldError", c.in, err)
			continue
		}
		if c.field != "" && fe.Field != c.field {
			t.Errorf("%s: error names field %q (%v), want %q", c.in, fe.Field, err, c.field)
		}
	}
	if _, err := ParseEvent([]byte(strings.Replace(ap2JSON, `100000`, `9007199254740991`, 1))); err != nil {
		t.Errorf("the largest amount: %v", err)
	}
}

func TestLifecycle(t *testing.T) {
	ok := [][3]string{
		{"conduit_session", "PENDING", "RUNNING"}, {"conduit_session", "PENDING", "VERIFIED"}, {"conduit_session", "RUNNING", "TIMEOUT"},
		{"ap2_transaction", "NEGOTIATING", "HELD"}, {"ap2_transaction", "DELIVERED", "SETTLED"}, {"ap2_transaction", "HELD", "CANCELLED"},
		{"ap2_transaction", "NEGOTIATING", "CANCELLED"}, {"ap2_transaction", "EXECUTING", "DISPUTED"},
	}
	for _, c := range ok {
		if err := CheckTransition(Type(c[0]), Status(c[1]), Status(c[2])); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
	conflict := [][3]string{
		{"conduit_session", "RUNNING", "PENDING"}, {"conduit_session", "VERIFIED", "FAILED"}, {"conduit_session", "ERROR", "VERIFIED"},
		{"ap2_transaction", "SETTLED", "REFUNDED"}, {"ap2_transaction", "CANCELLED", "HELD"}, {"ap2_transaction", "DELIVERED", "HELD"},
		{"ap2_transaction", "HELD", "HELD"},
	}
	for _, c := range conflict {
		if err := CheckTransition(Type(c[0]), Status(c[1]), Status(c[2])); !errors.Is(err, errkind.ErrConflict) {
			t.Errorf("%v: %v, want a conflict", c, err)
		}
	}
	if err := CheckTransition(ConduitSession, Pending, Settled); !errors.Is(err, errkind.ErrInvalid) {
		t.Errorf("cross-type status: %v", err)
	}
	for _, s := range []Status{Verified, Failed, Settled, Disputed, Refunded} {
		if !s.CountsTotal() || !s.Terminal() {
			t.Errorf("%s should count and be terminal", s)
		}
	}
	for _, s := range []Status{Pending, Running, Error, Timeout, Negotiating, Held, Executing, Delivered, Cancelled} {
		if s.CountsTotal() || s.CountsSuccess() {
			t.Errorf("%s must not count (Pitfall 4)", s)
		}
	}
}

func TestClassify(t *testing.T) {
	e, _ := ParseEvent([]byte(conduitJSON))
	if d, err := Classify(&e, "op", &e, "op"); d != Duplicate || err != nil {
		t.Errorf("same: %v %v", d, err)
	}
	run := e
	run.Status, run.EndedAt = Running, time.Time{}
	if d, err := Classify(&run, "op", &e, "op"); d != Transition || err != nil {
		t.Errorf("forward: %v %v", d, err)
	}
	for name, f := range map[string]func(*Event){
		"agent":  func(x *Event) { x.AgentID = "other" },
		"buyer":  func(x *Event) { x.BuyerID = "" },
		"start":  func(x *Event) { x.StartedAt = x.StartedAt.Add(time.Microsecond) },
		"end":    func(x *Event) { x.EndedAt = x.EndedAt.Add(time.Microsecond) },
		"status": func(x *Event) { x.Status = Failed },
	} {
		x := e
		f(&x)
		if _, err := Classify(&e, "op", &x, "op"); !errors.Is(err, errkind.ErrConflict) {
			t.Errorf("%s: %v, want a conflict", name, err)
		}
	}
	if _, err := Classify(&e, "op", &e, "op2"); !errors.Is(err, errkind.ErrConflict) || strings.Contains(err.Error(), "op\"") {
		t.Errorf("other operator: %v", err)
	}
	// An earlier status that agrees with the recorded one is superseded,
	// whether the recorded one is final or not; a changed field is still a
	// conflict.
	if d, err := Classify(&e, "op", &run, "op"); d != Superseded || err != nil {
		t.Errorf("earlier than final: %v %v", d, err)
	}
	pending := run
	pending.Status = Pending
	if d, err := Classify(&run, "op", &pending, "op"); d != Superseded || err != nil {
		t.Errorf("earlier than running: %v %v", d, err)
	}
	pending.StartedAt = pending.StartedAt.Add(time.Second)
	if _, err := Classify(&run, "op", &pending, "op"); !errors.Is(err, errkind.ErrConflict) {
		t.Errorf("earlier with another start: %v", err)
	}
	if _, err := Classify(&e, "op2", &run, "op"); !errors.Is(err, errkind.ErrConflict) {
		t.Errorf("earlier from another operator: %v", err)
	}
}

func TestWindow(t *testing.T) {
	// ERRATA E42: 90 days of 24 hours, whatever §15.3 suggests operators do.
	if Window != 90*24*time.Hour {
		t.Fatalf("the window is %s; ERRATA E42 fixes it at 90 days", Window)
	}
	asOf := time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)
	start := WindowStart(asOf)
	if want := time.Date(2025, 12, 17, 14, 30, 0, 0, time.UTC); !start.Equal(want) {
		t.Errorf("window start %s, want %s", start, want)
	}
	for at, in := range map[time.Time]bool{
		start: true, asOf: true, start.Add(-Resolution): false, asOf.Add(Resolution): false, asOf.Add(-45 * 24 * time.Hour): true,
	} {
		if InWindow(at, asOf) != in {
			t.Errorf("InWindow(%s) = %v", at, !in)
		}
	}
	// The lifetime, the oldest event leaving and a future event entering.
	if got := ValidUntil(asOf, time.Time{}, time.Time{}); !got.Equal(asOf.Add(CacheLifetime)) {
		t.Errorf("no events: %s", got)
	}
	oldest := start.Add(time.Hour)
	if got := ValidUntil(asOf, oldest, time.Time{}); !got.Equal(asOf.Add(time.Hour + Resolution)) {
		t.Errorf("oldest leaving: %s", got)
	}
	next := asOf.Add(30 * time.Minute)
	if got := ValidUntil(asOf, oldest, next); !got.Equal(next) {
		t.Errorf("future event: %s", got)
	}
}

func TestCanonicalIsJCS(t *testing.T) {
	for _, in := range []string{conduitJSON, ap2JSON, strings.Replace(ap2JSON, `100000`, `9007199254740991`, 1)} {
		e, err := ParseEvent([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		r := Record{Event: e, Operator: "op.1:x", Seq: 42}
		c := r.Canonical()
		j, err := jcs.Transform(c)
		if err != nil || string(j) != string(c) {
			t.Errorf("canonical %s is not JCS (%s, %v)", c, j, err)
		}
		back, err := ParseCanonical(c)
		if err != nil || !back.Event.Equal(&e) || back.Operator != r.Operator || back.Seq != 42 {
			t.Errorf("ParseCanonical: %+v %v", back, err)
		}
	}
	// A fixed vector pins the hashed format: changing it breaks every chain.
	e, _ := ParseEvent([]byte(conduitJSON))
	r := Record{Event: e, Operator: "op", Seq: 1}
	want := `{"agent_id":"agent-1","buyer_id":"buyer-1","ended_at":"2026-03-17T12:30:00.25Z","escrow_amount_cents":0,"id":"s-1","operator":"op","seq":1,"started_at":"2026-03-17T12:00:00Z","status":"VERIFIED","type":"conduit_session"}`
	if got := string(r.Canonical()); got != want {
		t.Errorf("canonical\n%s\nwant\n%s", got, want)
	}
	h1 := Link(Hash{}, r.Canonical())
	r.Seq = 2
	if Link(h1, r.Canonical()) == Link(Hash{}, r.Canonical()) {
		t.Error("the link does not depend on the previous hash")
	}
}

func TestLineReader(t *testing.T) {
	in := conduitJSON + "\n\n  \n" + `{"type":"bad"}` + "\r\n" + strings.Repeat("x", MaxLineBytes+10) + "\n" + ap2JSON
	lr := NewLineReader(strings.NewReader(in))
	var got []Line
	for {
		l, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	if len(got) != 4 {
		t.Fatalf("%d lines, want 4: %+v", len(got), got)
	}
	if got[0].Number != 1 || got[0].Err != nil || got[1].Number != 4 || got[1].Err == nil ||
		got[2].Number != 5 || got[2].Err == nil || got[3].Number != 6 || got[3].Err != nil || got[3].Event.ID != "t-1" {
		t.Errorf("lines %+v", got)
	}
}

func FuzzParseEvent(f *testing.F) {
	f.Add([]byte(conduitJSON))
	f.Add([]byte(ap2JSON))
	f.Add([]byte(`{"type":"ap2_transaction","escrow_amount_cents":1e400}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseEvent(data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %v is not a *FieldError", err, err)
			}
			return
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("parsed event fails Validate: %v", err)
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseEvent(b)
		if err != nil || !back.Equal(&e) {
			t.Fatalf("round trip of %s: %+v %v", b, back, err)
		}
		r := Record{Event: e, Operator: "op", Seq: 1}
		if c, err := jcs.Transform(r.Canonical()); err != nil || string(c) != string(r.Canonical()) {
			t.Fatalf("canonical form is not JCS: %s", r.Canonical())
		}
	})
}

// TestRejectionsNameTheEvent: a refused event still yields its id when it
// has a valid one, and a byte-order mark before the first line is skipped.
func TestRejectionsNameTheEvent(t *testing.T) {
	for _, in := range []string{
		`{"type":"conduit_session","id":"s-9","agent_id":"a","status":"VERIFIED","started_at":"2026-03-17T14:00:00Z"}`,
		`{"type":"other","id":"s-9"}`,
		`{"type":"conduit_session","id":"s-9","agent_id":"a","status":"RUNNING","started_at":"2026-03-17T14:00:00Z","extra":1}`,
	} {
		e, err := ParseEvent([]byte(in))
		if err == nil || e.ID != "s-9" || e.AgentID != "" {
			t.Errorf("%s: %+v %v", in, e, err)
		}
	}
	if e, err := ParseEvent([]byte(`{"type":"other","id":"bad id"}`)); err == nil || e.ID != "" {
		t.Errorf("an invalid id is not echoed: %+v %v", e, err)
	}
	lr := NewLineReader(strings.NewReader("\xef\xbb\xbf" + conduitJSON + "\n" + `{"id":"x-1","type":"?"}` + "\n"))
	first, err := lr.Next()
	if err != nil || first.Err != nil || first.Event.ID != "s-1" || first.Number != 1 {
		t.Errorf("first line after a BOM: %+v %v", first, err)
	}
	second, err := lr.Next()
	if err != nil || second.Err == nil || second.Event.ID != "x-1" || second.Number != 2 {
		t.Errorf("second line: %+v %v", second, err)
	}
}

func TestTaskOffer(t *testing.T) {
	e, err := ParseEvent([]byte(`{"type":"task_offer","id":"o-1","agent_id":"agent-1","buyer_id":"b-1","status":"DECLINED","started_at":"2026-03-17T14:00:00Z","decided_at":"2026-03-17T14:01:00Z"}`))
	if err != nil || e.Type != TaskOffer || e.Status != Declined || e.EndedAt.IsZero() || e.Counted() {
		t.Fatalf("%+v %v", e, err)
	}
	b, _ := json.Marshal(e)
	if back, err := ParseEvent(b); err != nil || !back.Equal(&e) || !strings.Contains(string(b), `"decided_at"`) {
		t.Errorf("round trip %s: %v", b, err)
	}
	for _, in := range []string{
		`{"type":"task_offer","id":"o-1","agent_id":"a","status":"OFFERED","started_at":"2026-03-17T14:00:00Z"}`,                                        // no buyer
		`{"type":"task_offer","id":"o-1","agent_id":"a","buyer_id":"b","status":"ACCEPTED","started_at":"2026-03-17T14:00:00Z"}`,                        // no decided_at
		`{"type":"task_offer","id":"o-1","agent_id":"a","buyer_id":"b","status":"VERIFIED","started_at":"2026-03-17T14:00:00Z"}`,                        // another type's status
		`{"type":"task_offer","id":"o-1","agent_id":"a","buyer_id":"b","status":"OFFERED","started_at":"2026-03-17T14:00:00Z","escrow_amount_cents":1}`, // not a field
	} {
		if _, err := ParseEvent([]byte(in)); err == nil {
			t.Errorf("accepted %s", in)
		}
	}
	if err := CheckTransition(TaskOffer, Accepted, Declined); !errors.Is(err, errkind.ErrConflict) {
		t.Errorf("accepted -> declined: %v", err)
	}
	if err := CheckTransition(TaskOffer, Offered, Accepted); err != nil {
		t.Errorf("offered -> accepted: %v", err)
	}
}

func TestCheckID(t *testing.T) {
	for _, ok := range []string{"a", "agent-7", "...", ".a", "a.", "..a", "a..", "x:y_z.1", strings.Repeat("x", 128)} {
		if !ValidID(ok) || CheckID("agent_id", ok) != nil {
			t.Errorf("%q refused: %v", ok, CheckID("agent_id", ok))
		}
	}
	for bad, reason := range map[string]string{
		"":                       "agent_id: must not be empty",
		".":                      `agent_id: "." is not an id: "." and ".." are path segments with a special meaning`,
		"..":                     `agent_id: ".." is not an id: "." and ".." are path segments with a special meaning`,
		"a/b":                    `agent_id: "a/b" has a character outside [A-Za-z0-9._:-]`,
		strings.Repeat("x", 129): "agent_id: is 129 characters long (at most 128)",
	} {
		err := CheckID("agent_id", bad)
		if ValidID(bad) || err == nil || err.Error() != reason || !errors.Is(err, errkind.ErrInvalid) {
			t.Errorf("%q: %v, want %q", bad, err, reason)
		}
	}
}
