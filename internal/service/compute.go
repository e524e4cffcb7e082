package service

import (
	"context"
	"encoding/json"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
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
	Entry store.CacheEntry
	// AsOf is the instant asked about; Entry.ComputedAt may be earlier on a
	// cache hit (the counts are the same for every instant the entry
	// answers).
	AsOf  time.Time
	Cache CacheState
}

// Score returns the agent's current score: the cached entry if one answers
// now, otherwise a fresh one computed from the ledger and stored. An
// unknown agent is errkind.ErrNotFound.
func (l *Ledger) Score(ctx context.Context, agentID string) (store.CacheEntry, error) {
	s, err := l.AgentScore(ctx, agentID, time.Time{})
	return s.Entry, err
}

// AgentScore returns the agent's score as of asOf (now when zero). A cache
// entry answering asOf is served as is; otherwise the current score is
// computed and cached, and a historical one (an explicit asOf) is computed
// from the ledger without touching the cache. An unknown agent is
// errkind.ErrNotFound; an invalid id is errkind.ErrInvalid.
func (l *Ledger) AgentScore(ctx context.Context, agentID string, asOf time.Time) (AgentScore, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return AgentScore{}, err
	}
	current := asOf.IsZero()
	if current {
		asOf = l.now()
	}
	asOf = asOf.UTC().Truncate(ledger.Resolution)
	if e, ok, err := l.Store.CachedScore(ctx, agentID, asOf); err != nil {
		return AgentScore{}, err
	} else if ok {
		return AgentScore{Entry: e, AsOf: asOf, Cache: CacheHit}, nil
	}
	if current {
		e, err := l.Store.RefreshScore(ctx, agentID, asOf, nil)
		if err != nil {
			return AgentScore{}, err
		}
		return AgentScore{Entry: e, AsOf: asOf, Cache: CacheRefreshed}, nil
	}
	c, err := l.Store.Counts(ctx, agentID, asOf)
	if err != nil {
		return AgentScore{}, err
	}
	r, err := score.Compute(c)
	if err != nil {
		return AgentScore{}, err
	}
	e := store.CacheEntry{AgentID: agentID, Result: r, ComputedAt: asOf, ExpiresAt: asOf.Add(ledger.CacheLifetime)}
	return AgentScore{Entry: e, AsOf: asOf, Cache: CacheBypassed}, nil
}

// Agent returns what the ledger knows about an agent (errkind.ErrNotFound
// if nothing).
func (l *Ledger) Agent(ctx context.Context, agentID string) (store.AgentInfo, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return store.AgentInfo{}, err
	}
	return l.Store.Agent(ctx, agentID)
}

// VerifyLedger walks every hash chain (see store.Store.VerifyLedger).
func (l *Ledger) VerifyLedger(ctx context.Context) (store.VerifyReport, error) {
	return l.Store.VerifyLedger(ctx)
}

// RecomputeAll refreshes every agent's cache entry as of now.
func (l *Ledger) RecomputeAll(ctx context.Context, onlyStale bool) (int64, error) {
	return l.Store.RecomputeAll(ctx, l.now(), onlyStale)
}

// Dimension is one dimension of a score in the JSON view (the §6.1 names).
type Dimension struct {
	Sessions        int64   `json:"sessions_90d"`
	Successful      int64   `json:"successful_sessions_90d"`
	SuccessRate     float64 `json:"success_rate"`
	VolumeFactor    float64 `json:"volume_factor"`
	MaxContribution int     `json:"max_contribution"`
	Contribution    int     `json:"actual_contribution"`
}

func dimension(d score.Dimension) Dimension {
	return Dimension{d.Total, d.Success, d.Rate(), d.VolumeFactor(), d.MaxContribution, d.Contribution}
}

// ScoreView is the JSON shape of a score: `swarmscore agent show --json`
// and the body of GET /swarmscore/{agent_id}. Rates and volume factors are
// for display (the nearest double to the exact fraction); the score,
// contributions and modifier are exact.
type ScoreView struct {
	AgentID        string         `json:"agent_id"`
	Score          int            `json:"score"`
	Tier           score.Tier     `json:"tier"`
	Conduit        Dimension      `json:"technical_execution"`
	AP2            Dimension      `json:"commercial_reliability"`
	EscrowModifier score.Modifier `json:"escrow_modifier"`
	Gaps           []score.Gap    `json:"qualification_gaps"`
	FormulaVersion string         `json:"formula_version"`
	AsOf           time.Time      `json:"as_of"`
	ComputedAt     time.Time      `json:"computed_at"`
	ExpiresAt      time.Time      `json:"expires_at"`
	ValidUntil     *time.Time     `json:"valid_until,omitempty"`
	Cache          CacheState     `json:"cache,omitempty"`
	PassportIssued bool           `json:"passport_issued"`
}

// View renders an entry for JSON output.
func View(e *store.CacheEntry, asOf time.Time, cache CacheState) ScoreView {
	r := &e.Result
	v := ScoreView{
		AgentID: e.AgentID, Score: r.Score, Tier: r.Tier, Conduit: dimension(r.Conduit()), AP2: dimension(r.AP2()),
		EscrowModifier: r.Escrow, Gaps: r.Gaps(), FormulaVersion: r.FormulaVersion(),
		AsOf: asOf.UTC(), ComputedAt: e.ComputedAt.UTC(), ExpiresAt: e.ExpiresAt.UTC(), Cache: cache,
		PassportIssued: e.Passport != nil,
	}
	if !e.ValidUntil.IsZero() {
		vu := e.ValidUntil.UTC()
		v.ValidUntil = &vu
	}
	return v
}

// MarshalJSON renders the view (times in RFC 3339 UTC).
func (s AgentScore) MarshalJSON() ([]byte, error) {
	return json.Marshal(View(&s.Entry, s.AsOf, s.Cache))
}
