package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Keys returns every signing key; see service.KeyStore.
func (s *Store) Keys(ctx context.Context) ([]keyring.Record, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, alg, environment, state, created_at, state_changed_at, active_from, active_until, public_key, sealed_key
		FROM signing_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: read keys: %w", classify(err))
	}
	var (
		r           keyring.Record
		state       string
		from, until *time.Time
		out         []keyring.Record
	)
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &r.Alg, &r.Environment, &state, &r.CreatedAt, &r.StateChangedAt, &from, &until, &r.Public, &r.Sealed}, func() error {
		c := r
		c.State, c.CreatedAt, c.StateChangedAt = keyring.State(state), utc(r.CreatedAt), utc(r.StateChangedAt)
		c.ActiveFrom, c.ActiveUntil = timeOrZero(from), timeOrZero(until)
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read keys: %w", classify(err))
	}
	return out, nil
}

// AddKey stores a new key, demoting the active one when the new key is
// active; see service.KeyStore.
func (s *Store) AddKey(ctx context.Context, r keyring.Record) error {
	if err := r.Validate(); err != nil {
		return err
	}
	created := r.CreatedAt.UTC().Truncate(ledger.Resolution)
	from, until := nullable(r.ActiveFrom.UTC().Truncate(ledger.Resolution)), nullable(r.ActiveUntil.UTC().Truncate(ledger.Resolution))
	if r.State == keyring.Active {
		from = &created
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// Rotations are rare: two at once serialise on the table, and the
		// second demotes the first's new key (a row lock would not show the
		// second the key the first inserted).
		if _, err := tx.Exec(ctx, `LOCK TABLE signing_keys IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		if r.State == keyring.Active {
			// The active key's interval ends as the new one's starts (never
			// before its own start: two rotations may commit out of the
			// order of their clocks).
			if _, err := tx.Exec(ctx, `UPDATE signing_keys SET state = 'verify-only', state_changed_at = $1, active_until = GREATEST($1, active_from) WHERE state = 'active'`, created); err != nil {
				return err
			}
		}
		ct, err := tx.Exec(ctx, `INSERT INTO signing_keys (id, alg, environment, state, created_at, state_changed_at, active_from, active_until, public_key, sealed_key)
			VALUES ($1, $2, $3, $4, $5, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`,
			r.ID, r.Alg, r.Environment, string(r.State), created, from, until, r.Public, r.Sealed)
		if err != nil {
			return err
		}
		if ct.RowsAffected() != 1 {
			return fmt.Errorf("%w: key id %q is already in use", errkind.ErrConflict, r.ID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: add key: %w", err)
	}
	return nil
}

// SetKeyState moves a key by hand; see service.KeyStore.
func (s *Store) SetKeyState(ctx context.Context, id string, to keyring.State, at time.Time) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var from string
		err := tx.QueryRow(ctx, `SELECT state FROM signing_keys WHERE id = $1 FOR UPDATE`, id).Scan(&from)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: no key with id %q", errkind.ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		if err := keyring.CheckMove(keyring.State(from), to); err != nil {
			return err
		}
		if keyring.State(from) == to {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE signing_keys SET state = $1, state_changed_at = $2 WHERE id = $3`,
			string(to), at.UTC().Truncate(ledger.Resolution), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: set key state: %w", err)
	}
	return nil
}
