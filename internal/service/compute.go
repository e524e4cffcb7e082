package service

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

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
// now, otherwise a fresh one computed from the ledger and stored. An
// unknown agent is errkind.ErrNotFound.
func (l *Ledger) Score(ctx context.Context, agentID string) (ledger.ScoreEntry, error) {
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
	e := ledger.ScoreEntry{AgentID: agentID, Result: r, ComputedAt: asOf, ExpiresAt: asOf.Add(ledger.CacheLifetime)}
	return AgentScore{Entry: e, AsOf: asOf, Cache: CacheBypassed}, nil
}

// Agent returns what the ledger knows about an agent (errkind.ErrNotFound
// if nothing).
func (l *Ledger) Agent(ctx context.Context, agentID string) (ledger.AgentInfo, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return ledger.AgentInfo{}, err
	}
	return l.Store.Agent(ctx, agentID)
}

// VerifyLedger walks every hash chain (see Backend.VerifyLedger).
func (l *Ledger) VerifyLedger(ctx context.Context) (ledger.VerifyReport, error) {
	return l.Store.VerifyLedger(ctx)
}

// RecomputeAll refreshes every agent's cache entry as of now.
func (l *Ledger) RecomputeAll(ctx context.Context, onlyStale bool) (int64, error) {
	return l.Store.RecomputeAll(ctx, l.now(), onlyStale)
}

// AppendScoreJSON appends an entry's score as one JSON object: the CLI's
// `score --json` members (score.Result.AppendJSONFields) preceded by the
// agent and the entry's times. It is the body of GET /swarmscore/{agent_id}
// and, with extra members, of `swarmscore agent show --json`; extra, when
// not empty, is appended verbatim before the closing brace and must start
// with a comma.
func AppendScoreJSON(b []byte, e *ledger.ScoreEntry, extra []byte) []byte {
	b = append(b, `{"agent_id":`...)
	b = strconv.AppendQuote(b, e.AgentID) // ids are [A-Za-z0-9._:-]: Go quoting is JSON-exact
	b = append(b, `,"computed_at":"`...)
	b = e.ComputedAt.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","expires_at":"`...)
	b = e.ExpiresAt.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `",`...)
	b = e.Result.AppendJSONFields(b)
	b = append(b, extra...)
	return append(b, '}')
}

// MarshalJSON renders the score (AppendScoreJSON) with the lookup's as_of,
// the entry's valid_until, the cache state and whether a passport is stored.
func (s AgentScore) MarshalJSON() ([]byte, error) {
	var validUntil *time.Time
	if !s.Entry.ValidUntil.IsZero() {
		vu := s.Entry.ValidUntil.UTC()
		validUntil = &vu
	}
	extra, err := json.Marshal(struct {
		AsOf           time.Time  `json:"as_of"`
		ValidUntil     *time.Time `json:"valid_until,omitempty"`
		Cache          CacheState `json:"cache,omitempty"`
		PassportIssued bool       `json:"passport_issued"`
	}{s.AsOf.UTC(), validUntil, s.Cache, s.Entry.Passport != nil})
	if err != nil {
		return nil, err
	}
	extra[0] = ',' // splice the members into the score object
	return AppendScoreJSON(nil, &s.Entry, extra[:len(extra)-1]), nil
}
