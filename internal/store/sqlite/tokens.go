package sqlite

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// CreateToken implements service.TokenStore.
func (s *Store) CreateToken(ctx context.Context, t auth.Token) error {
	if err := ledger.CheckID("token id", t.ID); err != nil {
		return err
	}
	if err := ledger.CheckID("operator", t.Operator); err != nil {
		return err
	}
	if t.AgentID != "" {
		if err := ledger.CheckID("agent_id", t.AgentID); err != nil {
			return err
		}
	}
	role, err := auth.StoredRole(t)
	if err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return dbErr("begin create token", err)
	}
	defer tx.Rollback()
	var op, agent, have string
	var sum []byte
	err = tx.QueryRowContext(ctx, `SELECT operator_id, COALESCE(agent_id, ''), token_sha256, role FROM api_tokens WHERE id = ?`, t.ID).Scan(&op, &agent, &sum, &have)
	switch {
	case err == nil:
		if op == t.Operator && agent == t.AgentID && have == string(role) && subtle.ConstantTimeCompare(sum, t.SHA256[:]) == 1 {
			return nil
		}
		return fmt.Errorf("%w: token id %q is already in use", errkind.ErrConflict, t.ID)
	case !errors.Is(err, sql.ErrNoRows):
		return dbErr("read token", err)
	}
	var used bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM api_tokens WHERE token_sha256 = ?)`, t.SHA256[:]).Scan(&used); err != nil {
		return dbErr("read token", err)
	}
	if used {
		return fmt.Errorf("%w: this token is already registered under another id", errkind.ErrConflict)
	}
	created := micros(t.CreatedAt)
	if _, err := tx.ExecContext(ctx, `INSERT INTO operators (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, t.Operator, created); err != nil {
		return dbErr("register operator", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO api_tokens (id, operator_id, token_sha256, created_at, agent_id, role) VALUES (?, ?, ?, ?, ?, ?)`,
		t.ID, t.Operator, t.SHA256[:], created, nullString(t.AgentID), role); err != nil {
		return dbErr("create token", err)
	}
	return dbErr("commit create token", tx.Commit())
}

// Authenticate implements service.TokenStore. The lookup is by the token's hash, so
// the secret itself is never compared byte by byte.
func (s *Store) Authenticate(ctx context.Context, sum [32]byte) (auth.Token, error) {
	var t auth.Token
	var created int64
	var revoked sql.NullInt64
	err := s.rp.QueryRowContext(ctx, `SELECT id, operator_id, COALESCE(agent_id, ''), created_at, revoked_at, role FROM api_tokens WHERE token_sha256 = ?`,
		sum[:]).Scan(&t.ID, &t.Operator, &t.AgentID, &created, &revoked, &t.Role)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && revoked.Valid) {
		return auth.Token{}, fmt.Errorf("%w: unknown or revoked token", errkind.ErrUnauthorized)
	}
	if err != nil {
		return auth.Token{}, dbErr("authenticate", err)
	}
	t.CreatedAt = fromMicros(created)
	if t.AgentID != "" {
		t.Role = ""
	}
	return t, nil
}

// RevokeToken implements service.TokenStore.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) error {
	res, err := s.w.ExecContext(ctx, `UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, micros(at), id)
	if err != nil {
		return dbErr("revoke token", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: token %q", errkind.ErrNotFound, id)
	}
	return nil
}

// ListTokens implements service.TokenStore.
func (s *Store) ListTokens(ctx context.Context) ([]auth.Token, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, operator_id, COALESCE(agent_id, ''), created_at, revoked_at, role FROM api_tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, dbErr("list tokens", err)
	}
	defer rows.Close()
	var out []auth.Token
	for rows.Next() {
		var t auth.Token
		var created int64
		var revoked sql.NullInt64
		if err := rows.Scan(&t.ID, &t.Operator, &t.AgentID, &created, &revoked, &t.Role); err != nil {
			return nil, dbErr("list tokens", err)
		}
		if t.AgentID != "" {
			t.Role = ""
		}
		t.CreatedAt, t.RevokedAt = fromMicros(created), nullMicros(revoked)
		out = append(out, t)
	}
	return out, dbErr("list tokens", rows.Err())
}
