package ledger

import (
	"fmt"
	"strings"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// Status is the lifecycle state of an event, named as on the wire.
type Status string

// Conduit session statuses (§12.1), in lifecycle order.
const (
	Pending  Status = "PENDING"
	Running  Status = "RUNNING"
	Verified Status = "VERIFIED"
	Failed   Status = "FAILED"
	Error    Status = "ERROR"
	Timeout  Status = "TIMEOUT"
)

// AP2 transaction statuses (§12.1), in lifecycle order.
const (
	Negotiating Status = "NEGOTIATING"
	Held        Status = "HELD"
	Executing   Status = "EXECUTING"
	Delivered   Status = "DELIVERED"
	Settled     Status = "SETTLED"
	Disputed    Status = "DISPUTED"
	Refunded    Status = "REFUNDED"
	Cancelled   Status = "CANCELLED"
)

// Task offer statuses, in lifecycle order: an offer made to the agent, then
// accepted or declined.
const (
	Offered  Status = "OFFERED"
	Accepted Status = "ACCEPTED"
	Declined Status = "DECLINED"
)

// stage is a status's position in its lifecycle; every terminal status of a
// type shares the last stage. A move is forward when the stage increases.
var stage = map[Type]map[Status]int{
	ConduitSession: {Pending: 0, Running: 1, Verified: 2, Failed: 2, Error: 2, Timeout: 2},
	AP2Transaction: {Negotiating: 0, Held: 1, Executing: 2, Delivered: 3, Settled: 4, Disputed: 4, Refunded: 4, Cancelled: 4},
	TaskOffer:      {Offered: 0, Accepted: 1, Declined: 1},
}

var statusOrder = map[Type][]Status{
	ConduitSession: {Pending, Running, Verified, Failed, Error, Timeout},
	AP2Transaction: {Negotiating, Held, Executing, Delivered, Settled, Disputed, Refunded, Cancelled},
	TaskOffer:      {Offered, Accepted, Declined},
}

func statusList(t Type) string {
	var b strings.Builder
	for i, s := range statusOrder[t] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(s))
	}
	return b.String()
}

// ValidFor reports whether s is a status of events of type t.
func (s Status) ValidFor(t Type) bool {
	_, ok := stage[t][s]
	return ok
}

// Terminal reports whether s is final: VERIFIED, FAILED, ERROR, TIMEOUT,
// SETTLED, DISPUTED, REFUNDED, CANCELLED, ACCEPTED or DECLINED. A terminal
// event carries its completion time and never changes again.
func (s Status) Terminal() bool {
	switch s {
	case Verified, Failed, Error, Timeout, Settled, Disputed, Refunded, Cancelled, Accepted, Declined:
		return true
	}
	return false
}

// CountsTotal reports whether an event in status s counts towards its
// dimension's total: VERIFIED or FAILED sessions, SETTLED, DISPUTED or
// REFUNDED transactions (§12.2, Pitfall 4; ERROR, TIMEOUT and CANCELLED do
// not).
func (s Status) CountsTotal() bool {
	switch s {
	case Verified, Failed, Settled, Disputed, Refunded:
		return true
	}
	return false
}

// CountsSuccess reports whether s is a success: VERIFIED or SETTLED.
func (s Status) CountsSuccess() bool { return s == Verified || s == Settled }

// CheckTransition reports whether an event of type t that the ledger holds in
// status from may be reported again in status to. Equal statuses are not a
// transition (the caller decides between duplicate and conflict). It returns
// an error matching errkind.ErrConflict for a move out of a terminal status
// or a backward move, and errkind.ErrInvalid for an unknown status.
func CheckTransition(t Type, from, to Status) error {
	fs, ok1 := stage[t][from]
	ts, ok2 := stage[t][to]
	switch {
	case !ok1 || !ok2:
		return fmt.Errorf("%w: status: %s -> %s is not a %s lifecycle", errkind.ErrInvalid, from, to, t)
	case from.Terminal():
		return fmt.Errorf("%w: status: %s is final and cannot become %s", errkind.ErrConflict, from, to)
	case ts <= fs:
		return fmt.Errorf("%w: status: %s cannot move back to %s", errkind.ErrConflict, from, to)
	}
	return nil
}

// Decision is what a report of an already recorded event amounts to.
type Decision uint8

// The decisions Classify makes.
const (
	Duplicate  Decision = iota + 1 // the same content again: a no-op
	Transition                     // a later allowed status: record it
	// Superseded: a status earlier in the lifecycle than the recorded one,
	// agreeing with it on every other field (a re-sent export, or a final
	// status that arrived before its earlier ones): a no-op.
	Superseded
)

// Classify decides what report e by operator means for an event the ledger
// already holds as old, first reported by oldOperator. It returns
// Duplicate, Transition or Superseded, or an error matching
// errkind.ErrConflict that names the field: another operator's event, a
// changed immutable field, a different end time for the same status, or a
// final status changed to another final status. Decide uses it for every
// back end, so they agree on every message.
func Classify(old *Event, oldOperator string, e *Event, operator string) (Decision, error) {
	if oldOperator != operator {
		return 0, fmt.Errorf("%w: id: %s %q was reported by another operator", errkind.ErrConflict, e.Type, e.ID)
	}
	if !old.SameImmutable(e) {
		return 0, fmt.Errorf("%w: %s: %s %q is already recorded with a different value", errkind.ErrConflict, changedField(old, e), e.Type, e.ID)
	}
	if old.Status == e.Status {
		if old.EndedAt.Equal(e.EndedAt) {
			return Duplicate, nil
		}
		return 0, fmt.Errorf("%w: %s: %s %q is already %s at %s", errkind.ErrConflict, e.Type.endField(), e.Type, e.ID, old.Status, FormatTime(old.EndedAt))
	}
	// Every final status shares the last stage, so an earlier stage is
	// never final, and a final status is never superseded by another.
	fs, ok1 := stage[e.Type][old.Status]
	ts, ok2 := stage[e.Type][e.Status]
	if ok1 && ok2 && ts < fs {
		return Superseded, nil
	}
	if err := CheckTransition(e.Type, old.Status, e.Status); err != nil {
		return 0, fmt.Errorf("%s %q: %w", e.Type, e.ID, err)
	}
	return Transition, nil
}

// changedField names the first immutable field that differs.
func changedField(old, e *Event) string {
	switch {
	case old.Type != e.Type:
		return "type"
	case old.AgentID != e.AgentID:
		return e.Type.agentField()
	case old.BuyerID != e.BuyerID:
		return "buyer_id"
	case old.EscrowAmountCents != e.EscrowAmountCents:
		return "escrow_amount_cents"
	}
	return "started_at"
}
