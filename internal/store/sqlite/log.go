package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// execer is a transaction's ExecContext and QueryRowContext.
type execer interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// nextLogIndex is the index the next leaf is appended at. The write
// transaction (BEGIN IMMEDIATE on the one writer connection) is the only
// writer, so the leaves a transaction appends follow the last committed
// one without a gap.
func nextLogIndex(ctx context.Context, tx execer) (int64, error) {
	var next int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(idx) + 1, 0) FROM log_leaves`).Scan(&next); err != nil {
		return 0, dbErr("read log size", err)
	}
	return next, nil
}

// appendLeaf appends one leaf at idx (which nextLogIndex gave).
func appendLeaf(ctx context.Context, tx execer, idx int64, hash ledger.Hash, seq int64) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO log_leaves (idx, hash, seq) VALUES (?, ?, ?)`, idx, hash[:], seq); err != nil {
		return dbErr("append log leaf", err)
	}
	return nil
}

// LogSize implements service.LogStore.
func (s *Store) LogSize(ctx context.Context) (int64, error) {
	return nextLogIndex(ctx, s.r)
}

// LogLeaves implements service.LogStore.
func (s *Store) LogLeaves(ctx context.Context, from, to int64) ([]ledger.LogLeaf, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT idx, hash, seq FROM log_leaves WHERE idx >= ? AND idx < ? ORDER BY idx`, from, to)
	if err != nil {
		return nil, dbErr("read log leaves", err)
	}
	defer rows.Close()
	out := make([]ledger.LogLeaf, 0, max(to-from, 0))
	for rows.Next() {
		var idx int64
		var hash []byte
		var l ledger.LogLeaf
		if err := rows.Scan(&idx, &hash, &l.Seq); err != nil {
			return nil, dbErr("read log leaves", err)
		}
		if idx != from+int64(len(out)) || len(hash) != ledger.HashSize {
			return nil, fmt.Errorf("sqlite: log leaf %d is missing or malformed", from+int64(len(out)))
		}
		copy(l.Hash[:], hash)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("read log leaves", err)
	}
	if int64(len(out)) != to-from {
		return nil, fmt.Errorf("%w: the log holds %d of leaves %d to %d", errkind.ErrNotFound, len(out), from, to)
	}
	return out, nil
}

// LogSubtrees implements service.LogStore.
func (s *Store) LogSubtrees(ctx context.Context, level int, from, to int64) ([][]byte, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT hash FROM log_subtrees WHERE level = ? AND idx >= ? AND idx < ? ORDER BY idx`, level, from, to)
	if err != nil {
		return nil, dbErr("read log subtrees", err)
	}
	defer rows.Close()
	out := make([][]byte, 0, max(to-from, 0))
	for rows.Next() {
		var h []byte
		if err := rows.Scan(&h); err != nil {
			return nil, dbErr("read log subtrees", err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr("read log subtrees", err)
	}
	if int64(len(out)) != to-from {
		return nil, fmt.Errorf("%w: the log holds %d of the level-%d subtrees %d to %d", errkind.ErrNotFound, len(out), level, from, to)
	}
	return out, nil
}

// LogSubtreeCount implements service.LogStore.
func (s *Store) LogSubtreeCount(ctx context.Context, level int) (int64, error) {
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(idx) + 1, 0) FROM log_subtrees WHERE level = ?`, level).Scan(&n); err != nil {
		return 0, dbErr("count log subtrees", err)
	}
	return n, nil
}

// AddLogSubtrees implements service.LogStore.
func (s *Store) AddLogSubtrees(ctx context.Context, level int, from int64, hashes [][]byte) error {
	return s.inWriteTx(ctx, "store log subtrees", func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO log_subtrees (level, idx, hash) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`)
		if err != nil {
			return err
		}
		defer st.Close()
		for i, h := range hashes {
			if _, err := st.ExecContext(ctx, level, from+int64(i), h); err != nil {
				return err
			}
		}
		return nil
	})
}

// inWriteTx runs f in a write transaction and commits it.
func (s *Store) inWriteTx(ctx context.Context, op string, f func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return dbErr(op, err)
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		if errkind.Of(err) != errkind.Unknown {
			return err
		}
		return dbErr(op, err)
	}
	return dbErr(op, tx.Commit())
}

// AddLogCheckpoint implements service.LogStore.
func (s *Store) AddLogCheckpoint(ctx context.Context, c ledger.LogCheckpoint) error {
	return s.inWriteTx(ctx, "store log checkpoint", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO log_checkpoints (size, created_at, root, note) VALUES (?, ?, ?, ?) ON CONFLICT (size) DO NOTHING`,
			c.Size, micros(c.CreatedAt), c.Root[:], string(c.Note))
		return err
	})
}

// LogCheckpoint implements service.LogStore.
func (s *Store) LogCheckpoint(ctx context.Context, size int64) (ledger.LogCheckpoint, error) {
	var c ledger.LogCheckpoint
	var at int64
	var root []byte
	var note string
	err := s.r.QueryRowContext(ctx, `SELECT size, created_at, root, note FROM log_checkpoints
	  WHERE size = CASE WHEN ?1 < 0 THEN (SELECT MAX(size) FROM log_checkpoints) ELSE ?1 END`, size).Scan(&c.Size, &at, &root, &note)
	if errors.Is(err, sql.ErrNoRows) {
		if size < 0 {
			return c, fmt.Errorf("%w: no log checkpoint has been signed yet", errkind.ErrNotFound)
		}
		return c, fmt.Errorf("%w: no log checkpoint of size %d", errkind.ErrNotFound, size)
	}
	if err != nil {
		return c, dbErr("read log checkpoint", err)
	}
	if len(root) != ledger.HashSize {
		return c, fmt.Errorf("sqlite: log checkpoint %d has a %d-byte root", c.Size, len(root))
	}
	copy(c.Root[:], root)
	c.CreatedAt, c.Note = fromMicros(at), []byte(note)
	return c, nil
}

// AddCosignature implements service.LogStore.
func (s *Store) AddCosignature(ctx context.Context, size int64, c ledger.Cosignature) error {
	return s.inWriteTx(ctx, "store cosignature", func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM log_checkpoints WHERE size = ?`, size).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: no log checkpoint of size %d", errkind.ErrNotFound, size)
		} else if err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO checkpoint_cosignatures (size, key_name, signature, created_at) VALUES (?, ?, ?, ?)
		  ON CONFLICT (size, key_name) DO UPDATE SET signature = excluded.signature, created_at = excluded.created_at`,
			size, c.KeyName, c.Line, micros(c.At))
		return err
	})
}

// LastCosigned implements service.LogStore.
func (s *Store) LastCosigned(ctx context.Context, keyName string) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(size), 0) FROM checkpoint_cosignatures WHERE key_name = ?`, keyName).Scan(&n)
	return n, dbErr("read cosignatures", err)
}

// Cosignatures implements service.LogStore.
func (s *Store) Cosignatures(ctx context.Context, size int64) ([]ledger.Cosignature, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT key_name, signature, created_at FROM checkpoint_cosignatures WHERE size = ? ORDER BY key_name`, size)
	if err != nil {
		return nil, dbErr("read cosignatures", err)
	}
	defer rows.Close()
	var out []ledger.Cosignature
	for rows.Next() {
		var c ledger.Cosignature
		var at int64
		if err := rows.Scan(&c.KeyName, &c.Line, &at); err != nil {
			return nil, dbErr("read cosignatures", err)
		}
		c.At = fromMicros(at)
		out = append(out, c)
	}
	return out, dbErr("read cosignatures", rows.Err())
}

// LoggedRecords implements service.LogStore.
func (s *Store) LoggedRecords(ctx context.Context, typ ledger.Type, eventID string) ([]ledger.LoggedRecord, error) {
	return s.loggedRecords(ctx, `WHERE event_type = ? AND event_id = ? ORDER BY agent_id, seq`, string(typ), eventID)
}

// LoggedRecord implements service.LogStore.
func (s *Store) LoggedRecord(ctx context.Context, agentID string, seq int64) (ledger.LoggedRecord, error) {
	rs, err := s.loggedRecords(ctx, `WHERE agent_id = ? AND seq = ?`, agentID, seq)
	if err != nil {
		return ledger.LoggedRecord{}, err
	}
	if len(rs) == 0 {
		return ledger.LoggedRecord{}, fmt.Errorf("%w: agent %q has no record %d", errkind.ErrNotFound, agentID, seq)
	}
	return rs[0], nil
}

func (s *Store) loggedRecords(ctx context.Context, where string, args ...any) ([]ledger.LoggedRecord, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT agent_id, seq, event_type, event_id, hash, COALESCE(log_index, -1) FROM ledger_records `+where, args...)
	if err != nil {
		return nil, dbErr("read logged records", err)
	}
	defer rows.Close()
	var out []ledger.LoggedRecord
	for rows.Next() {
		var r ledger.LoggedRecord
		var typ string
		var hash []byte
		if err := rows.Scan(&r.AgentID, &r.Seq, &typ, &r.EventID, &hash, &r.Index); err != nil {
			return nil, dbErr("read logged records", err)
		}
		r.Type = ledger.Type(typ)
		copy(r.Hash[:], hash)
		out = append(out, r)
	}
	return out, dbErr("read logged records", rows.Err())
}

// UnloggedRecords implements service.LogStore.
func (s *Store) UnloggedRecords(ctx context.Context) (int64, error) {
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM ledger_records WHERE log_index IS NULL`).Scan(&n); err != nil {
		return 0, dbErr("count unlogged records", err)
	}
	return n, nil
}

// BackfillLog implements service.LogStore: it appends up to batch records
// without a log index, first in chain order (agent id, then seq), in one
// transaction.
func (s *Store) BackfillLog(ctx context.Context, batch int) (int64, error) {
	var n int64
	err := s.inWriteTx(ctx, "backfill the log", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT rowid, hash, seq FROM ledger_records INDEXED BY ledger_records_unlogged
		  WHERE log_index IS NULL ORDER BY agent_id, seq LIMIT ?`, batch)
		if err != nil {
			return err
		}
		type rec struct {
			rowid, seq int64
			hash       ledger.Hash
		}
		var recs []rec
		for rows.Next() {
			var r rec
			var h []byte
			if err := rows.Scan(&r.rowid, &h, &r.seq); err != nil {
				rows.Close()
				return err
			}
			copy(r.hash[:], h)
			recs = append(recs, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		next, err := nextLogIndex(ctx, tx)
		if err != nil {
			return err
		}
		for i, r := range recs {
			idx := next + int64(i)
			if _, err := tx.ExecContext(ctx, `UPDATE ledger_records SET log_index = ? WHERE rowid = ?`, idx, r.rowid); err != nil {
				return err
			}
			if err := appendLeaf(ctx, tx, idx, r.hash, r.seq); err != nil {
				return err
			}
		}
		n = int64(len(recs))
		return nil
	})
	return n, err
}
