package service

import (
	"context"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// ErasureStore erases agents (GDPR Art. 17, spec §11.4).
type ErasureStore interface {
	// Erase decides req with ledger.DecideErasure against the ledger as it
	// stands and applies the plan in one transaction: the agent's id is
	// replaced by the pseudonym in every table (events, buyers,
	// corrections, chains, consent, appeals, tokens, checkpoint leaves,
	// chain breaks), its tokens and passports are revoked (a passport keeps
	// its id and times, not its document), its cached score is dropped,
	// the pseudonym is unlisted, and the erasure is stored and appended to
	// the pseudonym's chain. Concurrent ingests wait for it. Errors:
	// ErrInvalid for a malformed request; ErrNotFound for an unknown
	// agent; ErrConflict when the pseudonym or the erasure id is taken or
	// an affected record is broken; ErrUnavailable.
	Erase(ctx context.Context, req ledger.ErasureRequest) (ledger.Erasure, error)
	ErasureLister
}

// ErasureLister lists the erasures.
type ErasureLister interface {
	// Erasures returns every stored erasure with its digests, oldest
	// first. Errors: ErrUnavailable.
	Erasures(ctx context.Context) ([]ledger.Erasure, error)
}
