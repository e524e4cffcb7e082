package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Heads implements service.CheckpointStore.
func (s *Store) Heads(ctx context.Context) ([]checkpoint.Leaf, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, head_seq, head_hash FROM agents ORDER BY id`)
	if err != nil {
		return nil, dbErr("read heads", err)
	}
	return scanLeaves(rows, "read heads")
}

func scanLeaves(rows *sql.Rows, op string) ([]checkpoint.Leaf, error) {
	defer rows.Close()
	var out []checkpoint.Leaf
	for rows.Next() {
		var l checkpoint.Leaf
		var hash []byte
		if err := rows.Scan(&l.AgentID, &l.Seq, &hash); err != nil {
			return nil, dbErr(op, err)
		}
		if len(hash) != ledger.HashSize {
			return nil, fmt.Errorf("sqlite: %s: agent %q has a %d-byte hash", op, l.AgentID, len(hash))
		}
		copy(l.Hash[:], hash)
		out = append(out, l)
	}
	return out, dbErr(op, rows.Err())
}

// AddCheckpoint implements service.CheckpointStore.
func (s *Store) AddCheckpoint(ctx context.Context, c checkpoint.Checkpoint, doc []byte, leaves []checkpoint.Leaf) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return dbErr("begin checkpoint", err)
	}
	defer tx.Rollback()
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(number), 0) FROM checkpoints`).Scan(&last); err != nil {
		return dbErr("read checkpoints", err)
	}
	if c.Number != last+1 {
		return fmt.Errorf("%w: checkpoint %d does not follow the latest, %d", errkind.ErrConflict, c.Number, last)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO checkpoints (number, created_at, agents, root, document) VALUES (?, ?, ?, ?, ?)`,
		c.Number, micros(c.Time), c.Agents, c.Root[:], string(doc)); err != nil {
		return dbErr("store checkpoint", err)
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO checkpoint_leaves (number, position, agent_id, seq, hash) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return dbErr("store checkpoint", err)
	}
	defer st.Close()
	for i, l := range leaves {
		if _, err := st.ExecContext(ctx, c.Number, i, l.AgentID, l.Seq, l.Hash[:]); err != nil {
			return dbErr("store checkpoint", err)
		}
	}
	// An agent erased since the heads were read must not come back.
	var gone bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM checkpoint_leaves l WHERE l.number = ?
	    AND NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = l.agent_id))`, c.Number).Scan(&gone); err != nil {
		return dbErr("store checkpoint", err)
	}
	if gone {
		return fmt.Errorf("%w: a leaf names an agent that is no longer in the ledger (erased since the heads were read); make the checkpoint again", errkind.ErrConflict)
	}
	return dbErr("commit checkpoint", tx.Commit())
}

// Checkpoint implements service.CheckpointStore.
func (s *Store) Checkpoint(ctx context.Context, number int64) ([]byte, error) {
	var doc string
	err := s.r.QueryRowContext(ctx, `SELECT document FROM checkpoints WHERE number = CASE WHEN ?1 = 0 THEN (SELECT MAX(number) FROM checkpoints) ELSE ?1 END`,
		number).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		if number == 0 {
			return nil, fmt.Errorf("%w: no checkpoint has been made yet", errkind.ErrNotFound)
		}
		return nil, fmt.Errorf("%w: no checkpoint %d", errkind.ErrNotFound, number)
	}
	if err != nil {
		return nil, dbErr("read checkpoint", err)
	}
	return []byte(doc), nil
}

// CheckpointLeaves implements service.CheckpointStore.
func (s *Store) CheckpointLeaves(ctx context.Context, number int64) ([]checkpoint.Leaf, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT agent_id, seq, hash, erased_hash FROM checkpoint_leaves WHERE number = ? ORDER BY position`, number)
	if err != nil {
		return nil, dbErr("read checkpoint leaves", err)
	}
	defer rows.Close()
	var out []checkpoint.Leaf
	for rows.Next() {
		var l checkpoint.Leaf
		var hash, erased []byte
		if err := rows.Scan(&l.AgentID, &l.Seq, &hash, &erased); err != nil {
			return nil, dbErr("read checkpoint leaves", err)
		}
		if len(hash) != ledger.HashSize || (erased != nil && len(erased) != ledger.HashSize) {
			return nil, fmt.Errorf("sqlite: read checkpoint leaves: leaf of agent %q has a hash of the wrong size", l.AgentID)
		}
		copy(l.Hash[:], hash)
		l.Erased = erased != nil
		copy(l.ErasedHash[:], erased)
		out = append(out, l)
	}
	return out, dbErr("read checkpoint leaves", rows.Err())
}

// RecordHashes implements service.CheckpointStore.
func (s *Store) RecordHashes(ctx context.Context, want []checkpoint.Leaf) ([]checkpoint.Leaf, error) {
	type pos struct {
		A string `json:"a"`
		S int64  `json:"s"`
	}
	list := make([]pos, len(want))
	for i, l := range want {
		list[i] = pos{l.AgentID, l.Seq}
	}
	arg, err := json.Marshal(list)
	if err != nil {
		return nil, fmt.Errorf("sqlite: record hashes: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT r.agent_id, r.seq, r.hash FROM json_each(?) j
	  JOIN ledger_records r ON r.agent_id = json_extract(j.value, '$.a') AND r.seq = json_extract(j.value, '$.s')
	  ORDER BY r.agent_id`, string(arg))
	if err != nil {
		return nil, dbErr("read record hashes", err)
	}
	return scanLeaves(rows, "read record hashes")
}

// Chain implements service.CheckpointStore.
func (s *Store) Chain(ctx context.Context, agentID string) ([]ledger.ChainRow, error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, dbErr("begin chain", err)
	}
	defer tx.Rollback()
	var out []ledger.ChainRow
	for r, err := range chainRows(ctx, tx, []string{chainSelect + ` WHERE r.agent_id = ?1 ORDER BY r.seq`, emptyQuery + ` AND a.id = ?1`}, agentID) {
		if err != nil {
			return nil, err
		}
		c := *r
		c.HeadHash, c.StoredHash = append([]byte(nil), r.HeadHash...), append([]byte(nil), r.StoredHash...)
		out = append(out, c)
	}
	as, err := anchors(ctx, tx, ` WHERE agent_id = ?1`, agentID)
	if err != nil {
		return nil, dbErr("read chain anchor", err)
	}
	ss, err := summaries(ctx, tx, ` WHERE agent_id = ?1`, agentID)
	if err != nil {
		return nil, dbErr("read chain summaries", err)
	}
	ledger.AttachPruned(out, as[agentID], ss[agentID])
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: agent %q", errkind.ErrNotFound, agentID)
	}
	return out, nil
}
