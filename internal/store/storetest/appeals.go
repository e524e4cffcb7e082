package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// testAppeals: an appeal is filed against an issued passport, comes back
// as stored, moves only from the state it was read in, and an uphold
// records its corrections and re-issues the passports in one transaction.
func testAppeals(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	ingest(t, s, "op-a", conduit("c1", "a", ledger.Failed, start, end), ap2("t1", "a", ledger.Settled, start, end))
	iss := &issuer{}
	issue := func(e *ledger.ScoreEntry) ([]byte, string, error) {
		e.PassportID = "p-" + e.AgentID + "-" + e.ComputedAt.Format("150405")
		return iss.issue(e)
	}
	if _, err := s.RefreshScore(ctx(t), "a", base, issue); err != nil {
		t.Fatal(err)
	}
	p, err := s.Passport(ctx(t), "p-a-143000")
	if err != nil {
		t.Fatal(err)
	}
	filed := base.Add(time.Hour)
	a, err := appeal.New(appeal.Filing{ID: "apl-1", PassportID: p.ID, Grounds: appeal.IncorrectStatus, Statement: "c1 was verified by the buyer",
		Events: []ledger.EventKey{{Type: ledger.ConduitSession, ID: "c1"}}, By: "op-a", At: filed}, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAppeal(ctx(t), a); err != nil {
		t.Fatal(err)
	}
	wantKind(t, s.CreateAppeal(ctx(t), a), errkind.Conflict)
	got, err := s.Appeal(ctx(t), "apl-1")
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("Appeal = %+v, %v\nwant %+v", got, err, a)
	}
	if _, err := s.Appeal(ctx(t), "nope"); errkind.Of(err) != errkind.NotFound {
		t.Errorf("unknown appeal: %v", err)
	}

	ack, _ := appeal.Apply(a, appeal.Ack, "op-a", filed.Add(time.Hour), "")
	if _, err := s.SaveAppeal(ctx(t), ack, appeal.Submitted, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveAppeal(ctx(t), ack, appeal.Submitted, nil, nil); errkind.Of(err) != errkind.Conflict {
		t.Errorf("saving from a stale state: %v", err)
	}
	decided := filed.Add(48 * time.Hour)
	up, _ := appeal.Apply(ack, appeal.Uphold, "op-a", decided, "the buyer's logs show it verified")
	fix := correction(ledger.ActionStatus, ledger.ConduitSession, "c1", decided)
	fix.Status, fix.AppealID = ledger.Verified, "apl-1"
	cs, err := s.SaveAppeal(ctx(t), up, appeal.Acknowledged, []ledger.CorrectionRequest{fix}, issue)
	if err != nil || len(cs) != 1 || cs[0].ToStatus != ledger.Verified || !cs[0].ReissuedAt.Equal(decided) {
		t.Fatalf("uphold: %+v %v", cs, err)
	}
	got, err = s.Appeal(ctx(t), "apl-1")
	if err != nil || got.State != appeal.Upheld || len(got.Corrections) != 1 || got.Corrections[0] != cs[0].ID || !got.ReissuedAt.Equal(decided) ||
		len(got.History) != 3 || got.History[2].Note != up.Decision || got.Overdue(decided.Add(30*24*time.Hour)) {
		t.Fatalf("after the uphold: %+v %v", got, err)
	}
	if c := counts(t, s, "a", decided); c != [4]int64{1, 1, 1, 1} {
		t.Errorf("counts after the upheld correction %v", c)
	}
	if e, ok := cached(t, s, "a", decided); !ok || e.Result.Counts.ConduitSuccess != 1 || len(e.Passport) == 0 {
		t.Errorf("re-issued entry %+v %v", e, ok)
	}
	if ps, _ := s.Passports(ctx(t), "a"); len(ps) != 2 {
		t.Errorf("passports after the re-issue: %d, want 2", len(ps))
	}
	// An uphold whose correction fails leaves the appeal as it was.
	bad := correction(ledger.ActionVoid, ledger.ConduitSession, "nope", decided)
	up2, _ := appeal.Apply(got, appeal.Escalate, "op-a", decided.Add(time.Hour), "the agent disagrees")
	if _, err := s.SaveAppeal(ctx(t), up2, appeal.Upheld, []ledger.CorrectionRequest{bad}, nil); errkind.Of(err) != errkind.NotFound {
		t.Errorf("a failing correction: %v", err)
	}
	if still, _ := s.Appeal(ctx(t), "apl-1"); still.State != appeal.Upheld || len(still.History) != 3 {
		t.Errorf("a failed save changed the appeal: %+v", still)
	}
	if _, err := s.SaveAppeal(ctx(t), up2, appeal.Upheld, nil, nil); err != nil {
		t.Fatal(err)
	}
	list, err := s.Appeals(ctx(t), appeal.Escalated)
	if err != nil || len(list) != 1 || list[0].ID != "apl-1" || len(list[0].Events) != 1 {
		t.Errorf("Appeals(escalated) = %+v, %v", list, err)
	}
	if list, _ := s.Appeals(ctx(t), appeal.Submitted); len(list) != 0 {
		t.Errorf("Appeals(submitted) = %+v", list)
	}
	if list, _ := s.Appeals(ctx(t), ""); len(list) != 1 {
		t.Errorf("Appeals() = %+v", list)
	}
	sums, err := s.AppealSummaries(ctx(t))
	if err != nil || len(sums) != 1 {
		t.Fatalf("AppealSummaries = %+v, %v", sums, err)
	}
	full := list[0]
	full.Events, full.History, full.Corrections = nil, nil, nil
	if got := sums[0]; !reflect.DeepEqual(got, full) {
		t.Errorf("AppealSummaries = %+v\nwant the appeal without details %+v", got, full)
	}
	mustVerify(t, s)
}
