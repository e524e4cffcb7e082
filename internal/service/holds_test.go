package service

import (
	"context"
	"testing"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// TestHoldsReconcileAndErasure: reconcile balances the holds; after the
// provider is erased, its hold no longer hashes (the erasure renamed the
// party) and is counted as sealed, its money still checked, while an
// edited hold of another provider is named as broken.
func TestHoldsReconcileAndErasure(t *testing.T) {
	a, _ := newUseCases(t)
	ctx := context.Background()
	op := OperatorCaller("op-1")
	ingest(t, a, conduit("gone", "g", 10, 9, t0))
	for _, in := range []HoldInput{
		{TransactionID: "h-1", ProviderID: "gone", BuyerID: "b-1", AmountCents: 10000, Currency: "USD"},
		{TransactionID: "h-2", ProviderID: "stays", BuyerID: "b-1", AmountCents: 333, Currency: "USD"},
	} {
		if _, created, err := a.Holds.CreateHold(ctx, op, in); err != nil || !created {
			t.Fatalf("%s: %v", in.TransactionID, err)
		}
	}
	if _, err := a.Holds.ChangeHold(ctx, op, "h-2", HoldAction{Action: ledger.HoldRelease, HasFee: true, FeeCents: 33}); err != nil {
		t.Fatal(err)
	}
	r, err := a.Holds.Reconcile(ctx)
	if err != nil || r.Broken != "" || r.Totals.Holds != 2 || r.Totals.Payouts != 300 || r.Totals.Fees != 33 || !r.Totals.Balanced() {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
	if _, err := a.Holds.ChangeHold(ctx, op, "h-2", HoldAction{Action: ledger.HoldCancel}); errkind.Code(err) != ledger.InvalidTransitionCode {
		t.Fatalf("cancel after release: %v", err)
	}
	if _, err := a.Rights.EraseAgent(ctx, op, "gone", ""); err != nil {
		t.Fatal(err)
	}
	r, err = a.Holds.Reconcile(ctx)
	if err != nil || r.Broken != "" || r.Sealed != 1 {
		t.Fatalf("reconcile after the erasure: %+v %v", r, err)
	}
	list, err := a.Holds.Holds(ctx, HoldQuery{State: ledger.HoldHeld})
	if err != nil || len(list) != 1 || list[0].ProviderID == "gone" {
		t.Fatalf("the erased provider's hold: %+v %v", list, err)
	}
}
