package service

import (
	"context"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
	"github.com/swarmscore/swarmscore/passport"
)

// Certificate is an agent's current signed Execution Passport (spec §7.2).
type Certificate struct {
	AgentID string
	// Passport is the signed document exactly as issued and stored: serving
	// these bytes again serves the same signature.
	Passport   []byte
	ComputedAt time.Time
	ExpiresAt  time.Time
	// Issued is true when this call signed a new passport, false when it
	// served the one stored with a still-valid cache entry.
	Issued bool
}

// Certificate returns the agent's current signed passport (spec §7.2).
// While the agent's cache entry answers now and holds a passport, that
// passport is returned unchanged (the same bytes, the same signature);
// otherwise the score is recomputed and a new passport is signed and stored
// with the entry in the same transaction. Errors: ErrInvalid for a
// malformed id, ErrNotFound for an unknown agent, ErrUnavailable.
func (a *API) Certificate(ctx context.Context, agentID string) (Certificate, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return Certificate{}, err
	}
	now := a.now()
	e, ok, err := a.Store.CachedScore(ctx, agentID, now)
	if err != nil {
		return Certificate{}, err
	}
	if ok && len(e.Passport) > 0 {
		return Certificate{AgentID: agentID, Passport: e.Passport, ComputedAt: e.ComputedAt, ExpiresAt: e.ExpiresAt}, nil
	}
	e, err = a.Store.RefreshScore(ctx, agentID, now, a.issue)
	if err != nil {
		return Certificate{}, err
	}
	return Certificate{AgentID: agentID, Passport: e.Passport, ComputedAt: e.ComputedAt, ExpiresAt: e.ExpiresAt, Issued: true}, nil
}

// issue signs the passport of a freshly computed entry (store.IssueFunc).
func (a *API) issue(e *store.CacheEntry) ([]byte, string, error) {
	p, err := passport.New(e.AgentID, a.Platform, e.Result, e.ComputedAt)
	if err != nil {
		return nil, "", fmt.Errorf("issuing a passport for %q: %w", e.AgentID, err)
	}
	doc, err := p.Sign(a.Key)
	if err != nil {
		return nil, "", fmt.Errorf("signing a passport for %q: %w", e.AgentID, err)
	}
	return doc, p.Issuer.Signature, nil
}
