package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// Escrow is the hold for one payment to an agent at its current score
// (spec §5): HoldCents is rounded up to the cent, in the buyer's favour.
type Escrow struct {
	Score         int
	Modifier      score.Modifier
	HoldCents     int64
	ReleasedCents int64
}

// Escrow computes the hold for a payment of amountCents to the agent at its
// current score (spec §5), rounded up to the cent. An agent the ledger has
// no event for is a new provider: score 0, a full hold (modifier 1.0, spec
// Appendix B). Errors: ErrInvalid for a malformed id or a negative amount,
// ErrUnavailable.
func (u *Certificates) Escrow(ctx context.Context, agentID string, amountCents int64) (Escrow, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return Escrow{}, err
	}
	if amountCents < 0 {
		return Escrow{}, fmt.Errorf("%w: amount_cents %d must not be negative", errkind.ErrInvalid, amountCents)
	}
	e, err := u.Score(ctx, agentID)
	switch {
	case errors.Is(err, errkind.ErrNotFound):
		// Every new provider's first payment lands here: no history is
		// the lowest score, not an error.
		if e.Result, err = score.Compute(score.Counts{}); err != nil {
			return Escrow{}, err
		}
	case err != nil:
		return Escrow{}, err
	}
	hold, released, err := score.HoldCents(amountCents, e.Result.Score)
	if err != nil {
		return Escrow{}, err
	}
	return Escrow{Score: e.Result.Score, Modifier: e.Result.Escrow, HoldCents: hold, ReleasedCents: released}, nil
}
