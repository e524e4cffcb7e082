package ledger

import (
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// Corrections reach holds (issue 24, docs/ERRATA.md E65–E67). A correction
// of an ap2_transaction event that a hold reported (the same transaction
// id) changes the hold in the correction's transaction, as a step of the
// hold's chain naming the correction, so the hold never disagrees with the
// ledger silently. The store loads the hold with the correction's state,
// calls CorrectHold with the decided correction and writes what it returns
// beside the correction's records.

// CorrectedHold is what a correction's action and new status make of a hold
// in state from holding holdCents (E65): its state and money after.
//
//   - A status correction to SETTLED pays the hold to the provider
//     (settled, payout = the hold, no fee: a correction names none) unless
//     it is paid already (released or settled: unchanged).
//   - To REFUNDED or CANCELLED it returns the hold to the buyer: state
//     refunded or cancelled, refund = the hold, payout and fee 0. A hold
//     released before a chargeback is refunded whole, fee included (E55: a
//     refund keeps no fee).
//   - To DISPUTED it disputes a held hold (still open); a hold already
//     disputed or closed keeps its state and money: DISPUTED says the
//     buyer disputed, not where the money went.
//   - A void or a re-attribution changes neither (E66, E67): the step
//     records the correction, the money stays where it went.
func CorrectedHold(from HoldState, holdCents int64, action CorrectionAction, to Status) (state HoldState, payout, fee, refund int64, changed bool) {
	if action != ActionStatus {
		return from, 0, 0, 0, false
	}
	switch to {
	case Settled:
		if from == HoldReleased || from == HoldSettled {
			return from, 0, 0, 0, false
		}
		return HoldSettled, holdCents, 0, 0, true
	case Refunded:
		return HoldRefunded, 0, 0, holdCents, true
	case Cancelled:
		return HoldCancelled, 0, 0, holdCents, true
	case Disputed:
		if from == HoldHeld {
			return HoldDisputed, 0, 0, 0, true
		}
	}
	return from, 0, 0, 0, false
}

// correctionMoveAllowed reports whether a correction's step may move a hold
// from state from to state to (CorrectedHold's moves, or none).
func correctionMoveAllowed(from, to HoldState) bool {
	switch to {
	case from, HoldSettled, HoldRefunded, HoldCancelled:
		return true
	case HoldDisputed:
		return from == HoldHeld
	}
	return false
}

// CorrectHold returns the change correction c makes to hold cur, the hold
// of the ap2_transaction c corrects: a HoldCorrect step by the correction's
// author at its time, naming it, with the state and money CorrectedHold
// gives; the hold's reason becomes the correction's and its CorrectionID
// the correction's id. The change has no Event: the
// correction's own records are the ledger's. Errors: ErrInvalid when c is
// not a correction of cur's transaction.
func CorrectHold(cur *Hold, c *Correction) (HoldChange, error) {
	if c.EventType != AP2Transaction || c.EventID != cur.TransactionID {
		return HoldChange{}, fmt.Errorf("%w: correction %s of %s %s does not correct hold %s", errkind.ErrInvalid, c.ID, c.EventType, c.EventID, cur.TransactionID)
	}
	at := c.At.UTC().Truncate(time.Microsecond)
	h := *cur
	h.UpdatedAt, h.Reason, h.CorrectionID = at, c.Reason, c.ID
	if state, payout, fee, refund, changed := CorrectedHold(cur.State, cur.HoldCents, c.Action, c.ToStatus); changed {
		h.State, h.PayoutCents, h.FeeCents, h.RefundCents = state, payout, fee, refund
	}
	ch := HoldChange{Hold: h}
	ch.Step = h.step(HoldCorrect, c.By, at)
	ch.Step.Correction = c.ID
	ch.Step.Hash = Link(cur.Hash, HoldContent(&h, &ch.Step))
	ch.Hold.Seq, ch.Hold.Hash = ch.Step.Seq, ch.Step.Hash
	return ch, nil
}
