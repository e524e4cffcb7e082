package service

import (
	"context"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// RetentionStore prunes what retention no longer keeps (spec §11.4).
type RetentionStore interface {
	// Prune prunes, chain by chain, the longest prefix of records whose
	// events ledger.Prunable allows at cutoff (and earlier summaries),
	// deleting those events' rows and corrections and appending the
	// summary record ledger.DecidePrune plans, dated at. Each chain is
	// pruned in its own transaction, so a prune interrupted part-way
	// leaves every chain whole. Errors: ErrUnavailable.
	Prune(ctx context.Context, cutoff, at time.Time) (ledger.PruneReport, error)
	// Anchors returns every pruned chain's anchor, by agent. Errors:
	// ErrUnavailable.
	Anchors(ctx context.Context) (map[string]ledger.Anchor, error)
}
