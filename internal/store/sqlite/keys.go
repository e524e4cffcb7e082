package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
)

// Keys implements service.KeyStore.
func (s *Store) Keys(ctx context.Context) ([]keyring.Record, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, alg, environment, state, created_at, state_changed_at, active_from, active_until, public_key, sealed_key
	  FROM signing_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, dbErr("read keys", err)
	}
	defer rows.Close()
	var out []keyring.Record
	for rows.Next() {
		var r keyring.Record
		var state string
		var created, changed int64
		var from, until sql.NullInt64
		if err := rows.Scan(&r.ID, &r.Alg, &r.Environment, &state, &created, &changed, &from, &until, &r.Public, &r.Sealed); err != nil {
			return nil, dbErr("read keys", err)
		}
		r.State, r.CreatedAt, r.StateChangedAt = keyring.State(state), fromMicros(created), fromMicros(changed)
		r.ActiveFrom, r.ActiveUntil = nullMicros(from), nullMicros(until)
		out = append(out, r)
	}
	return out, dbErr("read keys", rows.Err())
}

// AddKey implements service.KeyStore.
func (s *Store) AddKey(ctx context.Context, r keyring.Record) error {
	if err := r.Validate(); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return dbErr("begin add key", err)
	}
	defer tx.Rollback()
	var used bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM signing_keys WHERE id = ?)`, r.ID).Scan(&used); err != nil {
		return dbErr("add key", err)
	}
	if used {
		return fmt.Errorf("%w: key id %q is already in use", errkind.ErrConflict, r.ID)
	}
	created := micros(r.CreatedAt)
	from, until := r.ActiveFrom, r.ActiveUntil
	if r.State == keyring.Active {
		// The active key's interval ends as the new one's starts (never
		// before its own start: two rotations may commit out of the order
		// of their clocks).
		if _, err := tx.ExecContext(ctx, `UPDATE signing_keys SET state = 'verify-only', state_changed_at = ?1, active_until = MAX(?1, COALESCE(active_from, ?1)) WHERE state = 'active'`, created); err != nil {
			return dbErr("demote the active key", err)
		}
		from = r.CreatedAt
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO signing_keys (id, alg, environment, state, created_at, state_changed_at, active_from, active_until, public_key, sealed_key)
	  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.ID, r.Alg, r.Environment, string(r.State), created, created, nullTime(from), nullTime(until), r.Public, r.Sealed); err != nil {
		return dbErr("add key", err)
	}
	return dbErr("commit add key", tx.Commit())
}

// SetKeyState implements service.KeyStore.
func (s *Store) SetKeyState(ctx context.Context, id string, to keyring.State, at time.Time) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return dbErr("begin key state", err)
	}
	defer tx.Rollback()
	var from string
	err = tx.QueryRowContext(ctx, `SELECT state FROM signing_keys WHERE id = ?`, id).Scan(&from)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: no key with id %q", errkind.ErrNotFound, id)
	}
	if err != nil {
		return dbErr("read key", err)
	}
	if err := keyring.CheckMove(keyring.State(from), to); err != nil {
		return err
	}
	if keyring.State(from) == to {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE signing_keys SET state = ?, state_changed_at = ? WHERE id = ?`, string(to), micros(at), id); err != nil {
		return dbErr("set key state", err)
	}
	return dbErr("commit key state", tx.Commit())
}
