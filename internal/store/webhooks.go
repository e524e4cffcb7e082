package store

import (
	"github.com/swarmscore/swarmscore/internal/appeal"
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

// MaxDeliveriesPage bounds one read of an endpoint's deliveries.
const MaxDeliveriesPage = 200
