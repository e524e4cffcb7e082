package service

import (
	"context"
	"fmt"
	"sync"
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

// ProfileWindow returns the window (see Window) of a profile
// PublicProfile returned, as of its certificate: the public may see the
// agent (PublicProfile checked), and the agent's chain head is the
// profile's, so it costs no second lookup. The counts are remembered per
// agent, chain head and instant (windowMemo); the open appeals while the
// store's watch vouches for them (pageMemo), else read. The returned
// OpenAppeals may be shared with other calls and must not be modified.
// Errors: ErrUnavailable.
func (u *Certificates) ProfileWindow(ctx context.Context, p *Profile) (Window, error) {
	return u.window(ctx, p.Info.ID, p.Info.ChainHead, p.Certificate.ComputedAt)
}

func (u *Certificates) window(ctx context.Context, agentID string, head ledger.Hash, asOf time.Time) (Window, error) {
	w, ok := u.windows.load(agentID, head, asOf)
	var err error
	if !ok {
		if w, err = u.countWindow(ctx, agentID, asOf); err != nil {
			return Window{}, err
		}
		u.windows.store(agentID, head, w)
	}
	if w.OpenAppeals, err = u.openAppeals(ctx, agentID); err != nil {
		return Window{}, err
	}
	return w, nil
}

// countWindow reads the window's events from the ledger and counts them.
func (u *Certificates) countWindow(ctx context.Context, agentID string, asOf time.Time) (Window, error) {
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
	return w, nil
}

// windowMemoSize bounds the agents whose window counts a process
// remembers: a few hundred bytes each.
const windowMemoSize = 1024

// windowMemo remembers, per agent, its window's counts as of one instant
// (a certificate's computed_at), valid for one chain head: every accepted
// report and every correction moves the head, and nothing else changes
// what the window held at a past instant. The agent page asks for the
// same instant until a new certificate is issued, so a page served again
// reads no events. The zero value is ready and safe for concurrent use.
type windowMemo struct {
	mu sync.Mutex
	m  map[string]windowEntry
}

type windowEntry struct {
	head ledger.Hash
	w    Window // without open appeals, which change apart from the ledger
}

func (m *windowMemo) load(agentID string, head ledger.Hash, asOf time.Time) (Window, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[agentID]
	if !ok || e.head != head || !e.w.AsOf.Equal(asOf) {
		return Window{}, false
	}
	return e.w, true
}

// store remembers w; when full, an arbitrary agent is forgotten.
func (m *windowMemo) store(agentID string, head ledger.Hash, w Window) {
	w.OpenAppeals = nil
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[string]windowEntry)
	}
	if _, ok := m.m[agentID]; !ok && len(m.m) >= windowMemoSize {
		for k := range m.m {
			delete(m.m, k)
			break
		}
	}
	m.m[agentID] = windowEntry{head, w}
}

// forget drops the agent's window (an erasure).
func (m *windowMemo) forget(agentID string) {
	m.mu.Lock()
	delete(m.m, agentID)
	m.mu.Unlock()
}
