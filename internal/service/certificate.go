package service

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/passport"
)

// Certificates are the use cases of scores and signed certificates (spec
// §5, §7.2): an agent's score through the cache, its passport (remembered
// by this process: certmemo.go), both as a caller may see them (rights.go),
// escrow holds, the ranking, the agent pages' profile and history, and the
// cache's maintenance.
type Certificates struct {
	store     CertificateStore
	clock     clock
	horizon   horizon // the latest as_of AgentScore answers
	keys      *signing
	formulas  passport.Acceptance // Config.Formulas, for the agent pages
	certs     *certMemo
	pubs      *publication
	histories *historyMemo
	windows   *windowMemo
	pages     *pageMemo
}

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
// a malformed id, ErrNotFound for an unknown agent (with a public detail,
// errkind.PublicDetail), ErrUnavailable (including ctx ending while waiting
// for another request's passport).
//
// The passport this process served last for the agent is kept in memory
// (certmemo.go) and served again with no query while the store's
// CacheWatch vouches that nothing changed the agent's cache stamp since it
// was last validated (at most maxTrust ago), and only while it answers now.
// Otherwise the stamp is read, as it is on every call against a store
// without a watch. Consistency: a write committed through these use cases
// (Ingest) is seen by the next call; a write by another process as soon as
// the store's watch learns of it (SQLite: at once; PostgreSQL: when its
// notification arrives, normally within a millisecond; see docs/ERRATA.md),
// and in every case within maxTrust.
func (u *Certificates) Certificate(ctx context.Context, agentID string) (Certificate, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return Certificate{}, err
	}
	c, err := u.certificate(ctx, agentID)
	return c, unknownAgent(err, agentID)
}

func (u *Certificates) certificate(ctx context.Context, agentID string) (Certificate, error) {
	now := u.clock.now()
	w := u.certs.cacheWatch()
	// A passport signed by a key that is no longer the active one is never
	// served again: it is re-issued.
	ks := u.keys.current(ctx)
	active := ks.active.ID()
	if m, ok := u.certs.serve(w, agentID, now); ok && m.kid == active {
		u.certs.fromMemory.Add(1)
		return m.certificate(agentID, false), nil
	}
	ck := u.certs.begin(w)
	u.certs.stampReads.Add(1)
	st, err := u.store.CacheStamp(ctx, agentID)
	if err != nil {
		return Certificate{}, err
	}
	if st.Answers(now) && st.Signature != "" {
		if m, ok := u.certs.lookup(agentID, st, ck); ok && m.answers(now) && m.kid == active {
			return m.certificate(agentID, false), nil
		}
		// Another process issued it, or this one forgot it: read it.
		u.certs.passportReads.Add(1)
		e, ok, err := u.store.CachedScore(ctx, agentID, now)
		if err != nil {
			return Certificate{}, err
		}
		if ok && len(e.Passport) > 0 {
			if kid, ok := signedBy(ks, &e, now); ok {
				e.KeyID = kid
				if m := u.certs.remember(agentID, &e, ck); kid == active {
					return m.certificate(agentID, false), nil
				}
			}
		}
	}
	return u.issueOnce(ctx, agentID, now, ks.active, ck)
}

// issueOnce signs and stores a new passport for agentID as of now, unless
// another request of this process is already doing so: then it waits for
// that one and serves the same document. Without this, a burst of first
// requests for an agent would each sign and store a passport of their own,
// and every caller but the last to store would hold a document (valid, but
// with another id and signature) that the route no longer serves. If the
// request it waited for failed (its client may have gone away: the
// issuance runs with the first request's context) or panicked, or issued a
// passport that does not answer this request's instant, it issues one
// itself. Several processes can still each issue one at the same instant;
// the last stored is then the one served from then on.
func (u *Certificates) issueOnce(ctx context.Context, agentID string, now time.Time, key passport.Key, ck check) (Certificate, error) {
	led := false // set only by the request whose function the group runs
	ch := u.certs.issuing.DoChan(agentID, func() (v any, err error) {
		led = true
		// A panic must not reach singleflight, which would crash the
		// process to release the waiters: the waiters issue their own,
		// and the leader panics again in its own goroutine.
		defer func() {
			if p := recover(); p != nil {
				err = &issuePanic{p}
			}
		}()
		return u.refresh(ctx, agentID, now, key, ck)
	})
	var res singleflight.Result
	select {
	case res = <-ch:
	case <-ctx.Done():
		return Certificate{}, fmt.Errorf("%w: waiting for agent %q's certificate: %w", errkind.ErrUnavailable, agentID, ctx.Err())
	}
	if led {
		if p, ok := res.Err.(*issuePanic); ok {
			panic(p.value)
		}
		if res.Err != nil {
			return Certificate{}, res.Err
		}
		return res.Val.(*memoCert).certificate(agentID, true), nil
	}
	if res.Err == nil {
		if c := res.Val.(*memoCert); c.answers(now) {
			return c.certificate(agentID, false), nil
		}
	}
	c, err := u.refresh(ctx, agentID, now, key, ck)
	if err != nil {
		return Certificate{}, err
	}
	return c.certificate(agentID, true), nil
}

// refresh recomputes the agent's entry as of now with a new passport signed
// by key and remembers it as validated by ck.
func (u *Certificates) refresh(ctx context.Context, agentID string, now time.Time, key passport.Key, ck check) (*memoCert, error) {
	e, err := u.store.RefreshScore(ctx, agentID, now, u.keys.signer(key))
	if err != nil {
		return nil, err
	}
	return u.certs.remember(agentID, &e, ck), nil
}

// issuePanic carries a panic of the issuing request out of the
// singleflight group.
type issuePanic struct{ value any }

func (p *issuePanic) Error() string {
	return fmt.Sprintf("issuing the certificate panicked: %v", p.value)
}

func (c *memoCert) certificate(agentID string, issued bool) Certificate {
	return Certificate{AgentID: agentID, Passport: c.passport, Digest: c.digest, ComputedAt: c.computedAt,
		ExpiresAt: c.expiresAt, Issued: issued}
}
