package ledger

import (
	"slices"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/score"
)

// The ledger as it stood at an instant, for telling a passport that was
// true when issued from one that was not: every report keeps the time the
// ledger received it (its record's received_at), so the state of an event
// at t is what its reports received by t said. Records written before
// received times were kept have none and count as received before any t.
// Corrections are not dated that way: a correction (a chargeback, an
// upheld appeal) says the event was never what the ledger held, so it
// applies to the ledger at every instant, and a passport it contradicts
// was wrong when issued (issue 14), where a late report only makes a true
// passport out of date (issue 12).

// Receipt is one report's chain record: the status it reported and when the
// ledger received it (zero when unknown).
type Receipt struct {
	Status     Status
	ReceivedAt time.Time
}

// History is an event as corrected now, with every report the ledger
// holds of it: the material to tell what the ledger said of it at any
// instant.
type History struct {
	Event StoredEvent
	// Reports are its report records in chain order.
	Reports []Receipt
}

// received reports whether the ledger had received a record by t.
func received(at, t time.Time) bool { return at.IsZero() || !at.After(t) }

// At returns the event as the ledger held it at t, corrected: the agent
// it counted for, its status and whether it was voided; ok is false when no
// report of it had been received.
//
// A correction needs a final status, and a final status is never reported
// over, so while a report is still to come after t no correction applies;
// once every report was in by t, the event is as corrected now.
func (h *History) At(t time.Time) (cur Current, ok bool) {
	n := 0
	for _, r := range h.Reports {
		if !received(r.ReceivedAt, t) {
			break
		}
		n++
	}
	switch {
	case n == 0:
		return Current{}, false
	case n < len(h.Reports):
		return Current{AgentID: h.Event.Event.AgentID, Status: h.Reports[n-1].Status}, true
	}
	return Current{AgentID: h.Event.CurrentAgent(), Status: h.Event.CurrentStatus(), Voided: h.Event.IsVoided()}, true
}

// reportedAfter reports whether a report of the event was received after
// t.
func (h *History) reportedAfter(t time.Time) bool {
	for _, r := range h.Reports {
		if !received(r.ReceivedAt, t) {
			return true
		}
	}
	return false
}

// countIn adds the event, in state cur, to the agent's counts of the
// window ending asOf, and reports whether it counted.
func countIn(c *score.Counts, h *History, cur Current, agent string, asOf time.Time) bool {
	end := h.Event.Event.EndedAt
	if cur.Voided || cur.AgentID != agent || !cur.Status.CountsTotal() || end.IsZero() {
		return false
	}
	if lo, hi := Bounds(asOf); end.Before(lo) || end.After(hi) {
		return false
	}
	switch h.Event.Event.Type {
	case ConduitSession:
		c.ConduitTotal++
		if cur.Status.CountsSuccess() {
			c.ConduitSuccess++
		}
	case AP2Transaction:
		c.AP2Total++
		if cur.Status.CountsSuccess() {
			c.AP2Success++
		}
	default:
		return false
	}
	return true
}

// ChangedSince tells how agent's window ending asOf has changed since
// issuedAt, from the histories of every event that is or was the agent's:
// the events counted in it now, or counted in it as the ledger stood at
// issuedAt (At), of which a report was received after issuedAt (by type,
// then id); and the window's counts as the ledger stood at issuedAt,
// corrections applied.
func ChangedSince(agent string, hs []History, asOf, issuedAt time.Time) (changed []EventKey, atIssue score.Counts) {
	var now score.Counts
	for i := range hs {
		h := &hs[i]
		countedNow := countIn(&now, h, Current{AgentID: h.Event.CurrentAgent(), Status: h.Event.CurrentStatus(), Voided: h.Event.IsVoided()}, agent, asOf)
		countedThen := false
		if cur, ok := h.At(issuedAt); ok {
			countedThen = countIn(&atIssue, h, cur, agent, asOf)
		}
		if (countedNow || countedThen) && h.reportedAfter(issuedAt) {
			changed = append(changed, EventKey{h.Event.Event.Type, h.Event.Event.ID})
		}
	}
	slices.SortFunc(changed, func(a, b EventKey) int {
		if c := strings.Compare(string(a.Type), string(b.Type)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return changed, atIssue
}
