package service

import (
	"context"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// API holds the use cases the HTTP service exposes: certificates,
// verification, scores, escrow holds, ranking and operator authentication.
// Every method reads the clock once and works "as of" that instant, to the
// second (passports carry seconds), so a certificate, its cache entry and
// an L2 recount agree on the instant.
type API struct {
	// Ledger provides the store, the clock, scores through the cache and
	// ingestion, shared with the CLI.
	*Ledger
	// Key signs new passports.
	Key passport.Key
	// Platform is the issuer.platform of new passports.
	Platform string
	// Tokens authenticates operators.
	Tokens *Tokens

	// certs is the certificates this process served (certmemo.go).
	certs certMemo
}

// now is the Ledger's clock to the second, the precision of passports.
func (a *API) now() time.Time { return a.Ledger.now().Truncate(time.Second) }

// Escrow computes the hold for a payment of amountCents to the agent at its
// current score (spec §5), rounded up to the cent. Errors: ErrInvalid for a
// malformed id or a negative amount, ErrNotFound for an unknown agent,
// ErrUnavailable.
func (a *API) Escrow(ctx context.Context, agentID string, amountCents int64) (Escrow, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return Escrow{}, err
	}
	if amountCents < 0 {
		return Escrow{}, fmt.Errorf("%w: amount_cents %d must not be negative", errkind.ErrInvalid, amountCents)
	}
	e, err := a.Score(ctx, agentID)
	if err != nil {
		return Escrow{}, err
	}
	hold, released, err := score.HoldCents(amountCents, e.Result.Score)
	if err != nil {
		return Escrow{}, err
	}
	return Escrow{Score: e.Result.Score, Modifier: e.Result.Escrow, HoldCents: hold, ReleasedCents: released}, nil
}

// Ranking lists agents by current score, highest first, then by agent id.
// Stale cache entries are first recomputed in one set-based statement, so
// the page ranks scores as of now. Agents that chose to be unlisted are
// omitted. Errors: ErrInvalid for an out-of-range query, ErrUnavailable.
func (a *API) Ranking(ctx context.Context, q RankingQuery) (RankingPage, error) {
	lq := ledger.ListQuery{MinTier: q.MinTier, MinScore: q.MinScore, Limit: q.Limit, After: q.After}
	if err := lq.Validate(); err != nil {
		return RankingPage{}, err
	}
	if _, err := a.Store.RecomputeAll(ctx, a.now(), true); err != nil {
		return RankingPage{}, err
	}
	// One extra row tells whether there is a next page, so the last page
	// carries no cursor (except at the maximum page size).
	lq.Limit = min(q.Limit+1, 1000)
	entries, err := a.Store.ListScores(ctx, lq)
	if err != nil {
		return RankingPage{}, err
	}
	page := RankingPage{Agents: entries}
	if len(entries) > q.Limit {
		page.Agents = entries[:q.Limit]
	}
	if len(entries) > q.Limit || (len(entries) == q.Limit && lq.Limit == q.Limit) {
		last := page.Agents[len(page.Agents)-1]
		page.Next = &ledger.Cursor{Score: last.Result.Score, AgentID: last.AgentID}
	}
	return page, nil
}

// Authenticate returns the operator owning a bearer token (ErrUnauthorized
// otherwise).
func (a *API) Authenticate(ctx context.Context, token string) (string, error) {
	return a.Tokens.Authenticate(ctx, token)
}

// Ready reports whether the database is reachable and migrated
// (ErrUnavailable otherwise).
func (a *API) Ready(ctx context.Context) error { return a.Store.Ready(ctx) }
