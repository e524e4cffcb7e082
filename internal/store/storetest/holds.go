package storetest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/webhook"
	"github.com/swarmscore/swarmscore/score"
)

// applyHold runs one hold request through the store as the service does.
func applyHold(s service.Backend, req ledger.HoldRequest) (ledger.HoldChange, error) {
	b := ledger.Batch{Operator: req.Operator, ReceivedAt: req.At, MaxSkew: time.Minute}
	return s.ApplyHold(context.Background(), req.TransactionID, b, func(cur *ledger.Hold) (ledger.HoldChange, error) {
		return ledger.DecideHold(cur, &req)
	})
}

func newHold(id, provider string, amount int64, sc int, at time.Time) ledger.HoldRequest {
	return ledger.HoldRequest{Action: ledger.HoldCreate, TransactionID: id, Operator: "op-a", At: at, ProviderID: provider, BuyerID: "buyer-1",
		AmountCents: amount, Currency: "USD", Price: ledger.HoldPrice{Score: sc, Tier: score.TierNone, PassportID: "p-1", KID: "k1"}}
}

func verifyHold(t *testing.T, s service.Backend, id string) error {
	t.Helper()
	h, err := s.Hold(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := s.HoldSteps(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return ledger.VerifyHold(&h, steps)
}

// testHolds: a hold is stored as decided, a repeat returns it, a change
// moves it and records its ap2_transaction event in the provider's chain
// (a marketplace's own report of it is then a no-op), a refused change
// writes nothing, and an edit of a stored hold breaks its chain.
func testHolds(t *testing.T, h Harness) {
	s := h.Open(t)
	at := base.Add(-time.Hour)
	ch, err := applyHold(s, newHold("tx-1", "prov", 100000, 760, at))
	if err != nil || !ch.Created || ch.Hold.HoldCents != 39200 || ch.Hold.ReleasedCents != 60800 {
		t.Fatalf("create: %+v, %v", ch.Hold, err)
	}
	got, err := s.Hold(ctx(t), "tx-1")
	if err != nil || !reflect.DeepEqual(got, ch.Hold) {
		t.Fatalf("Hold = %+v, %v\nwant %+v", got, err, ch.Hold)
	}
	again, err := applyHold(s, newHold("tx-1", "prov", 100000, 900, at.Add(time.Minute)))
	if err != nil || !again.Unchanged || !reflect.DeepEqual(again.Hold, got) {
		t.Fatalf("repeat: %+v, %v", again, err)
	}
	_, err = applyHold(s, newHold("tx-1", "prov", 100001, 760, at))
	if wantKind(t, err, errkind.Conflict); errkind.Code(err) != ledger.HoldConflictCode {
		t.Errorf("other amount: %v", err)
	}
	// The ledger has the transaction as HELD: a marketplace's HELD
	// report of it is a duplicate.
	held := ledger.Event{Type: ledger.AP2Transaction, ID: "tx-1", AgentID: "prov", BuyerID: "buyer-1", Status: ledger.Held, EscrowAmountCents: 100000, StartedAt: ch.Hold.CreatedAt}
	wantOutcomes(t, ingest(t, s, "op-a", held), ledger.OutcomeDuplicate)

	// A dispute reports nothing; a refunded resolution reports REFUNDED.
	if _, err := applyHold(s, ledger.HoldRequest{Action: ledger.HoldDispute, TransactionID: "tx-1", Operator: "op-a", At: at.Add(time.Minute), Reason: "not delivered"}); err != nil {
		t.Fatal(err)
	}
	_, err = applyHold(s, ledger.HoldRequest{Action: ledger.HoldRelease, TransactionID: "tx-1", Operator: "op-a", At: at.Add(2 * time.Minute)})
	if wantKind(t, err, errkind.Conflict); errkind.Code(err) != ledger.InvalidTransitionCode {
		t.Errorf("release of a disputed hold: %v", err)
	}
	res, err := applyHold(s, ledger.HoldRequest{Action: ledger.HoldResolve, TransactionID: "tx-1", Operator: "op-a", At: at.Add(3 * time.Minute), Outcome: ledger.HoldRefunded, Reason: "buyer wins"})
	if err != nil || res.Hold.State != ledger.HoldRefunded || res.Hold.RefundCents != 39200 {
		t.Fatalf("resolve: %+v, %v", res.Hold, err)
	}
	refunded := held
	refunded.Status, refunded.EndedAt = ledger.Refunded, res.Hold.UpdatedAt
	wantOutcomes(t, ingest(t, s, "op-a", refunded, held), ledger.OutcomeDuplicate, ledger.OutcomeSuperseded)
	if c := counts(t, s, "prov", base); c != [4]int64{0, 0, 1, 0} {
		t.Errorf("counts after a refund: %v", c)
	}
	if err := verifyHold(t, s, "tx-1"); err != nil {
		t.Errorf("tx-1: %v", err)
	}

	// A release pays the hold less the platform's fee and reports SETTLED.
	if _, err := applyHold(s, newHold("tx-2", "prov", 12345, 0, at)); err != nil {
		t.Fatal(err)
	}
	rel, err := applyHold(s, ledger.HoldRequest{Action: ledger.HoldRelease, TransactionID: "tx-2", Operator: "op-a", At: at.Add(time.Minute), FeeBPS: 250})
	if err != nil || rel.Hold.FeeCents != 308 || rel.Hold.PayoutCents != 12345-308 || rel.Hold.State != ledger.HoldReleased {
		t.Fatalf("release: %+v, %v", rel.Hold, err)
	}
	if c := counts(t, s, "prov", base); c != [4]int64{0, 0, 2, 1} {
		t.Errorf("counts after a release: %v", c)
	}
	// A hold whose transaction the ledger holds with other terms is
	// refused whole.
	ingest(t, s, "op-a", ap2("tx-3", "prov", ledger.Held, at, time.Time{}))
	_, err = applyHold(s, newHold("tx-3", "prov", 5, 0, at))
	wantKind(t, err, errkind.Conflict)
	if _, err := s.Hold(ctx(t), "tx-3"); errkind.Of(err) != errkind.NotFound {
		t.Errorf("a refused hold was stored: %v", err)
	}

	list, err := s.Holds(ctx(t), service.HoldQuery{State: ledger.HoldReleased})
	if err != nil || len(list) != 1 || list[0].TransactionID != "tx-2" {
		t.Errorf("Holds(released) = %+v, %v", list, err)
	}
	if list, _ := s.Holds(ctx(t), service.HoldQuery{ProviderID: "prov"}); len(list) != 2 {
		t.Errorf("Holds(prov) = %d holds", len(list))
	}
	if _, err := applyHold(s, newHold("tx-4", "other", 1000, 0, at)); err != nil {
		t.Fatal(err)
	}
	st, err := s.HoldStats(ctx(t))
	if err != nil || st.HeldCents != 1000 || st.ByState[ledger.HoldHeld] != 1 || st.ByState[ledger.HoldRefunded] != 1 || st.ByState[ledger.HoldReleased] != 1 || st.ByState[ledger.HoldSettled] != 0 {
		t.Errorf("HoldStats = %+v, %v", st, err)
	}
	if r, err := s.VerifyLedger(ctx(t)); err != nil || len(r.Broken) != 0 {
		t.Errorf("VerifyLedger after holds: %+v, %v", r, err)
	}

	// An edit behind the store's back breaks the hold's chain.
	h.Tamper.Exec(t, s, `UPDATE escrow_holds SET score = 999 WHERE transaction_id = 'tx-2'`)
	if err := verifyHold(t, s, "tx-2"); err == nil {
		t.Error("a re-priced hold verifies")
	}
	h.Tamper.Exec(t, s, `UPDATE escrow_hold_steps SET fee_cents = 0, payout_cents = 12345 WHERE transaction_id = 'tx-4'`)
	if err := verifyHold(t, s, "tx-4"); err == nil {
		t.Error("a hold with an edited step verifies")
	}
}

// testHoldsConcurrent: of concurrent changes of one hold, exactly one
// wins and the others are refused as invalid transitions; of concurrent
// creations, one creates and the others return it.
func testHoldsConcurrent(t *testing.T, h Harness) {
	s := h.Open(t)
	at := base.Add(-time.Hour)
	const n = 6
	for round := range 3 {
		id := fmt.Sprintf("tx-%d", round)
		var wg sync.WaitGroup
		created := make(chan bool, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ch, err := applyHold(s, newHold(id, "prov", 10000, 500, at))
				if err != nil {
					t.Errorf("create: %v", err)
				}
				created <- ch.Created
			}()
		}
		wg.Wait()
		close(created)
		wins := 0
		for c := range created {
			if c {
				wins++
			}
		}
		if wins != 1 {
			t.Errorf("%s: %d creations won, want 1", id, wins)
		}
		actions := []ledger.HoldRequest{
			{Action: ledger.HoldRelease, FeeBPS: 100},
			{Action: ledger.HoldCancel},
			{Action: ledger.HoldDispute, Reason: "late"},
			{Action: ledger.HoldRelease, HasFee: true, FeeCents: 1},
			{Action: ledger.HoldCancel},
			{Action: ledger.HoldDispute},
		}
		errs := make(chan error, len(actions))
		for i, a := range actions {
			a.TransactionID, a.Operator, a.At = id, "op-a", at.Add(time.Duration(i+1)*time.Second)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := applyHold(s, a)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		ok := 0
		for err := range errs {
			switch {
			case err == nil:
				ok++
			case errkind.Code(err) != ledger.InvalidTransitionCode:
				t.Errorf("%s: a losing change failed with %v", id, err)
			}
		}
		if ok != 1 {
			t.Errorf("%s: %d concurrent changes won, want exactly 1", id, ok)
		}
		if err := verifyHold(t, s, id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
		if steps, _ := s.HoldSteps(ctx(t), id); len(steps) != 2 {
			t.Errorf("%s: %d steps, want 2", id, len(steps))
		}
	}
	if r, err := s.VerifyLedger(ctx(t)); err != nil || len(r.Broken) != 0 {
		t.Errorf("VerifyLedger: %+v, %v", r, err)
	}
}

// testHoldCorrections: a correction of a transaction a hold reported
// changes the hold in the correction's transaction, as a step naming it
// (ERRATA E65–E67): a chargeback of a released hold refunds it whole, a
// void and a re-attribution mark it, the hold's chain still verifies and
// the totals still balance; each change writes hold.updated; a
// correction of a transaction without a hold, or of a session, touches no
// hold.
func testHoldCorrections(t *testing.T, h Harness) {
	s := h.Open(t)
	if err := s.CreateWebhook(ctx(t), endpoint("ep_hold", webhook.HoldUpdated)); err != nil {
		t.Fatal(err)
	}
	at := base.Add(-time.Hour)
	for _, id := range []string{"tx-c1", "tx-c2", "tx-c3"} {
		if _, err := applyHold(s, newHold(id, "prov", 100000, 760, at)); err != nil {
			t.Fatal(err)
		}
		if _, err := applyHold(s, ledger.HoldRequest{Action: ledger.HoldRelease, TransactionID: id, Operator: "op-a", At: at.Add(time.Minute), HasFee: true, FeeCents: 2500}); err != nil {
			t.Fatal(err)
		}
	}
	ingest(t, s, "op-a", ap2("tx-plain", "prov", ledger.Settled, at, at.Add(time.Minute)))
	before := len(messages(t, s, "ep_hold"))

	cb := correction(ledger.ActionStatus, ledger.AP2Transaction, "tx-c1", at.Add(2*time.Minute))
	cb.Status, cb.Reason = ledger.Refunded, "chargeback"
	c1, _ := correct(t, s, cb, nil)
	void, _ := correct(t, s, correction(ledger.ActionVoid, ledger.AP2Transaction, "tx-c2", at.Add(3*time.Minute)), nil)
	move := correction(ledger.ActionReattribute, ledger.AP2Transaction, "tx-c3", at.Add(4*time.Minute))
	move.AgentID = "prov-2"
	moved, _ := correct(t, s, move, nil)
	plain := correction(ledger.ActionStatus, ledger.AP2Transaction, "tx-plain", at.Add(5*time.Minute))
	plain.Status = ledger.Refunded
	correct(t, s, plain, nil)

	for _, tc := range []struct {
		id                  string
		cor                 ledger.Correction
		state               ledger.HoldState
		payout, fee, refund int64
	}{
		{"tx-c1", c1, ledger.HoldRefunded, 0, 0, 39200},
		{"tx-c2", void, ledger.HoldReleased, 39200 - 2500, 2500, 0},
		{"tx-c3", moved, ledger.HoldReleased, 39200 - 2500, 2500, 0},
	} {
		got, err := s.Hold(ctx(t), tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != tc.state || got.PayoutCents != tc.payout || got.FeeCents != tc.fee || got.RefundCents != tc.refund || got.Seq != 3 ||
			got.ProviderID != "prov" || !got.UpdatedAt.Equal(tc.cor.At) || got.CorrectionID != tc.cor.ID {
			t.Errorf("%s after %s: %+v", tc.id, tc.cor.Action, got)
		}
		steps, err := s.HoldSteps(ctx(t), tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if last := steps[len(steps)-1]; last.Action != ledger.HoldCorrect || last.Correction != tc.cor.ID || last.Actor != "op-a" {
			t.Errorf("%s: last step %+v", tc.id, last)
		}
		if err := ledger.VerifyHold(&got, steps); err != nil {
			t.Errorf("%s: %v", tc.id, err)
		}
	}
	var tot ledger.HoldTotals
	all, err := s.Holds(ctx(t), service.HoldQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range all {
		tot.Add(&all[i])
	}
	if !tot.Balanced() || tot.Refunds != 39200 || tot.Payouts != 2*(39200-2500) {
		t.Errorf("totals %+v", tot)
	}
	ms := messages(t, s, "ep_hold")
	if len(ms) != before+3 {
		t.Fatalf("%d hold.updated messages after the corrections, want 3", len(ms)-before)
	}
	if p := string(ms[before].Payload); !strings.Contains(p, `"transaction_id":"tx-c1"`) || !strings.Contains(p, `"state":"refunded"`) ||
		!strings.Contains(p, `"previous_state":"released"`) || !strings.Contains(p, `"correction_id":"`+c1.ID+`"`) || !ms[before].CreatedAt.Equal(c1.At) {
		t.Errorf("chargeback message %s at %s", p, ms[before].CreatedAt)
	}
	// The same correction again is a no-op: no step, no message.
	if _, created := correct(t, s, cb, nil); created {
		t.Error("a repeated correction was stored again")
	}
	if steps, _ := s.HoldSteps(ctx(t), "tx-c1"); len(steps) != 3 || len(messages(t, s, "ep_hold")) != before+3 {
		t.Errorf("a repeated correction reached the hold: %d steps", len(steps))
	}
}
