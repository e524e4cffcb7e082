package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// CacheState says where a score came from.
type CacheState string

// The cache states.
const (
	// CacheHit: a stored entry answered the as_of.
	CacheHit CacheState = "hit"
	// CacheRefreshed: no entry answered the current time, so the score was
	// computed from the ledger and stored.
	CacheRefreshed CacheState = "refreshed"
	// CacheBypassed: an explicit as_of no entry answers; the score was
	// computed from the ledger and not stored (history is not cached).
	CacheBypassed CacheState = "bypassed"
)

// AgentScore is an agent's score as of an instant and where it came from.
type AgentScore struct {
	Entry ledger.ScoreEntry
	// AsOf is the instant asked about; Entry.ComputedAt may be earlier on a
	// cache hit (the counts are the same for every instant the entry
	// answers).
	AsOf  time.Time
	Cache CacheState
}

// Score returns the agent's current score: the cached entry if one answers
// now, otherwise a fresh one computed from the ledger and stored. Errors:
// ErrInvalid for a malformed id, ErrNotFound for an unknown agent (with a
// public detail, errkind.PublicDetail), ErrUnavailable.
func (u *Certificates) Score(ctx context.Context, agentID string) (ledger.ScoreEntry, error) {
	s, err := u.AgentScore(ctx, agentID, time.Time{})
	return s.Entry, err
}

// AgentScore returns the agent's score as of asOf (now, to the second,
// when zero; otherwise asOf to the microsecond). A cache entry answering
// asOf is served as is; otherwise the current score is computed and
// cached, and a historical one (an explicit asOf) is computed from the
// ledger without touching the cache. Errors: ErrInvalid for a malformed
// id or an asOf later than now plus the clock-skew allowance, ErrNotFound
// for an unknown agent (with a public detail, errkind.PublicDetail),
// ErrUnavailable.
func (u *Certificates) AgentScore(ctx context.Context, agentID string, asOf time.Time) (AgentScore, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return AgentScore{}, err
	}
	if err := u.horizon.check(asOf); err != nil {
		return AgentScore{}, err
	}
	s, err := u.agentScore(ctx, agentID, asOf)
	return s, unknownAgent(err, agentID)
}

func (u *Certificates) agentScore(ctx context.Context, agentID string, asOf time.Time) (AgentScore, error) {
	current := asOf.IsZero()
	if current {
		asOf = u.clock.now()
	}
	asOf = asOf.UTC().Truncate(ledger.Resolution)
	if current {
		// The entry of a certificate this process serves, with no query.
		if c, ok, err := u.remembered(ctx, agentID, asOf); err != nil {
			return AgentScore{}, err
		} else if ok {
			return AgentScore{Entry: c.entry(agentID), AsOf: asOf, Cache: CacheHit}, nil
		}
	}
	if e, ok, err := u.store.CachedScore(ctx, agentID, asOf); err != nil {
		return AgentScore{}, err
	} else if ok {
		return AgentScore{Entry: e, AsOf: asOf, Cache: CacheHit}, nil
	}
	if current {
		e, err := u.store.RefreshScore(ctx, agentID, asOf, nil)
		if err != nil {
			return AgentScore{}, err
		}
		return AgentScore{Entry: e, AsOf: asOf, Cache: CacheRefreshed}, nil
	}
	c, err := u.store.Counts(ctx, agentID, asOf)
	if err != nil {
		return AgentScore{}, err
	}
	r, err := score.Compute(c)
	if err != nil {
		return AgentScore{}, err
	}
	e := ledger.ScoreEntry{AgentID: agentID, Result: r, ComputedAt: asOf, ExpiresAt: asOf.Add(ledger.CacheLifetime)}
	return AgentScore{Entry: e, AsOf: asOf, Cache: CacheBypassed}, nil
}

// unknownAgent gives a back end's "no such agent" a detail fit for anyone
// (errkind.WithPublic): the back end's own message names its layer, which
// stays in the log.
func unknownAgent(err error, agentID string) error {
	if errors.Is(err, errkind.ErrNotFound) {
		return errkind.WithPublic(err, fmt.Sprintf("agent %q is unknown: no event has been recorded for it", agentID))
	}
	return err
}

// Agent returns what the ledger knows about an agent. Errors: ErrInvalid
// for a malformed id, ErrNotFound if nothing (with a public detail,
// errkind.PublicDetail), ErrUnavailable.
func (u *Certificates) Agent(ctx context.Context, agentID string) (ledger.AgentInfo, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return ledger.AgentInfo{}, err
	}
	info, err := u.store.Agent(ctx, agentID)
	return info, unknownAgent(err, agentID)
}

// RecomputeAll refreshes every agent's cache entry as of now (with
// onlyStale, only entries that no longer answer now), dropping their
// passports, and returns how many it wrote. Errors: ErrUnavailable.
func (u *Certificates) RecomputeAll(ctx context.Context, onlyStale bool) (int64, error) {
	return u.store.RecomputeAll(ctx, u.clock.now(), onlyStale)
}
