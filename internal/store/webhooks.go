package store

import (
	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/webhook"
)

// AppealEvent is the appeal.updated event of a stored appeal a, which was
// in state from before ("" when just filed), as of its latest action (its
// filing when it has none): both back ends emit it in the transaction
// that stores a.
func AppealEvent(a appeal.Appeal, from appeal.State) webhook.Event {
	at := a.FiledAt
	for _, h := range a.History {
		if h.At.After(at) {
			at = h.At
		}
	}
	return webhook.AppealEvent(webhook.AppealData{AppealID: a.ID, AgentID: a.AgentID, PassportID: a.PassportID,
		State: string(a.State), PreviousState: string(from)}, at.UTC())
}

// HoldEvent is the hold.updated event of a hold change ch, whose hold was
// prev before (nil when ch creates it), as of the change: both back ends
// emit it in the transaction that stores the change.
func HoldEvent(prev *ledger.Hold, ch ledger.HoldChange) webhook.Event {
	h := &ch.Hold
	d := webhook.HoldData{TransactionID: h.TransactionID, ProviderID: h.ProviderID, BuyerID: h.BuyerID,
		State: string(h.State), AmountCents: h.AmountCents, Currency: h.Currency, HoldCents: h.HoldCents,
		ReleasedCents: h.ReleasedCents, Score: h.Score, Tier: h.Tier.String(), EscrowModifier: h.Modifier.String(),
		CorrectionID: ch.Step.Correction}
	if prev != nil {
		d.PreviousState = string(prev.State)
	}
	return webhook.HoldEvent(d, ch.Step.At.UTC())
}

// MaxDeliveriesPage bounds one read of an endpoint's deliveries.
const MaxDeliveriesPage = 200
