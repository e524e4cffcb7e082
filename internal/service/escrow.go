package service

import "github.com/swarmscore/swarmscore/score"

// Escrow is the hold for one payment to an agent at its current score
// (spec §5): HoldCents is rounded up to the cent, in the buyer's favour.
type Escrow struct {
	Score         int
	Modifier      score.Modifier
	HoldCents     int64
	ReleasedCents int64
}
