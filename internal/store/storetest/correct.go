package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

func correction(action ledger.CorrectionAction, typ ledger.Type, id string, at time.Time) ledger.CorrectionRequest {
	return ledger.CorrectionRequest{EventType: typ, EventID: id, Action: action, Reason: "confirmed data error", By: "op-a", At: at}
}

// issuer counts the passports a correction signs.
type issuer struct{ agents []string }

func (i *issuer) issue(e *ledger.ScoreEntry) ([]byte, string, error) {
	i.agents = append(i.agents, e.AgentID)
	return []byte(fmt.Sprintf(`{"agent":%q,"score":%d}`, e.AgentID, e.Result.Score)), fmt.Sprintf("sig-%s-%d", e.AgentID, e.Result.Score), nil
}

func correct(t *testing.T, s service.Backend, req ledger.CorrectionRequest, iss *issuer) (ledger.Correction, bool) {
	t.Helper()
	var issue ledger.IssueFunc
	if iss != nil {
		issue = iss.issue
	}
	c, created, err := s.Correct(ctx(t), req, issue)
	if err != nil {
		t.Fatalf("Correct(%+v): %v", req, err)
	}
	return c, created
}

// testCorrections: a chargeback, a re-attribution and a void change the
// counts at once, re-issue the affected agents' passports in the same
// transaction, leave the chains verifiable and are idempotent.
func testCorrections(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	wantOutcomes(t, ingest(t, s, "op-a",
		conduit("c1", "a", ledger.Verified, start, end),
		conduit("c2", "a", ledger.Verified, start, end),
		ap2("t1", "a", ledger.Held, start, time.Time{}),
		ap2("t1", "a", ledger.Settled, start, end),
		ap2("t2", "a", ledger.Held, start, time.Time{}),
		conduit("c3", "b", ledger.Failed, start, end),
	), ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted)
	before := refresh(t, s, "a", base)
	if got := counts(t, s, "a", base); got != [4]int64{2, 2, 1, 1} {
		t.Fatalf("counts before %v", got)
	}

	// A chargeback after settlement.
	at := base.Add(time.Minute)
	cb := correction(ledger.ActionStatus, ledger.AP2Transaction, "t1", at)
	cb.Status, cb.AppealID = ledger.Refunded, "ap-1"
	iss := &issuer{}
	c, created := correct(t, s, cb, iss)
	if !created || c.FromStatus != ledger.Settled || c.ToStatus != ledger.Refunded || c.FromAgent != "a" || !c.ReissuedAt.Equal(at) || c.AppealID != "ap-1" {
		t.Fatalf("chargeback %+v created %v", c, created)
	}
	if got := counts(t, s, "a", at); got != [4]int64{2, 2, 1, 0} {
		t.Errorf("counts after the chargeback %v", got)
	}
	e, ok := cached(t, s, "a", at)
	if !ok || e.Result.Counts.AP2Success != 0 || len(e.Passport) == 0 || len(iss.agents) != 1 || iss.agents[0] != "a" {
		t.Errorf("re-issued entry %+v (hit %v), issued for %v", e, ok, iss.agents)
	}
	if _, ok := cached(t, s, "a", before.ComputedAt); ok {
		t.Error("the entry computed before the correction is still served")
	}
	length := chainLength(t, s, "a")
	// The same correction again is a no-op that returns the first.
	again := cb
	again.At = at.Add(time.Hour)
	if c2, created := correct(t, s, again, iss); created || c2.ID != c.ID || !c2.At.Equal(at) || chainLength(t, s, "a") != length || len(iss.agents) != 1 {
		t.Errorf("repeat: %+v created %v", c2, created)
	}
	// A re-sent export of the original reports changes nothing.
	wantOutcomes(t, ingest(t, s, "op-a", ap2("t1", "a", ledger.Held, start, time.Time{}), ap2("t1", "a", ledger.Settled, start, end)),
		ledger.OutcomeSuperseded, ledger.OutcomeDuplicate)

	// A session filed under the wrong agent moves to a new one.
	mv := correction(ledger.ActionReattribute, ledger.ConduitSession, "c1", at.Add(time.Second))
	mv.AgentID = "z"
	iss = &issuer{}
	correct(t, s, mv, iss)
	if a, z := counts(t, s, "a", at.Add(time.Second)), counts(t, s, "z", at.Add(time.Second)); a != [4]int64{1, 1, 1, 0} || z != [4]int64{1, 1, 0, 0} {
		t.Errorf("after the re-attribution: a %v, z %v", a, z)
	}
	if len(iss.agents) != 2 {
		t.Errorf("passports re-issued for %v, want both agents", iss.agents)
	}
	// A void removes b's session from every count.
	correct(t, s, correction(ledger.ActionVoid, ledger.ConduitSession, "c3", at.Add(2*time.Second)), nil)
	if got := counts(t, s, "b", at.Add(2*time.Second)); got != [4]int64{} {
		t.Errorf("after the void: %v", got)
	}
	if _, err := s.RecomputeAll(ctx(t), at.Add(2*time.Second), false); err != nil {
		t.Fatal(err)
	}
	for agent, want := range map[string][4]int64{"a": {1, 1, 1, 0}, "b": {}, "z": {1, 1, 0, 0}} {
		e, ok := cached(t, s, agent, at.Add(2*time.Second))
		got := [4]int64{e.Result.Counts.ConduitTotal, e.Result.Counts.ConduitSuccess, e.Result.Counts.AP2Total, e.Result.Counts.AP2Success}
		if !ok || got != want {
			t.Errorf("RecomputeAll %s: %v (hit %v), want %v", agent, got, ok, want)
		}
	}
	if list, err := s.Corrections(ctx(t), ledger.AP2Transaction, "t1"); err != nil || len(list) != 1 || list[0].ID != c.ID || list[0].Reason != c.Reason {
		t.Errorf("Corrections = %+v, %v", list, err)
	}
	r := mustVerify(t, s)
	if r.Agents != 3 {
		t.Errorf("verify %+v", r)
	}

	// Refused, and nothing written.
	length = chainLength(t, s, "a")
	notFinal := correction(ledger.ActionVoid, ledger.AP2Transaction, "t2", at)
	for name, tc := range map[string]struct {
		req  ledger.CorrectionRequest
		kind errkind.Kind
	}{
		"unknown event": {correction(ledger.ActionVoid, ledger.ConduitSession, "nope", at), errkind.NotFound},
		"not final":     {notFinal, errkind.Conflict},
		"voided": {func() ledger.CorrectionRequest {
			r := correction(ledger.ActionStatus, ledger.ConduitSession, "c3", at)
			r.Status = ledger.Verified
			return r
		}(), errkind.Conflict},
		"no reason": {func() ledger.CorrectionRequest {
			r := correction(ledger.ActionVoid, ledger.ConduitSession, "c2", at)
			r.Reason = ""
			return r
		}(), errkind.Invalid},
	} {
		if _, _, err := s.Correct(ctx(t), tc.req, nil); errkind.Of(err) != tc.kind {
			t.Errorf("%s: %v, want %v", name, err, tc.kind)
		}
	}
	boom := errors.New("signer down")
	v := correction(ledger.ActionVoid, ledger.ConduitSession, "c2", at)
	if _, _, err := s.Correct(ctx(t), v, func(*ledger.ScoreEntry) ([]byte, string, error) { return nil, "", boom }); err != boom {
		t.Errorf("an issue error: %v, want it unchanged", err)
	}
	if chainLength(t, s, "a") != length || counts(t, s, "a", at.Add(3*time.Second)) != [4]int64{1, 1, 1, 0} {
		t.Error("a refused correction changed the ledger")
	}
	mustVerify(t, s)
}

// testVerifyCorrectionTampering: a correction altered or deleted behind the
// store's back, or an event row moved without one, breaks the chain.
func testVerifyCorrectionTampering(t *testing.T, h Harness) {
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	cases := []struct {
		name   string
		tamper string
		want   map[string]int64
	}{
		{"reason rewritten", "UPDATE corrections SET reason = 'nothing to see'", map[string]int64{"a": 3}},
		{"correction deleted", "DELETE FROM corrections", map[string]int64{"a": 3}},
		{"target changed", "UPDATE corrections SET to_status = 'DISPUTED'", map[string]int64{"a": 3}},
		{"row reverted", "UPDATE ap2_transactions SET status = 'SETTLED', reported_status = NULL WHERE id = 't1'", map[string]int64{"a": 3}},
		{"row moved without a correction", "UPDATE conduit_sessions SET agent_id = 'b', reported_agent_id = 'a' WHERE id = 'c1'", map[string]int64{"a": 1, "b": 1}},
		{"row voided without a correction", "UPDATE conduit_sessions SET voided_at = " + h.Tamper.Time(base) + " WHERE id = 'c1'", map[string]int64{"a": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := h.Open(t)
			wantOutcomes(t, ingest(t, s, "op-a", conduit("c1", "a", ledger.Verified, start, end), ap2("t1", "a", ledger.Settled, start, end),
				conduit("c2", "b", ledger.Verified, start, end)),
				ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted)
			cb := correction(ledger.ActionStatus, ledger.AP2Transaction, "t1", base)
			cb.Status = ledger.Refunded
			correct(t, s, cb, nil)
			mustVerify(t, s)
			h.Tamper.Exec(t, s, tc.tamper)
			r, err := s.VerifyLedger(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, b := range r.Broken {
				got[b.AgentID] = b.Seq
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("broken %+v, want first breaks %v", r.Broken, tc.want)
			}
		})
	}
}

// testEventsByKey reads events by key: as stored, with their corrected
// state, in the order asked, unknown keys and repeats left out.
func testEventsByKey(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	ingest(t, s, "op-a",
		conduit("c1", "a", ledger.Verified, start, end),
		ap2("t1", "a", ledger.Held, start, time.Time{}),
		ap2("t1", "a", ledger.Settled, start, end),
		conduit("c2", "b", ledger.Failed, start, end),
	)
	cb := correction(ledger.ActionStatus, ledger.AP2Transaction, "t1", base.Add(time.Minute))
	cb.Status = ledger.Refunded
	correct(t, s, cb, nil)
	keys := []ledger.EventKey{
		{Type: ledger.AP2Transaction, ID: "t1"}, {Type: ledger.ConduitSession, ID: "nope"}, {Type: ledger.ConduitSession, ID: "c2"},
		{Type: ledger.AP2Transaction, ID: "c1"}, {Type: ledger.ConduitSession, ID: "c1"}, {Type: ledger.AP2Transaction, ID: "t1"},
	}
	evs, err := s.Events(ctx(t), keys)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s/%s %s %s->%s %d %s", e.Event.Type, e.Event.ID, e.Event.AgentID, e.Event.Status, e.CurrentStatus(), e.Event.EscrowAmountCents, e.Operator))
	}
	want := []string{
		fmt.Sprintf("ap2_transaction/t1 a SETTLED->REFUNDED %d op-a", evs[0].Event.EscrowAmountCents),
		"conduit_session/c2 b FAILED->FAILED 0 op-a",
		"conduit_session/c1 a VERIFIED->VERIFIED 0 op-a",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Events: %v\nwant %v", got, want)
	}
	if !evs[0].Event.EndedAt.Equal(end) || !evs[0].Event.StartedAt.Equal(start) || evs[0].Event.EscrowAmountCents <= 0 {
		t.Errorf("t1 %+v", evs[0].Event)
	}
	if evs, err := s.Events(ctx(t), nil); err != nil || len(evs) != 0 {
		t.Errorf("no keys: %v %v", evs, err)
	}
}
