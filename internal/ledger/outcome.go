package ledger

import (
	"fmt"
	"time"
)

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
	// OutcomeSuperseded: a report of a status earlier in the lifecycle than
	// the one recorded, agreeing with it on every other field (a re-sent
	// export, or a final status that arrived before its earlier ones); a
	// no-op.
	OutcomeSuperseded
)

func (s OutcomeStatus) String() string {
	switch s {
	case OutcomeAccepted:
		return "accepted"
	case OutcomeDuplicate:
		return "duplicate"
	case OutcomeRejected:
		return "rejected"
	case OutcomeSuperseded:
		return "superseded"
	}
	return fmt.Sprintf("OutcomeStatus(%d)", uint8(s))
}

// Batch is one all-or-nothing ingest: reports from one operator, decided in
// order.
type Batch struct {
	Operator string
	Events   []Event
	// ReceivedAt is when the batch reached the ledger (the server's clock).
	// It is recorded in each accepted report's chain record. A report
	// dated after ReceivedAt + MaxSkew is rejected; a zero ReceivedAt turns
	// that check off and records no time.
	ReceivedAt time.Time
	MaxSkew    time.Duration
}
