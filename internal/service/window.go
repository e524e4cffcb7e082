package service

import (
	"context"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Window is what an agent's public page says about the events behind a
// score: the counted events by status, when the oldest of them ended,
// what corrections changed in them, and the appeals of the agent's
// passports still open. It is read from the ledger as of one instant, so
// that its totals are the counts of a score computed as of the same
// instant.
type Window struct {
	AsOf time.Time
	// Counted events by their status after corrections.
	Verified, Failed            int64
	Settled, Disputed, Refunded int64
	// Oldest is when the oldest counted event ended (zero when none is).
	Oldest time.Time
	// Corrected counts the counted events a correction changed (their
	// status or their agent); Chargebacks those of them reported SETTLED
	// and corrected to DISPUTED or REFUNDED.
	Corrected, Chargebacks int64
	// OpenAppeals are the agent's appeals not decided, or escalated to the
	// Advisory Board, oldest first.
	OpenAppeals []OpenAppeal
}

// Events is the number of events the window counts.
func (w Window) Events() int64 {
	return w.Verified + w.Failed + w.Settled + w.Disputed + w.Refunded
}

// OpenAppeal is what the public may read of an open appeal: that it
// exists, where it is and since when; not its statement.
type OpenAppeal struct {
	ID      string
	State   appeal.State
	FiledAt time.Time
}

// Window returns the agent's window ending at asOf (see Window), for
// public display: an agent the public may not see is ErrNotFound, as on
// PublicProfile. Errors: ErrInvalid for a malformed id, ErrNotFound,
// ErrUnavailable.
func (u *Certificates) Window(ctx context.Context, agentID string, asOf time.Time) (Window, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return Window{}, err
	}
	if err := u.pubs.public(ctx, Caller{}, agentID); err != nil {
		return Window{}, err
	}
	recs, err := u.store.Records(ctx, agentID, asOf)
	if err != nil {
		return Window{}, fmt.Errorf("agent %q's window: %w", agentID, err)
	}
	w := Window{AsOf: asOf}
	for i := range recs {
		e := &recs[i]
		switch e.CurrentStatus() {
		case ledger.Verified:
			w.Verified++
		case ledger.Failed:
			w.Failed++
		case ledger.Settled:
			w.Settled++
		case ledger.Disputed:
			w.Disputed++
		case ledger.Refunded:
			w.Refunded++
		default:
			continue // Records returns counted events only; a task offer is not one
		}
		if w.Oldest.IsZero() || e.Event.EndedAt.Before(w.Oldest) {
			w.Oldest = e.Event.EndedAt
		}
		if e.Corrected != nil {
			w.Corrected++
			if e.Event.Status == ledger.Settled && (e.Corrected.Status == ledger.Disputed || e.Corrected.Status == ledger.Refunded) {
				w.Chargebacks++
			}
		}
	}
	appeals, err := u.store.AppealSummaries(ctx)
	if err != nil {
		return Window{}, fmt.Errorf("agent %q's appeals: %w", agentID, err)
	}
	for _, a := range appeals {
		if a.AgentID != agentID {
			continue
		}
		switch a.State {
		case appeal.Submitted, appeal.Acknowledged, appeal.Escalated:
			w.OpenAppeals = append(w.OpenAppeals, OpenAppeal{ID: a.ID, State: a.State, FiledAt: a.FiledAt})
		}
	}
	return w, nil
}
