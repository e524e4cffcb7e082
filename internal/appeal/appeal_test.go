package appeal

import (
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

var (
	t0 = time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)
	pp = ledger.IssuedPassport{ID: "8b3c4a1e-0000-4000-8000-000000000001", AgentID: "agent-1", ComputedAt: t0}
)

func filing() Filing {
	return Filing{ID: "apl-1", PassportID: pp.ID, Grounds: IncorrectStatus, Statement: "session s-1 was verified by the buyer",
		Events: []ledger.EventKey{{Type: ledger.ConduitSession, ID: "s-2"}, {Type: ledger.ConduitSession, ID: "s-1"}, {Type: ledger.ConduitSession, ID: "s-1"}},
		By:     "op", At: t0.Add(24 * time.Hour)}
}

func TestNew(t *testing.T) {
	a, err := New(filing(), pp)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != Submitted || a.AgentID != "agent-1" || len(a.Events) != 2 || a.Events[0].ID != "s-1" || len(a.History) != 1 || a.History[0].Action != File {
		t.Errorf("appeal %+v", a)
	}
	if d := a.Next(); d.Duty != "acknowledge" || !d.Due.Equal(a.FiledAt.Add(7*24*time.Hour)) {
		t.Errorf("next %+v", d)
	}
	bad := map[string]func(*Filing){
		"formula":     func(f *Filing) { f.Grounds = "formula" },
		"unknown":     func(f *Filing) { f.Grounds = "unfair" },
		"late":        func(f *Filing) { f.At = t0.Add(30*24*time.Hour + time.Second) },
		"no events":   func(f *Filing) { f.Events = nil },
		"bad event":   func(f *Filing) { f.Events = []ledger.EventKey{{Type: "x", ID: "s"}} },
		"no text":     func(f *Filing) { f.Statement = "" },
		"bad id":      func(f *Filing) { f.ID = "a b" },
		"control":     func(f *Filing) { f.Statement = "a\x00b" },
		"no time":     func(f *Filing) { f.At = time.Time{} },
		"long":        func(f *Filing) { f.Statement = strings.Repeat("x", MaxTextLen+1) },
		"invalid utf": func(f *Filing) { f.Statement = "\xff" },
	}
	for name, mod := range bad {
		f := filing()
		mod(&f)
		if _, err := New(f, pp); errkind.Of(err) != errkind.Invalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	f := filing()
	f.Grounds = "formula"
	if _, err := New(f, pp); err == nil || !strings.Contains(err.Error(), "formula is not a ground") {
		t.Errorf("formula disagreement must be refused with the reason: %v", err)
	}
	f = filing()
	f.At = t0.Add(30 * 24 * time.Hour)
	if _, err := New(f, pp); err != nil {
		t.Errorf("on the last day: %v", err)
	}
}

func TestApply(t *testing.T) {
	a, _ := New(filing(), pp)
	if _, err := Apply(a, Escalate, "op", t0, ""); errkind.Of(err) != errkind.Conflict {
		t.Errorf("escalate before a decision: %v", err)
	}
	if _, err := Apply(a, Uphold, "op", t0, ""); errkind.Of(err) != errkind.Invalid {
		t.Errorf("a decision without a reason: %v", err)
	}
	ack, err := Apply(a, Ack, "op", a.FiledAt.Add(time.Hour), "")
	if err != nil || ack.State != Acknowledged || ack.AcknowledgedAt.IsZero() || len(ack.History) != 2 || len(a.History) != 1 {
		t.Fatalf("ack %+v %v (the original must not change: %d entries)", ack, err, len(a.History))
	}
	if _, err := Apply(ack, Ack, "op", t0, ""); errkind.Of(err) != errkind.Conflict {
		t.Errorf("ack twice: %v", err)
	}
	if d := ack.Next(); d.Duty != "decide" || !d.Due.Equal(a.FiledAt.Add(21*24*time.Hour)) {
		t.Errorf("next %+v", d)
	}
	up, err := Apply(ack, Uphold, "op", a.FiledAt.Add(2*24*time.Hour), "the buyer's logs confirm it")
	if err != nil || up.State != Upheld || up.Decision == "" {
		t.Fatalf("uphold %+v %v", up, err)
	}
	if !up.Overdue(up.DecidedAt.Add(7*24*time.Hour+time.Second)) || up.Overdue(up.DecidedAt.Add(7*24*time.Hour)) {
		t.Error("re-issue deadline")
	}
	up.ReissuedAt = up.DecidedAt
	if up.Overdue(up.DecidedAt.Add(30 * 24 * time.Hour)) {
		t.Error("a re-issued appeal is never overdue")
	}
	esc, err := Apply(up, Escalate, "op", up.DecidedAt.Add(time.Hour), "the agent disagrees")
	if err != nil || esc.State != Escalated {
		t.Errorf("escalate %+v %v", esc, err)
	}
	rej, err := Apply(a, Reject, "op", a.FiledAt.Add(time.Hour), "the session failed")
	if err != nil || rej.State != Rejected || rej.AcknowledgedAt.IsZero() {
		t.Errorf("reject from submitted %+v %v", rej, err)
	}
	if !a.Overdue(a.FiledAt.Add(7*24*time.Hour+time.Second)) || a.Overdue(a.FiledAt.Add(time.Hour)) {
		t.Error("ack deadline")
	}
	if _, err := Apply(a, "undo", "op", t0, ""); errkind.Of(err) != errkind.Invalid {
		t.Errorf("unknown action: %v", err)
	}
}
