package service

import (
	"context"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// CheckpointStore keeps signed checkpoints (internal/checkpoint) with their
// leaves, and reads what building and checking one needs.
type CheckpointStore interface {
	// Heads returns every registered agent's chain head, by agent id,
	// read in one snapshot.
	Heads(ctx context.Context) ([]checkpoint.Leaf, error)
	// AddCheckpoint stores a signed checkpoint (doc is its published
	// JSON) and its leaves. Its number must follow the latest stored one
	// (1 for the first), and every leaf's agent must still be in the
	// ledger (one erased since the heads were read is not); otherwise
	// ErrConflict. A leaf keeps its place: CheckpointLeaves returns them
	// in this order.
	AddCheckpoint(ctx context.Context, c checkpoint.Checkpoint, doc []byte, leaves []checkpoint.Leaf) error
	// Checkpoint returns the published document of checkpoint number, or
	// of the latest when number is 0 (ErrNotFound when there is none).
	Checkpoint(ctx context.Context, number int64) ([]byte, error)
	// CheckpointLeaves returns a checkpoint's stored leaves in the order
	// they were added (by agent id, except that an erased agent's leaf
	// keeps its place under the pseudonym, with its signed leaf hash).
	CheckpointLeaves(ctx context.Context, number int64) ([]checkpoint.Leaf, error)
	// RecordHashes returns, for each leaf asked (an agent and a seq), the
	// leaf with the hash stored for that agent's record at that seq now;
	// agents without a record at that seq are left out. The result is by
	// agent id.
	RecordHashes(ctx context.Context, want []checkpoint.Leaf) ([]checkpoint.Leaf, error)
	// Chain returns one agent's chain as VerifyChains reads it: its
	// records in order, each with its event row and correction (or a
	// single row without a record for an agent that has none), read in
	// one snapshot with what a prune left (ledger.AttachPruned: the anchor
	// and the summary records' contents). ErrNotFound for an agent with neither records nor a registration.
	Chain(ctx context.Context, agentID string) ([]ledger.ChainRow, error)
}
