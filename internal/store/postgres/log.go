package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// LogSize implements service.LogStore.
func (s *Store) LogSize(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT size FROM log_state`).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: read log size: %w", classify(err))
	}
	return n, nil
}

// LogLeaves implements service.LogStore.
func (s *Store) LogLeaves(ctx context.Context, from, to int64) ([]ledger.LogLeaf, error) {
	rows, err := s.pool.Query(ctx, `SELECT idx, hash, seq FROM log_leaves WHERE idx >= $1 AND idx < $2 ORDER BY idx`, from, to)
	if err != nil {
		return nil, fmt.Errorf("postgres: read log leaves: %w", classify(err))
	}
	out := make([]ledger.LogLeaf, 0, max(to-from, 0))
	var idx int64
	var hash []byte
	var l ledger.LogLeaf
	_, err = pgx.ForEachRow(rows, []any{&idx, &hash, &l.Seq}, func() error {
		if idx != from+int64(len(out)) || len(hash) != ledger.HashSize {
			return fmt.Errorf("log leaf %d is missing or malformed", from+int64(len(out)))
		}
		copy(l.Hash[:], hash)
		out = append(out, l)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read log leaves: %w", classify(err))
	}
	if int64(len(out)) != to-from {
		return nil, fmt.Errorf("%w: the log holds %d of leaves %d to %d", errkind.ErrNotFound, len(out), from, to)
	}
	return out, nil
}

// LogSubtrees implements service.LogStore.
func (s *Store) LogSubtrees(ctx context.Context, level int, from, to int64) ([][]byte, error) {
	rows, err := s.pool.Query(ctx, `SELECT hash FROM log_subtrees WHERE level = $1 AND idx >= $2 AND idx < $3 ORDER BY idx`, level, from, to)
	if err != nil {
		return nil, fmt.Errorf("postgres: read log subtrees: %w", classify(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("postgres: read log subtrees: %w", classify(err))
	}
	if int64(len(out)) != to-from {
		return nil, fmt.Errorf("%w: the log holds %d of the level-%d subtrees %d to %d", errkind.ErrNotFound, len(out), level, from, to)
	}
	return out, nil
}

// LogSubtreeCount implements service.LogStore.
func (s *Store) LogSubtreeCount(ctx context.Context, level int) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(max(idx) + 1, 0) FROM log_subtrees WHERE level = $1`, level).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: count log subtrees: %w", classify(err))
	}
	return n, nil
}

// AddLogSubtrees implements service.LogStore.
func (s *Store) AddLogSubtrees(ctx context.Context, level int, from int64, hashes [][]byte) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO log_subtrees (level, idx, hash)
		SELECT $1, $2 + u.ord - 1, u.hash FROM unnest($3::bytea[]) WITH ORDINALITY AS u(hash, ord) ON CONFLICT DO NOTHING`, level, from, hashes)
	if err != nil {
		return fmt.Errorf("postgres: store log subtrees: %w", classify(err))
	}
	return nil
}

// AddLogCheckpoint implements service.LogStore.
func (s *Store) AddLogCheckpoint(ctx context.Context, c ledger.LogCheckpoint) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO log_checkpoints (size, created_at, root, note) VALUES ($1, $2, $3, $4) ON CONFLICT (size) DO NOTHING`,
		c.Size, c.CreatedAt, c.Root[:], string(c.Note))
	if err != nil {
		return fmt.Errorf("postgres: store log checkpoint: %w", classify(err))
	}
	return nil
}

// LogCheckpoint implements service.LogStore.
func (s *Store) LogCheckpoint(ctx context.Context, size int64) (ledger.LogCheckpoint, error) {
	var c ledger.LogCheckpoint
	var root []byte
	var note string
	err := s.pool.QueryRow(ctx, `SELECT size, created_at, root, note FROM log_checkpoints
		WHERE size = CASE WHEN $1 < 0 THEN (SELECT max(size) FROM log_checkpoints) ELSE $1 END`, size).Scan(&c.Size, &c.CreatedAt, &root, &note)
	if errors.Is(err, pgx.ErrNoRows) {
		if size < 0 {
			return c, fmt.Errorf("%w: no log checkpoint has been signed yet", errkind.ErrNotFound)
		}
		return c, fmt.Errorf("%w: no log checkpoint of size %d", errkind.ErrNotFound, size)
	}
	if err != nil {
		return c, fmt.Errorf("postgres: read log checkpoint: %w", classify(err))
	}
	if len(root) != ledger.HashSize {
		return c, fmt.Errorf("postgres: log checkpoint %d has a %d-byte root", c.Size, len(root))
	}
	copy(c.Root[:], root)
	c.CreatedAt, c.Note = utc(c.CreatedAt), []byte(note)
	return c, nil
}

// AddCosignature implements service.LogStore.
func (s *Store) AddCosignature(ctx context.Context, size int64, c ledger.Cosignature) error {
	ct, err := s.pool.Exec(ctx, `INSERT INTO checkpoint_cosignatures (size, key_name, signature, created_at)
		SELECT size, $2, $3, $4 FROM log_checkpoints WHERE size = $1
		ON CONFLICT (size, key_name) DO UPDATE SET signature = excluded.signature, created_at = excluded.created_at`,
		size, c.KeyName, c.Line, c.At)
	if err != nil {
		return fmt.Errorf("postgres: store cosignature: %w", classify(err))
	}
	if ct.RowsAffected() == 0 {
		return fmt.Errorf("%w: no log checkpoint of size %d", errkind.ErrNotFound, size)
	}
	return nil
}

// LastCosigned implements service.LogStore.
func (s *Store) LastCosigned(ctx context.Context, keyName string) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(MAX(size), 0) FROM checkpoint_cosignatures WHERE key_name = $1`, keyName).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: read cosignatures: %w", classify(err))
	}
	return n, nil
}

// Cosignatures implements service.LogStore.
func (s *Store) Cosignatures(ctx context.Context, size int64) ([]ledger.Cosignature, error) {
	rows, err := s.pool.Query(ctx, `SELECT key_name, signature, created_at FROM checkpoint_cosignatures WHERE size = $1 ORDER BY key_name COLLATE "C"`, size)
	if err != nil {
		return nil, fmt.Errorf("postgres: read cosignatures: %w", classify(err))
	}
	var out []ledger.Cosignature
	var c ledger.Cosignature
	_, err = pgx.ForEachRow(rows, []any{&c.KeyName, &c.Line, &c.At}, func() error {
		c.At = utc(c.At)
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read cosignatures: %w", classify(err))
	}
	return out, nil
}

// LoggedRecords implements service.LogStore.
func (s *Store) LoggedRecords(ctx context.Context, typ ledger.Type, eventID string) ([]ledger.LoggedRecord, error) {
	return s.loggedRecords(ctx, `WHERE event_type = $1 AND event_id = $2 ORDER BY agent_id COLLATE "C", seq`, string(typ), eventID)
}

// LoggedRecord implements service.LogStore.
func (s *Store) LoggedRecord(ctx context.Context, agentID string, seq int64) (ledger.LoggedRecord, error) {
	rs, err := s.loggedRecords(ctx, `WHERE agent_id = $1 AND seq = $2`, agentID, seq)
	if err != nil {
		return ledger.LoggedRecord{}, err
	}
	if len(rs) == 0 {
		return ledger.LoggedRecord{}, fmt.Errorf("%w: agent %q has no record %d", errkind.ErrNotFound, agentID, seq)
	}
	return rs[0], nil
}

func (s *Store) loggedRecords(ctx context.Context, where string, args ...any) ([]ledger.LoggedRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT agent_id, seq, event_type, event_id, hash, COALESCE(log_index, -1) FROM ledger_records `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: read logged records: %w", classify(err))
	}
	var out []ledger.LoggedRecord
	var r ledger.LoggedRecord
	var typ string
	var hash []byte
	_, err = pgx.ForEachRow(rows, []any{&r.AgentID, &r.Seq, &typ, &r.EventID, &hash, &r.Index}, func() error {
		r.Type = ledger.Type(typ)
		copy(r.Hash[:], hash)
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read logged records: %w", classify(err))
	}
	return out, nil
}

// UnloggedRecords implements service.LogStore.
func (s *Store) UnloggedRecords(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM ledger_records WHERE log_index IS NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: count unlogged records: %w", classify(err))
	}
	return n, nil
}

// BackfillLog implements service.LogStore: it appends up to batch records
// without a log index, first in chain order (agent id in byte order, then
// seq), in one transaction. The records are locked before log_state, as
// every other appender locks what it writes before it.
func (s *Store) BackfillLog(ctx context.Context, batch int) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT agent_id, seq, hash FROM ledger_records WHERE log_index IS NULL
			ORDER BY agent_id COLLATE "C", seq LIMIT $1 FOR UPDATE`, batch)
		if err != nil {
			return err
		}
		var agents []string
		var seqs []int64
		var hashes [][]byte
		var a string
		var q int64
		var h []byte
		if _, err := pgx.ForEachRow(rows, []any{&a, &q, &h}, func() error {
			agents, seqs, hashes = append(agents, a), append(seqs, q), append(hashes, append([]byte(nil), h...))
			return nil
		}); err != nil {
			return err
		}
		if len(agents) == 0 {
			n = 0
			return nil
		}
		ct, err := tx.Exec(ctx, `WITH n AS (
				UPDATE log_state SET size = size + cardinality($1::text[]) RETURNING size - cardinality($1::text[]) AS first
			), u AS (
				SELECT w.agent_id, w.seq, w.hash, n.first + w.ord - 1 AS idx
				FROM n, unnest($1::text[], $2::bigint[], $3::bytea[]) WITH ORDINALITY AS w(agent_id, seq, hash, ord)
			), r AS (
				UPDATE ledger_records l SET log_index = u.idx FROM u WHERE l.agent_id = u.agent_id AND l.seq = u.seq AND l.log_index IS NULL
				RETURNING l.log_index
			)
			INSERT INTO log_leaves (idx, hash, seq) SELECT idx, hash, seq FROM u WHERE (SELECT count(*) FROM r) = cardinality($1::text[])`,
			agents, seqs, hashes)
		if err != nil {
			return err
		}
		if ct.RowsAffected() != int64(len(agents)) {
			return fmt.Errorf("backfill: %d of %d leaves appended", ct.RowsAffected(), len(agents))
		}
		n = int64(len(agents))
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: backfill the log: %w", err)
	}
	return n, nil
}
