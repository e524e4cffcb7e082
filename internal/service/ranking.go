package service

import (
	"context"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// RankingQuery selects agents for marketplace search (spec §4).
type RankingQuery struct {
	MinTier  score.Tier
	MinScore int
	Limit    int
	// By is the key the ranking orders by (the score unless set); After's
	// Score is that key's value.
	By    ledger.RankBy
	After *ledger.Cursor
}

// RankingPage is one page of the ranking, highest score first. Next is the
// cursor of the following page, nil on the last page.
type RankingPage struct {
	Agents []ledger.ScoreEntry
	Next   *ledger.Cursor
}

// Ranking lists agents by current score (or q.By's key), highest first,
// then by agent id.
// Stale cache entries are first recomputed in one set-based statement, so
// the page ranks scores as of now. Agents that chose to be unlisted are
// omitted, and so, with RequireConsent, are agents that have not consented. Errors: ErrInvalid for an out-of-range query, ErrUnavailable.
func (u *Certificates) Ranking(ctx context.Context, q RankingQuery) (RankingPage, error) {
	lq := ledger.ListQuery{MinTier: q.MinTier, MinScore: q.MinScore, Limit: q.Limit, By: q.By, After: q.After}
	if err := lq.Validate(); err != nil {
		return RankingPage{}, err
	}
	if _, err := u.store.RecomputeAll(ctx, u.clock.now(), true); err != nil {
		return RankingPage{}, err
	}
	// One extra row tells whether there is a next page, so the last page
	// carries no cursor (except at the maximum page size).
	lq.Limit = min(q.Limit+1, 1000)
	entries, err := u.listPublished(ctx, lq)
	if err != nil {
		return RankingPage{}, err
	}
	page := RankingPage{Agents: entries}
	if len(entries) > q.Limit {
		page.Agents = entries[:q.Limit]
	}
	if len(entries) > q.Limit || (len(entries) == q.Limit && lq.Limit == q.Limit) {
		last := page.Agents[len(page.Agents)-1]
		page.Next = &ledger.Cursor{Score: q.By.Key(last.Result), AgentID: last.AgentID}
	}
	return page, nil
}

// listPublished is ListScores without the agents the public may not see.
// The store omits unlisted agents itself; with RequireConsent, agents that
// have not consented are skipped here, reading further pages until q.Limit
// entries are found or the ranking ends.
func (u *Certificates) listPublished(ctx context.Context, q ledger.ListQuery) ([]ledger.ScoreEntry, error) {
	if !u.pubs.require {
		return u.store.ListScores(ctx, q)
	}
	var out []ledger.ScoreEntry
	for {
		page, err := u.store.ListScores(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			ok, err := u.pubs.published(ctx, e.AgentID)
			if err != nil {
				return nil, err
			}
			if ok {
				if out = append(out, e); len(out) == q.Limit {
					return out, nil
				}
			}
		}
		if len(page) < q.Limit {
			return out, nil
		}
		last := page[len(page)-1]
		q.After = &ledger.Cursor{Score: last.Result.Score, AgentID: last.AgentID}
	}
}
