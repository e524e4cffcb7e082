package service

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/passport"
)

// Certificate is an agent's current signed Execution Passport (spec §7.2).
type Certificate struct {
	AgentID string
	// Passport is the signed document exactly as issued and stored: serving
	// these bytes again serves the same signature.
	Passport []byte
	// Digest is the SHA-256 of Passport, computed once per passport (the
	// HTTP layer derives its ETag from it).
	Digest     [sha256.Size]byte
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
// with the entry in the same transaction. The returned Passport may be
// shared with other calls and must not be modified. Errors: ErrInvalid for
// a malformed id, ErrNotFound for an unknown agent, ErrUnavailable.
//
// The passport this process served last for the agent is kept in memory
// (certmemo.go) and served again with no query while the store's
// CacheWatch vouches that nothing changed the agent's cache stamp since it
// was last validated (at most maxTrust ago), and only while it answers now.
// Otherwise the stamp is read, as it is on every call against a store
// without a watch. Consistency: a write committed through this API
// (Ingest) is seen by the next call; a write by another process as soon as
// the store's watch learns of it (SQLite: at once; PostgreSQL: when its
// notification arrives, normally within a millisecond; see docs/ERRATA.md),
// and in every case within maxTrust.
func (a *API) Certificate(ctx context.Context, agentID string) (Certificate, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return Certificate{}, err
	}
	now := a.now()
	w := a.certs.cacheWatch(a.Store)
	if m, ok := a.certs.serve(w, agentID, now); ok {
		return m.certificate(agentID, false), nil
	}
	ck := a.certs.begin(w)
	st, err := a.Store.CacheStamp(ctx, agentID)
	if err != nil {
		return Certificate{}, err
	}
	if st.Answers(now) && st.Signature != "" {
		if m, ok := a.certs.lookup(agentID, st, ck); ok && m.answers(now) {
			return m.certificate(agentID, false), nil
		}
		// Another process issued it, or this one forgot it: read it.
		e, ok, err := a.Store.CachedScore(ctx, agentID, now)
		if err != nil {
			return Certificate{}, err
		}
		if ok && len(e.Passport) > 0 {
			return a.certs.remember(agentID, &e, ck).certificate(agentID, false), nil
		}
	}
	return a.issueOnce(ctx, agentID, now, ck)
}

// issueOnce signs and stores a new passport for agentID as of now, unless
// another request of this process is already doing so: then it waits for
// that one and serves the same document. Without this, a burst of first
// requests for an agent would each sign and store a passport of their own,
// and every caller but the last to store would hold a document (valid, but
// with another id and signature) that the route no longer serves. If the
// request it waited for failed (its client may have gone away), it issues
// one itself. Several processes can still each issue one at the same
// instant; the last stored is then the one served from then on.
func (a *API) issueOnce(ctx context.Context, agentID string, now time.Time, ck check) (Certificate, error) {
	f, leader := a.certs.flights.join(agentID)
	if !leader {
		select {
		case <-f.done:
		case <-ctx.Done():
			return Certificate{}, fmt.Errorf("%w: waiting for agent %q's certificate: %w", errkind.ErrUnavailable, agentID, ctx.Err())
		}
		if f.err == nil && f.cert.answers(a.now()) {
			return f.cert.certificate(agentID, false), nil
		}
	}
	var c *memoCert
	err := errLeaderPanicked
	if leader {
		// Deferred, so the waiting requests are released even if issuing
		// panics.
		defer func() { a.certs.flights.finish(agentID, f, c, err) }()
	}
	var e ledger.ScoreEntry
	if e, err = a.Store.RefreshScore(ctx, agentID, now, a.issue); err != nil {
		return Certificate{}, err
	}
	c = a.certs.remember(agentID, &e, ck)
	return c.certificate(agentID, true), nil
}

// errLeaderPanicked is what requests waiting on an issuance see when it
// panicked; they then issue the passport themselves.
var errLeaderPanicked = errors.New("issuing the certificate panicked")

func (c *memoCert) certificate(agentID string, issued bool) Certificate {
	return Certificate{AgentID: agentID, Passport: c.passport, Digest: c.digest, ComputedAt: c.computedAt,
		ExpiresAt: c.expiresAt, Issued: issued}
}

// Ingest records events reported by operator (Ledger.Ingest) and, before it
// returns, tells the store's watch which agents the batch may have changed,
// so that the next certificate request for any of them reads the store
// (read-your-writes within this process) instead of waiting for the
// database to report the commit. When the batch failed, whether it
// committed is unknown, and every agent in it counts as written.
func (a *API) Ingest(ctx context.Context, operator string, events []ledger.Event) ([]ledger.Outcome, error) {
	out, err := a.Ledger.Ingest(ctx, operator, events)
	if w := a.certs.cacheWatch(a.Store); w != nil {
		ids := make([]string, 0, len(events))
		for i := range events {
			if err != nil || (i < len(out) && out[i].Status == ledger.OutcomeAccepted) {
				ids = append(ids, events[i].AgentID)
			}
		}
		w.Wrote(ids)
	}
	return out, err
}

// issue signs the passport of a freshly computed entry (store.IssueFunc).
func (a *API) issue(e *ledger.ScoreEntry) ([]byte, string, error) {
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
