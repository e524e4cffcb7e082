package ledger

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

// holdIn returns a hold of 100,000 cents at score 760 (39,200 held) in
// state s, with its steps.
func holdIn(t *testing.T, s HoldState) (Hold, []HoldStep) {
	t.Helper()
	req := createReq(100000, 760)
	ch, err := DecideHold(nil, &req)
	if err != nil {
		t.Fatal(err)
	}
	path := map[HoldState][]HoldRequest{
		HoldReleased:  {{Action: HoldRelease, HasFee: true, FeeCents: 2500}},
		HoldDisputed:  {{Action: HoldDispute}},
		HoldSettled:   {{Action: HoldDispute}, {Action: HoldResolve, Outcome: HoldSettled, HasFee: true, FeeCents: 100}},
		HoldRefunded:  {{Action: HoldDispute}, {Action: HoldResolve, Outcome: HoldRefunded}},
		HoldCancelled: {{Action: HoldCancel}},
	}[s]
	h, steps := ch.Hold, []HoldStep{ch.Step}
	for _, r := range path {
		r.TransactionID, r.Operator, r.At = "tx", "op", holdAt.Add(time.Hour)
		c, err := DecideHold(&h, &r)
		if err != nil {
			t.Fatal(err)
		}
		h, steps = c.Hold, append(steps, c.Step)
	}
	return h, steps
}

func correctionOf(action CorrectionAction, to Status) Correction {
	c := Correction{CorrectionRequest: CorrectionRequest{EventType: AP2Transaction, EventID: "tx", Action: action, Reason: "chargeback",
		By: "op-2", At: holdAt.Add(2 * time.Hour)}, FromAgent: "prov", ToAgent: "prov", ToStatus: to}
	if action == ActionReattribute {
		c.ToAgent, c.AgentID = "other", "other"
	}
	c.ID = c.CorrectionRequest.ID()
	return c
}

// TestCorrectHold: every correction of every hold state gives the state
// and money of the rule (ERRATA E65–E67), a step naming it that extends
// the hold's chain, and money that adds up.
func TestCorrectHold(t *testing.T) {
	type money struct {
		state               HoldState
		payout, fee, refund int64
	}
	const held = 39200
	for _, tc := range []struct {
		from   HoldState
		action CorrectionAction
		to     Status
		want   money
	}{
		{HoldReleased, ActionStatus, Refunded, money{HoldRefunded, 0, 0, held}},
		{HoldReleased, ActionStatus, Cancelled, money{HoldCancelled, 0, 0, held}},
		{HoldReleased, ActionStatus, Disputed, money{HoldReleased, held - 2500, 2500, 0}},
		{HoldSettled, ActionStatus, Refunded, money{HoldRefunded, 0, 0, held}},
		{HoldRefunded, ActionStatus, Settled, money{HoldSettled, held, 0, 0}},
		{HoldRefunded, ActionStatus, Cancelled, money{HoldCancelled, 0, 0, held}},
		{HoldCancelled, ActionStatus, Settled, money{HoldSettled, held, 0, 0}},
		{HoldCancelled, ActionStatus, Refunded, money{HoldRefunded, 0, 0, held}},
		{HoldHeld, ActionStatus, Disputed, money{HoldDisputed, 0, 0, 0}},
		{HoldHeld, ActionStatus, Settled, money{HoldSettled, held, 0, 0}},
		{HoldDisputed, ActionStatus, Refunded, money{HoldRefunded, 0, 0, held}},
		{HoldDisputed, ActionStatus, Disputed, money{HoldDisputed, 0, 0, 0}},
		{HoldReleased, ActionVoid, "", money{HoldReleased, held - 2500, 2500, 0}},
		{HoldHeld, ActionVoid, "", money{HoldHeld, 0, 0, 0}},
		{HoldRefunded, ActionReattribute, "", money{HoldRefunded, 0, 0, held}},
	} {
		h, steps := holdIn(t, tc.from)
		c := correctionOf(tc.action, tc.to)
		ch, err := CorrectHold(&h, &c)
		if err != nil {
			t.Fatalf("%s %s %s: %v", tc.from, tc.action, tc.to, err)
		}
		n := ch.Hold
		if got := (money{n.State, n.PayoutCents, n.FeeCents, n.RefundCents}); got != tc.want {
			t.Errorf("%s %s %s: %+v, want %+v", tc.from, tc.action, tc.to, got, tc.want)
		}
		if ch.Event != nil || ch.Step.Action != HoldCorrect || ch.Step.Correction != c.ID || ch.Step.Actor != "op-2" || n.ProviderID != "prov" || n.Reason != "chargeback" ||
			n.CorrectionID != c.ID {
			t.Errorf("%s %s %s: step %+v", tc.from, tc.action, tc.to, ch.Step)
		}
		all := append(steps, ch.Step)
		if err := VerifyHold(&n, all); err != nil {
			t.Errorf("%s %s %s: %v", tc.from, tc.action, tc.to, err)
		}
		// The hold's mark is its last correction's.
		unmarked := n
		unmarked.CorrectionID = ""
		if VerifyHold(&unmarked, all) == nil {
			t.Errorf("%s %s %s: a hold without its correction's mark verifies", tc.from, tc.action, tc.to)
		}
		// The step names its correction: another id breaks the link, and
		// an ordinary step may name none.
		forged := append([]HoldStep(nil), all...)
		forged[len(forged)-1].Correction = "cor-other"
		if VerifyHold(&n, forged) == nil {
			t.Errorf("%s %s %s: a step naming another correction verifies", tc.from, tc.action, tc.to)
		}
		forged[len(forged)-1].Correction, forged[0].Correction = c.ID, c.ID
		if err := VerifyHold(&n, forged); err == nil || !strings.Contains(err.Error(), "names correction") {
			t.Errorf("%s: the creation step names a correction: %v", tc.from, err)
		}
	}
	// A correction of another transaction is refused.
	h, _ := holdIn(t, HoldReleased)
	c := correctionOf(ActionStatus, Refunded)
	c.EventID = "tx-2"
	if _, err := CorrectHold(&h, &c); err == nil {
		t.Error("a correction of another transaction reaches the hold")
	}
	// No correction moves a closed hold back to open.
	if correctionMoveAllowed(HoldReleased, HoldDisputed) || correctionMoveAllowed(HoldRefunded, HoldHeld) || correctionMoveAllowed(HoldSettled, HoldReleased) {
		t.Error("a correction may reopen a hold")
	}
}

// TestCorrectionStepContent: a correction's step content is canonical JSON
// with the "correction" member; a step without one has no such member, so
// steps stored before corrections reached holds hash as they did.
func TestCorrectionStepContent(t *testing.T) {
	h, _ := holdIn(t, HoldReleased)
	c := correctionOf(ActionStatus, Refunded)
	ch, err := CorrectHold(&h, &c)
	if err != nil {
		t.Fatal(err)
	}
	got := HoldContent(&ch.Hold, &ch.Step)
	if want, err := jcs.Transform(got); err != nil || !bytes.Equal(got, want) || !bytes.Contains(got, []byte(`"correction":"`+c.ID+`"`)) {
		t.Errorf("%s (%v)", got, err)
	}
	req := createReq(100000, 760)
	cr, _ := DecideHold(nil, &req)
	if bytes.Contains(HoldContent(&cr.Hold, &cr.Step), []byte("correction")) {
		t.Error("a creation step has a correction member")
	}
}
