package service

import (
	"context"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// LogStore keeps the transparency log (issue 23, internal/tlog): the leaves
// every chain record was appended as, in the transaction that stored it,
// the subtree hashes above them, the signed checkpoint notes and the
// witnesses' cosignatures.
type LogStore interface {
	// LogSize returns the number of leaves in the log.
	LogSize(ctx context.Context) (int64, error)
	// LogLeaves returns the leaves from index from to index to (not
	// included) in order; ErrNotFound unless the log holds them all.
	LogLeaves(ctx context.Context, from, to int64) ([]ledger.LogLeaf, error)
	// LogSubtrees returns the stored hashes of the complete subtrees of
	// 256^level leaves (level >= 1) from index from to index to (not
	// included); ErrNotFound unless all are stored.
	LogSubtrees(ctx context.Context, level int, from, to int64) ([][]byte, error)
	// LogSubtreeCount returns how many subtree hashes level holds, stored
	// from index 0 without gaps.
	LogSubtreeCount(ctx context.Context, level int) (int64, error)
	// AddLogSubtrees stores subtree hashes of level from index from on,
	// leaving those already stored as they are.
	AddLogSubtrees(ctx context.Context, level int, from int64, hashes [][]byte) error
	// AddLogCheckpoint stores a signed checkpoint note; one already stored
	// for that size is kept (its root is the same: leaves never change).
	AddLogCheckpoint(ctx context.Context, c ledger.LogCheckpoint) error
	// LogCheckpoint returns the checkpoint note of a size, or the latest
	// (the largest) for a negative size; ErrNotFound when there is none.
	LogCheckpoint(ctx context.Context, size int64) (ledger.LogCheckpoint, error)
	// AddCosignature stores a witness's cosignature of the checkpoint of
	// size, replacing that key's earlier one; ErrNotFound when no
	// checkpoint of that size is stored.
	AddCosignature(ctx context.Context, size int64, c ledger.Cosignature) error
	// Cosignatures returns the cosignatures of the checkpoint of size, by
	// key name.
	Cosignatures(ctx context.Context, size int64) ([]ledger.Cosignature, error)
	// LastCosigned returns the largest checkpoint size the witness key
	// named keyName cosigned, 0 when it cosigned none.
	LastCosigned(ctx context.Context, keyName string) (int64, error)
	// LoggedRecords returns the chain records of an event (every agent's,
	// by agent id then seq) with their log index (-1 when not appended).
	LoggedRecords(ctx context.Context, typ ledger.Type, eventID string) ([]ledger.LoggedRecord, error)
	// LoggedRecord returns one chain record with its log index;
	// ErrNotFound when the agent has no record at seq.
	LoggedRecord(ctx context.Context, agentID string, seq int64) (ledger.LoggedRecord, error)
	// UnloggedRecords counts the chain records not yet appended to the
	// log (a ledger from before it, whose backfill has not finished).
	UnloggedRecords(ctx context.Context) (int64, error)
	// BackfillLog appends up to batch of those records to the log in one
	// transaction, first in chain order (agent id in byte order, then
	// seq), and returns how many it appended (0 when none is left).
	BackfillLog(ctx context.Context, batch int) (int64, error)
}
