package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// CredentialIndex implements service.CredentialStore: an INTEGER PRIMARY
// KEY is the next rowid, and the one writer allocates in order.
func (s *Store) CredentialIndex(ctx context.Context, passportID string) (int64, error) {
	var idx int64
	err := s.r.QueryRowContext(ctx, `SELECT idx FROM credential_status WHERE passport_id = ?`, passportID).Scan(&idx)
	if err == nil {
		return idx, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, dbErr("read credential index", err)
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO credential_status (passport_id) SELECT id FROM passports WHERE id = ?
	  ON CONFLICT (passport_id) DO NOTHING`, passportID); err != nil {
		return 0, dbErr("allocate credential index", err)
	}
	err = s.w.QueryRowContext(ctx, `SELECT idx FROM credential_status WHERE passport_id = ?`, passportID).Scan(&idx)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: no passport with id %q was issued here", errkind.ErrNotFound, passportID)
	}
	return idx, dbErr("read credential index", err)
}

// RevokedCredentials implements service.CredentialStore.
func (s *Store) RevokedCredentials(ctx context.Context, from, to int64, revokedKeys []string) ([]int64, int64, error) {
	args := []any{from, to}
	keys := "''"
	if len(revokedKeys) > 0 {
		keys = strings.TrimSuffix(strings.Repeat("?,", len(revokedKeys)), ",")
		for _, k := range revokedKeys {
			args = append(args, k)
		}
	}
	rows, err := s.r.QueryContext(ctx, `SELECT c.idx FROM credential_status c JOIN passports p ON p.id = c.passport_id
	  WHERE c.idx >= ? AND c.idx < ? AND (p.revoked_at IS NOT NULL OR p.key_id IN (`+keys+`)) ORDER BY c.idx`, args...)
	if err != nil {
		return nil, 0, dbErr("read revoked credentials", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var idx int64
		if err := rows.Scan(&idx); err != nil {
			return nil, 0, dbErr("read revoked credentials", err)
		}
		out = append(out, idx)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, dbErr("read revoked credentials", err)
	}
	var highest int64
	err = s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(idx), 0) FROM credential_status`).Scan(&highest)
	return out, highest, dbErr("read credential indexes", err)
}
