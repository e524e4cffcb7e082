package service

import (
	"context"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// HoldDecider, HoldQuery and HoldStats are the ledger's.
type (
	HoldDecider = ledger.HoldDecider
	HoldQuery   = ledger.HoldQuery
	HoldStats   = ledger.HoldStats
)

// HoldStore keeps escrow holds (ledger.Hold) and their chains.
type HoldStore interface {
	// ApplyHold changes hold id in one write transaction: it reads the
	// stored hold (locking it against concurrent changes), calls decide
	// with it, and writes what decide returns: the hold, its step and,
	// when the change has one, its ap2_transaction event, recorded
	// exactly as Ingest records b with that one event, reported as the
	// hold's operator (ledger.Hold.Operator; the chain record,
	// the event row with the hold's escrow modifier, the cache
	// invalidation). An event the ledger rejects rolls the whole change
	// back and is returned as its error (ErrConflict or ErrInvalid); a
	// duplicate or superseded one is a no-op beside the hold's change.
	// Nothing is written when decide fails or returns an Unchanged change.
	// Two concurrent calls for one hold are decided one after the other.
	// Errors: decide's, the event's, ErrUnavailable.
	ApplyHold(ctx context.Context, id string, b ledger.Batch, decide HoldDecider) (ledger.HoldChange, error)
	// Hold returns a hold (ErrNotFound for an unknown id).
	Hold(ctx context.Context, id string) (ledger.Hold, error)
	HoldReader
	// HoldStats counts the holds by state and adds up what is held, in
	// one query.
	HoldStats(ctx context.Context) (HoldStats, error)
}

// HoldReader lists holds and reads their chains.
type HoldReader interface {
	// Holds lists the holds q selects, oldest first.
	Holds(ctx context.Context, q HoldQuery) ([]ledger.Hold, error)
	// HoldSteps returns a hold's steps in seq order (none for an unknown
	// id).
	HoldSteps(ctx context.Context, id string) ([]ledger.HoldStep, error)
}

// ProofStore keeps the checks of Conduit proof bundles (ledger.ProofCheck).
type ProofStore interface {
	// RecordProof, in one write transaction, reads the proof_hash of the
	// Conduit session eventID ("" for none) and its last check (nil for
	// none), locking them against a concurrent check, calls decide (a
	// bound ledger.DecideProof) and stores the check it returns.
	// Errors: ErrNotFound for an unknown session, decide's,
	// ErrUnavailable.
	RecordProof(ctx context.Context, eventID string, decide func(expected string, prev *ledger.ProofCheck) (ledger.ProofCheck, error)) (ledger.ProofCheck, error)
	// ProofChecks returns a session's checks in seq order.
	ProofChecks(ctx context.Context, eventID string) ([]ledger.ProofCheck, error)
}
