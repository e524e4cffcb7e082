package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

func collectLeaves(rows pgx.Rows) ([]checkpoint.Leaf, error) {
	var (
		out  []checkpoint.Leaf
		l    checkpoint.Leaf
		hash []byte
	)
	_, err := pgx.ForEachRow(rows, []any{&l.AgentID, &l.Seq, &hash}, func() error {
		if len(hash) != ledger.HashSize {
			return fmt.Errorf("agent %q has a %d-byte hash", l.AgentID, len(hash))
		}
		copy(l.Hash[:], hash)
		out = append(out, l)
		return nil
	})
	return out, err
}

// Heads returns every agent's chain head; see service.CheckpointStore.
func (s *Store) Heads(ctx context.Context) ([]checkpoint.Leaf, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, head_seq, head_hash FROM agents ORDER BY id COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("postgres: read heads: %w", classify(err))
	}
	out, err := collectLeaves(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: read heads: %w", classify(err))
	}
	return out, nil
}

// AddCheckpoint stores a checkpoint and its leaves; see
// service.CheckpointStore.
func (s *Store) AddCheckpoint(ctx context.Context, c checkpoint.Checkpoint, doc []byte, leaves []checkpoint.Leaf) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE checkpoints IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		var last int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(number), 0) FROM checkpoints`).Scan(&last); err != nil {
			return err
		}
		if c.Number != last+1 {
			return fmt.Errorf("%w: checkpoint %d does not follow the latest, %d", errkind.ErrConflict, c.Number, last)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO checkpoints (number, created_at, agents, root, document) VALUES ($1, $2, $3, $4, $5)`,
			c.Number, c.Time, c.Agents, c.Root[:], string(doc)); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"checkpoint_leaves"}, []string{"number", "position", "agent_id", "seq", "hash"},
			pgx.CopyFromSlice(len(leaves), func(i int) ([]any, error) {
				return []any{c.Number, i, leaves[i].AgentID, leaves[i].Seq, leaves[i].Hash[:]}, nil
			}))
		if err != nil {
			return err
		}
		// An agent erased since the heads were read must not come back.
		var gone bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM checkpoint_leaves l WHERE l.number = $1
		    AND NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = l.agent_id))`, c.Number).Scan(&gone); err != nil {
			return err
		}
		if gone {
			return fmt.Errorf("%w: a leaf names an agent that is no longer in the ledger (erased since the heads were read); make the checkpoint again", errkind.ErrConflict)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: store checkpoint: %w", err)
	}
	return nil
}

// Checkpoint returns a published checkpoint; see service.CheckpointStore.
func (s *Store) Checkpoint(ctx context.Context, number int64) ([]byte, error) {
	var doc string
	err := s.pool.QueryRow(ctx, `SELECT document FROM checkpoints
		WHERE number = CASE WHEN $1 = 0 THEN (SELECT max(number) FROM checkpoints) ELSE $1 END`, number).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		if number == 0 {
			return nil, fmt.Errorf("%w: no checkpoint has been made yet", errkind.ErrNotFound)
		}
		return nil, fmt.Errorf("%w: no checkpoint %d", errkind.ErrNotFound, number)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read checkpoint: %w", classify(err))
	}
	return []byte(doc), nil
}

// CheckpointLeaves returns a checkpoint's leaves; see
// service.CheckpointStore.
func (s *Store) CheckpointLeaves(ctx context.Context, number int64) ([]checkpoint.Leaf, error) {
	rows, err := s.pool.Query(ctx, `SELECT agent_id, seq, hash, erased_hash FROM checkpoint_leaves WHERE number = $1 ORDER BY position`, number)
	if err != nil {
		return nil, fmt.Errorf("postgres: read checkpoint leaves: %w", classify(err))
	}
	var (
		out          []checkpoint.Leaf
		l            checkpoint.Leaf
		hash, erased []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&l.AgentID, &l.Seq, &hash, &erased}, func() error {
		if len(hash) != ledger.HashSize || (erased != nil && len(erased) != ledger.HashSize) {
			return fmt.Errorf("leaf of agent %q has a hash of the wrong size", l.AgentID)
		}
		copy(l.Hash[:], hash)
		l.Erased = erased != nil
		l.ErasedHash = checkpoint.Hash{}
		copy(l.ErasedHash[:], erased)
		out = append(out, l)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read checkpoint leaves: %w", classify(err))
	}
	return out, nil
}

// RecordHashes returns the stored record hashes at the asked positions;
// see service.CheckpointStore.
func (s *Store) RecordHashes(ctx context.Context, want []checkpoint.Leaf) ([]checkpoint.Leaf, error) {
	agents := make([]string, len(want))
	seqs := make([]int64, len(want))
	for i, l := range want {
		agents[i], seqs[i] = l.AgentID, l.Seq
	}
	rows, err := s.pool.Query(ctx, `SELECT r.agent_id, r.seq, r.hash FROM unnest($1::text[], $2::bigint[]) AS w(agent_id, seq)
		JOIN ledger_records r ON r.agent_id = w.agent_id AND r.seq = w.seq ORDER BY r.agent_id COLLATE "C"`, agents, seqs)
	if err != nil {
		return nil, fmt.Errorf("postgres: read record hashes: %w", classify(err))
	}
	out, err := collectLeaves(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: read record hashes: %w", classify(err))
	}
	return out, nil
}

// Chain returns one agent's chain; see service.CheckpointStore.
func (s *Store) Chain(ctx context.Context, agentID string) ([]ledger.ChainRow, error) {
	var out []ledger.ChainRow
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// Both sides of the full join filtered first, so that one agent's
		// chain is read through the primary keys.
		q := strings.Replace(chainSelect, "FROM agents a FULL JOIN "+liveRecords+" r",
			"FROM (SELECT * FROM agents WHERE id = $1) a FULL JOIN (SELECT * FROM ledger_records r WHERE r.agent_id = $1 AND "+liveRecord+") r", 1)
		for r, err := range chainRows(ctx, tx, q+` ORDER BY r.seq`, agentID) {
			if err != nil {
				return err
			}
			c := *r
			c.HeadHash, c.StoredHash = append([]byte(nil), r.HeadHash...), append([]byte(nil), r.StoredHash...)
			out = append(out, c)
		}
		as, err := anchors(ctx, tx, ` WHERE agent_id = $1`, agentID)
		if err != nil {
			return err
		}
		ss, err := summaries(ctx, tx, ` WHERE agent_id = $1`, agentID)
		if err != nil {
			return err
		}
		ledger.AttachPruned(out, as[agentID], ss[agentID])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read chain: %w", classify(err))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: agent %q", errkind.ErrNotFound, agentID)
	}
	return out, nil
}
