package service

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/passport"
)

// issued returns the agent's current passport id.
func issued(t *testing.T, a *UseCases, agent string) string {
	t.Helper()
	c, err := a.Certificates.Certificate(context.Background(), agent)
	if err != nil {
		t.Fatal(err)
	}
	v := passport.Verify(c.Passport, []passport.Key{a.cfg.Key}, a.Certificates.clock.now())
	if v.Passport == nil {
		t.Fatalf("certificate does not parse: %+v", v)
	}
	return v.Passport.AgentPassportID
}

// TestAppealUpheld follows §11.3 with the clock moved by hand: filed,
// overdue to acknowledge after 7 days, acknowledged, upheld with a
// correction (recorded and re-issued in the decision's transaction), the
// old passport failing L2, escalated; every action in the history.
func TestAppealUpheld(t *testing.T) {
	ctx := context.Background()
	a, c := newUseCases(t)
	ingest(t, a, append(conduit("agent-1", "c", 80, 76, t0), ap2("agent-1", "t", 40, 38, t0)...))
	pid := issued(t, a, "agent-1")
	old, _ := a.Certificates.Certificate(ctx, "agent-1")

	filed, err := a.Corrections.FileAppeal(ctx, OperatorCaller("market-1"), AppealFiling{PassportID: pid, Grounds: appeal.IncorrectStatus,
		Statement: "c-77 was delivered; the buyer confirmed", Events: []ledger.EventKey{{Type: ledger.ConduitSession, ID: "c-77"}}})
	if err != nil {
		t.Fatal(err)
	}
	filedAt := c.t.Truncate(time.Second)
	if filed.State != appeal.Submitted || filed.AgentID != "agent-1" || filed.FiledBy != "market-1" || !filed.FiledAt.Equal(filedAt) ||
		filed.Next.Duty != "acknowledge" || !filed.Next.Due.Equal(filedAt.Add(7*24*time.Hour)) || filed.Overdue || !strings.HasPrefix(filed.ID, "apl-") {
		t.Fatalf("filed %+v", filed)
	}
	if list, _ := a.Corrections.Appeals(ctx, op, AppealQuery{Overdue: true}); len(list) != 0 {
		t.Fatalf("overdue at once: %+v", list)
	}
	c.t = c.t.Add(7*24*time.Hour + time.Second)
	list, err := a.Corrections.Appeals(ctx, op, AppealQuery{Overdue: true})
	if err != nil || len(list) != 1 || list[0].ID != filed.ID || !list[0].Overdue {
		t.Fatalf("overdue after 7 days: %+v %v", list, err)
	}
	st, err := a.Corrections.AppealStats(ctx)
	if err != nil || st.ByState[appeal.Submitted] != 1 || st.Overdue["acknowledge"] != 1 || st.Overdue["decide"] != 0 {
		t.Fatalf("stats %+v %v", st, err)
	}

	acked, _, err := a.Corrections.ActOnAppeal(ctx, filed.ID, OperatorCaller("ops-1"), AppealDecision{Action: appeal.Ack})
	if err != nil || acked.State != appeal.Acknowledged || acked.Next.Duty != "decide" || acked.Overdue {
		t.Fatalf("ack: %+v %v", acked, err)
	}
	// An uphold must apply corrections, of disputed events only.
	fix := statusCorrection(ledger.ConduitSession, "c-77", ledger.Verified, "", "")
	if _, _, err := a.Corrections.ActOnAppeal(ctx, filed.ID, OperatorCaller("ops-1"), AppealDecision{Action: appeal.Uphold, Reason: "confirmed"}); errkind.Of(err) != errkind.Invalid {
		t.Fatalf("uphold without corrections: %v", err)
	}
	other := statusCorrection(ledger.ConduitSession, "c-78", ledger.Verified, "", "")
	if _, _, err := a.Corrections.ActOnAppeal(ctx, filed.ID, OperatorCaller("ops-1"), AppealDecision{Action: appeal.Uphold, Reason: "confirmed",
		Corrections: []ledger.CorrectionRequest{other}}); errkind.Of(err) != errkind.Invalid || !strings.Contains(err.Error(), "does not dispute") {
		t.Fatalf("uphold correcting another event: %v", err)
	}
	if _, _, err := a.Corrections.ActOnAppeal(ctx, filed.ID, OperatorCaller("ops-1"), AppealDecision{Action: appeal.Reject, Reason: "no",
		Corrections: []ledger.CorrectionRequest{fix}}); errkind.Of(err) != errkind.Invalid {
		t.Fatalf("reject with corrections: %v", err)
	}
	c.t = c.t.Add(time.Hour)
	decidedAt := c.t.Truncate(time.Second)
	up, done, err := a.Corrections.ActOnAppeal(ctx, filed.ID, OperatorCaller("ops-2"), AppealDecision{Action: appeal.Uphold, Reason: "the buyer's confirmation checks out",
		Corrections: []ledger.CorrectionRequest{fix}})
	if err != nil {
		t.Fatal(err)
	}
	if up.State != appeal.Upheld || !up.DecidedAt.Equal(decidedAt) || !up.ReissuedAt.Equal(decidedAt) || up.Next.Duty != "" ||
		len(up.Corrections) != 1 || len(done) != 1 || up.Corrections[0] != done[0].ID {
		t.Fatalf("upheld %+v, corrections %+v", up, done)
	}
	if d := done[0]; d.AppealID != filed.ID || d.By != "ops-2" || d.Reason != "the buyer's confirmation checks out" || d.ToStatus != ledger.Verified {
		t.Fatalf("correction %+v", d)
	}
	if e, _ := a.Certificates.Score(ctx, "agent-1"); e.Result.Counts.ConduitSuccess != 77 {
		t.Fatalf("score after the uphold %+v", e.Result.Counts)
	}
	if v, _ := a.Verifier.Verify(ctx, old.Passport, "agent-1"); v.ScoreValid {
		t.Fatal("the disputed passport still passes L2")
	}
	cur, _ := a.Certificates.Certificate(ctx, "agent-1")
	verifyOK(t, a, cur.Passport, "agent-1")

	if _, _, err := a.Corrections.ActOnAppeal(ctx, filed.ID, OperatorCaller("ops-1"), AppealDecision{Action: appeal.Reject, Reason: "late"}); errkind.Of(err) != errkind.Conflict {
		t.Fatalf("reject after uphold: %v", err)
	}
	esc, _, err := a.Corrections.ActOnAppeal(ctx, filed.ID, OperatorCaller("agent-rep"), AppealDecision{Action: appeal.Escalate, Reason: "to the board"})
	if err != nil || esc.State != appeal.Escalated {
		t.Fatalf("escalate: %+v %v", esc, err)
	}
	got, err := a.Corrections.Appeal(ctx, op, filed.ID)
	if err != nil {
		t.Fatal(err)
	}
	var hist []string
	for _, h := range got.History {
		hist = append(hist, string(h.Action)+" by "+h.By)
	}
	if strings.Join(hist, "; ") != "file by market-1; ack by ops-1; uphold by ops-2; escalate by agent-rep" {
		t.Fatalf("history %v", hist)
	}
	st, _ = a.Corrections.AppealStats(ctx)
	if st.ByState[appeal.Escalated] != 1 || st.ByState[appeal.Submitted] != 0 || st.Overdue["acknowledge"] != 0 {
		t.Fatalf("stats at the end %+v", st)
	}
}

func TestAppealFilingRules(t *testing.T) {
	ctx := context.Background()
	a, c := newUseCases(t)
	ingest(t, a, conduit("agent-1", "c", 3, 3, t0))
	pid := issued(t, a, "agent-1")
	ev := []ledger.EventKey{{Type: ledger.ConduitSession, ID: "c-1"}}
	cases := []struct {
		name string
		f    AppealFiling
		kind errkind.Kind
		msg  string
	}{
		{"formula", AppealFiling{PassportID: pid, Grounds: "formula", Statement: "weights are unfair", Events: ev}, errkind.Invalid, "disagreement with the formula"},
		{"no events", AppealFiling{PassportID: pid, Grounds: appeal.IncorrectCount, Statement: "x"}, errkind.Invalid, "at least one"},
		{"unknown passport", AppealFiling{PassportID: "00000000-0000-4000-8000-000000000000", Grounds: appeal.IncorrectCount, Statement: "x", Events: ev}, errkind.NotFound, ""},
		{"bad passport id", AppealFiling{PassportID: "no spaces", Grounds: appeal.IncorrectCount, Statement: "x", Events: ev}, errkind.Invalid, "agent_passport_id"},
	}
	for _, tc := range cases {
		_, err := a.Corrections.FileAppeal(ctx, OperatorCaller("ops"), tc.f)
		if errkind.Of(err) != tc.kind || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if _, err := a.Corrections.FileAppeal(ctx, OperatorCaller("ops"), AppealFiling{PassportID: "00000000-0000-4000-8000-000000000000", Grounds: appeal.IncorrectCount, Statement: "x", Events: ev}); err != nil {
		if d, ok := errkind.PublicDetail(err); !ok || !strings.Contains(d, "was issued here") {
			t.Errorf("unknown passport detail %q", d)
		}
	}
	// 30 days after the passport's computation the window closes.
	c.t = c.t.Add(30*24*time.Hour + time.Second)
	if _, err := a.Corrections.FileAppeal(ctx, OperatorCaller("ops"), AppealFiling{PassportID: pid, Grounds: appeal.IncorrectCount, Statement: "x", Events: ev}); errkind.Of(err) != errkind.Invalid ||
		!strings.Contains(err.Error(), "30 days") {
		t.Fatalf("late filing: %v", err)
	}
	if _, err := a.Corrections.Appeals(ctx, op, AppealQuery{State: "open"}); errkind.Of(err) != errkind.Invalid {
		t.Fatalf("unknown state: %v", err)
	}
	if _, err := a.Corrections.Appeal(ctx, op, "apl-none"); errkind.Of(err) != errkind.NotFound {
		t.Fatalf("unknown appeal: %v", err)
	}
}

// TestAppealsOrder: overdue first, longest overdue first; then the others
// by filing time; a state filter applies before.
func TestAppealsOrder(t *testing.T) {
	ctx := context.Background()
	a, c := newUseCases(t)
	ingest(t, a, conduit("agent-1", "c", 3, 3, t0))
	pid := issued(t, a, "agent-1")
	file := func() string {
		s, err := a.Corrections.FileAppeal(ctx, OperatorCaller("ops"), AppealFiling{PassportID: pid, Grounds: appeal.IncorrectCount, Statement: "x",
			Events: []ledger.EventKey{{Type: ledger.ConduitSession, ID: "c-1"}}})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	first := file() // will be acknowledged: decide within 21 days
	c.t = c.t.Add(24 * time.Hour)
	second := file() // overdue to acknowledge after 7 days
	c.t = c.t.Add(24 * time.Hour)
	third := file()
	if _, _, err := a.Corrections.ActOnAppeal(ctx, first, OperatorCaller("ops"), AppealDecision{Action: appeal.Ack}); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(7*24*time.Hour + time.Hour) // second and third overdue to ack; first not yet to decide
	ids := func(q AppealQuery) string {
		list, err := a.Corrections.Appeals(ctx, op, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range list {
			out = append(out, s.ID)
		}
		return strings.Join(out, ",")
	}
	if got, want := ids(AppealQuery{}), strings.Join([]string{second, third, first}, ","); got != want {
		t.Fatalf("all: %s, want %s", got, want)
	}
	if got := ids(AppealQuery{State: appeal.Acknowledged}); got != first {
		t.Fatalf("acknowledged: %s", got)
	}
	if got := ids(AppealQuery{State: appeal.Acknowledged, Overdue: true}); got != "" {
		t.Fatalf("acknowledged and overdue: %s", got)
	}
}

// TestAgentAppeals: an agent's own token files, reads, lists and
// escalates its own appeals; another agent's appeal and passport are not
// found in the words of unknown ones; acknowledging, upholding and
// rejecting stay the operator's, refused before the appeal is read;
// nobody is unauthorized.
func TestAgentAppeals(t *testing.T) {
	ctx := context.Background()
	a, _ := newUseCases(t)
	ingest(t, a, append(conduit("agent-1", "c", 10, 9, t0), conduit("agent-2", "d", 10, 9, t0)...))
	p1, p2 := issued(t, a, "agent-1"), issued(t, a, "agent-2")
	me, other := agentCaller("agent-1"), agentCaller("agent-2")
	pub := func(err error) string { d, _ := errkind.PublicDetail(err); return d }
	filing := func(pid, ev string) AppealFiling {
		return AppealFiling{PassportID: pid, Grounds: appeal.IncorrectStatus, Statement: "it was delivered",
			Events: []ledger.EventKey{{Type: ledger.ConduitSession, ID: ev}}}
	}
	mine, err := a.Corrections.FileAppeal(ctx, me, filing(p1, "c-9"))
	if err != nil || mine.AgentID != "agent-1" || mine.FiledBy != "agent:tok-agent-1" {
		t.Fatalf("the agent files its own: %+v %v", mine, err)
	}
	theirs, err := a.Corrections.FileAppeal(ctx, op, filing(p2, "d-9"))
	if err != nil {
		t.Fatal(err)
	}
	_, errUnknown := a.Corrections.FileAppeal(ctx, me, filing("00000000-0000-4000-8000-000000000000", "c-9"))
	_, errOther := a.Corrections.FileAppeal(ctx, me, filing(p2, "d-9"))
	if errkind.Of(errOther) != errkind.NotFound || pub(errOther) != strings.Replace(pub(errUnknown), "00000000-0000-4000-8000-000000000000", p2, 1) {
		t.Fatalf("another agent's passport: %v (unknown: %v)", errOther, errUnknown)
	}
	if _, err := a.Corrections.FileAppeal(ctx, anyone, filing(p1, "c-9")); errkind.Of(err) != errkind.Unauthorized {
		t.Fatalf("nobody files: %v", err)
	}

	if list, err := a.Corrections.Appeals(ctx, me, AppealQuery{}); err != nil || len(list) != 1 || list[0].ID != mine.ID {
		t.Fatalf("the agent's list: %+v %v", list, err)
	}
	if list, err := a.Corrections.Appeals(ctx, op, AppealQuery{}); err != nil || len(list) != 2 {
		t.Fatalf("the operator's list: %+v %v", list, err)
	}
	if _, err := a.Corrections.Appeals(ctx, anyone, AppealQuery{}); errkind.Of(err) != errkind.Unauthorized {
		t.Fatalf("nobody lists: %v", err)
	}
	if got, err := a.Corrections.Appeal(ctx, me, mine.ID); err != nil || got.ID != mine.ID {
		t.Fatalf("the agent reads its own: %+v %v", got, err)
	}
	_, errOther = a.Corrections.Appeal(ctx, other, mine.ID)
	_, errUnknown = a.Corrections.Appeal(ctx, other, "apl-none")
	if errkind.Of(errOther) != errkind.NotFound ||
		pub(errOther) != strings.Replace(pub(errUnknown), "apl-none", mine.ID, 1) {
		t.Fatalf("another agent's appeal: %v (unknown: %v)", errOther, errUnknown)
	}

	// Only the operator decides; the agent may not even acknowledge, and
	// is told so before the appeal is read (an unknown id is 403 too).
	for _, act := range []appeal.Action{appeal.Ack, appeal.Uphold, appeal.Reject} {
		for _, id := range []string{mine.ID, "apl-none"} {
			if _, _, err := a.Corrections.ActOnAppeal(ctx, id, me, AppealDecision{Action: act, Reason: "mine"}); errkind.Of(err) != errkind.Forbidden {
				t.Fatalf("the agent %ss %s: %v", act, id, err)
			}
		}
	}
	// Escalation needs a decision first; then the appellant escalates.
	if _, _, err := a.Corrections.ActOnAppeal(ctx, mine.ID, me, AppealDecision{Action: appeal.Escalate}); errkind.Of(err) != errkind.Conflict {
		t.Fatalf("escalate before a decision: %v", err)
	}
	for _, id := range []string{mine.ID, theirs.ID} {
		if _, _, err := a.Corrections.ActOnAppeal(ctx, id, op, AppealDecision{Action: appeal.Reject, Reason: "the buyer disputes it"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := a.Corrections.ActOnAppeal(ctx, theirs.ID, me, AppealDecision{Action: appeal.Escalate}); errkind.Of(err) != errkind.NotFound {
		t.Fatalf("escalating another agent's appeal: %v", err)
	}
	if _, _, err := a.Corrections.ActOnAppeal(ctx, mine.ID, anyone, AppealDecision{Action: appeal.Escalate}); errkind.Of(err) != errkind.Unauthorized {
		t.Fatalf("nobody escalates: %v", err)
	}
	esc, _, err := a.Corrections.ActOnAppeal(ctx, mine.ID, me, AppealDecision{Action: appeal.Escalate, Reason: "to the board"})
	if err != nil || esc.State != appeal.Escalated || esc.History[len(esc.History)-1].By != "agent:tok-agent-1" {
		t.Fatalf("the appellant escalates: %+v %v", esc, err)
	}
}
