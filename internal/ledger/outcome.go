package ledger

import "fmt"

// Outcome is what the ledger did with one reported event.
type Outcome struct {
	Status OutcomeStatus
	// Err says why the event was rejected (errkind.ErrConflict or
	// errkind.ErrInvalid, naming the field); nil otherwise.
	Err error
}

// OutcomeStatus classifies an Outcome.
type OutcomeStatus uint8

// The outcomes of a report.
const (
	// OutcomeAccepted: a first report or a transition, recorded with a
	// chain record.
	OutcomeAccepted OutcomeStatus = iota + 1
	// OutcomeDuplicate: the same content again; a no-op.
	OutcomeDuplicate
	// OutcomeRejected: an invalid report or one that contradicts the
	// ledger; nothing changed.
	OutcomeRejected
)

func (s OutcomeStatus) String() string {
	switch s {
	case OutcomeAccepted:
		return "accepted"
	case OutcomeDuplicate:
		return "duplicate"
	case OutcomeRejected:
		return "rejected"
	}
	return fmt.Sprintf("OutcomeStatus(%d)", uint8(s))
}
