package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// CredentialIndex implements service.CredentialStore: the identity column
// allocates, and a second process allocating for the same passport at the
// same time finds the first one's row through ON CONFLICT.
func (s *Store) CredentialIndex(ctx context.Context, passportID string) (int64, error) {
	var idx int64
	err := s.pool.QueryRow(ctx, `WITH ins AS (
	    INSERT INTO credential_status (passport_id) SELECT id FROM passports WHERE id = $1
	    ON CONFLICT (passport_id) DO NOTHING RETURNING idx)
	  SELECT idx FROM ins UNION ALL SELECT idx FROM credential_status WHERE passport_id = $1 LIMIT 1`, passportID).Scan(&idx)
	if errors.Is(err, pgx.ErrNoRows) {
		// Another transaction may have inserted it and not committed
		// when this one's snapshot was taken: read again.
		err = s.pool.QueryRow(ctx, `SELECT idx FROM credential_status WHERE passport_id = $1`, passportID).Scan(&idx)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("%w: no passport with id %q was issued here", errkind.ErrNotFound, passportID)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: credential index: %w", classify(err))
	}
	return idx, nil
}

// RevokedCredentials implements service.CredentialStore.
func (s *Store) RevokedCredentials(ctx context.Context, from, to int64, revokedKeys []string) ([]int64, int64, error) {
	if revokedKeys == nil {
		revokedKeys = []string{}
	}
	rows, err := s.pool.Query(ctx, `SELECT c.idx FROM credential_status c JOIN passports p ON p.id = c.passport_id
	  WHERE c.idx >= $1 AND c.idx < $2 AND (p.revoked_at IS NOT NULL OR p.key_id = ANY($3)) ORDER BY c.idx`, from, to, revokedKeys)
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: revoked credentials: %w", classify(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: revoked credentials: %w", classify(err))
	}
	var highest int64
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(MAX(idx), 0) FROM credential_status`).Scan(&highest); err != nil {
		return nil, 0, fmt.Errorf("postgres: credential indexes: %w", classify(err))
	}
	return out, highest, nil
}
