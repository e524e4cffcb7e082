package service

import (
	"context"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// PruneResult is what a prune did: the store's report and the checkpoint
// made after it, if any.
type PruneResult struct {
	ledger.PruneReport
	// Checkpoint is the number of the checkpoint that notarises the
	// pruned chains' new heads (0 when nothing was pruned).
	Checkpoint int64
}

// Prune applies retention (spec §11.4): the events that ended before now −
// keep − the 30-day appeal window go, chain by chain, leaving each pruned
// chain an anchor and a summary record of their counts (ledger/prune.go);
// then, when anything was pruned, a checkpoint signs the new heads, so
// that what was removed is vouched for by a notarised summary. Scores in
// use are untouched: keep is at least the scoring window. Errors:
// ErrInvalid for a keep shorter than 90 days or, after a prune, no
// checkpoint key; ErrConflict, ErrUnavailable.
func (u *Audit) Prune(ctx context.Context, keep time.Duration) (PruneResult, error) {
	now := u.clock.now()
	cutoff, err := ledger.RetentionCutoff(now, keep)
	if err != nil {
		return PruneResult{}, err
	}
	rep, err := u.store.Prune(ctx, cutoff, now)
	res := PruneResult{PruneReport: rep}
	if err != nil || rep.Agents == 0 {
		return res, err
	}
	nc, err := u.MakeCheckpoint(ctx, true)
	if err != nil {
		return res, err
	}
	res.Checkpoint = nc.Checkpoint.Number
	return res, nil
}
