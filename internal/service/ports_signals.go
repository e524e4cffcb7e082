package service

import (
	"context"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/signal"
)

// SignalStore computes the figures behind the gaming signals
// (internal/signal) set-based, and keeps the breaks the last full chain
// walk found.
type SignalStore interface {
	// SignalFigures returns the figures of every agent with counted events
	// or decided task offers in the window ending at asOf, by agent id;
	// with agentID set, only that agent's (none when it has nothing in the
	// window). ConduitBurst counts sessions within burst (positive) of
	// each other. It is one set-based query in either case, never a loop
	// over agents.
	SignalFigures(ctx context.Context, asOf time.Time, agentID string, burst time.Duration) ([]signal.Figures, error)
	// SetChainBreaks replaces the recorded breaks with those a full walk
	// found at at (ledger.VerifyChains), so that ChainBroken reflects the
	// latest walk.
	SetChainBreaks(ctx context.Context, at time.Time, broken []ledger.BrokenLink) error
}
