package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/store"
)

// AppendAction implements service.ActionStore.
func (s *Store) AppendAction(ctx context.Context, a auth.Action) (int64, error) {
	if err := store.CheckAction(a); err != nil {
		return 0, err
	}
	var seq int64
	err := s.w.QueryRowContext(ctx, `INSERT INTO operator_actions
		(at, operator_id, token_id, role, via, client, action, agent_id, target, detail, outcome, code)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
		micros(a.At), a.Operator, nullString(a.TokenID), nullString(string(a.Role)), string(a.Via), nullString(a.Client),
		string(a.Kind), nullString(a.AgentID), nullString(a.Target), a.Detail, string(a.Outcome), nullString(a.Code)).Scan(&seq)
	return seq, dbErr("append action", err)
}

// Actions implements service.ActionStore.
func (s *Store) Actions(ctx context.Context, q auth.ActionQuery) ([]auth.Action, error) {
	var where []string
	var args []any
	if q.Before > 0 {
		where, args = append(where, "seq < ?"), append(args, q.Before)
	}
	if q.Operator != "" {
		where, args = append(where, "operator_id = ?"), append(args, q.Operator)
	}
	if q.Kind != "" {
		where, args = append(where, "action = ?"), append(args, string(q.Kind))
	}
	if q.AgentID != "" {
		where, args = append(where, "agent_id = ?"), append(args, q.AgentID)
	}
	sqlText := `SELECT seq, at, operator_id, COALESCE(token_id, ''), COALESCE(role, ''), via, COALESCE(client, ''), action,
		COALESCE(agent_id, ''), COALESCE(target, ''), detail, outcome, COALESCE(code, '') FROM operator_actions`
	if len(where) > 0 {
		sqlText += " WHERE " + strings.Join(where, " AND ")
	}
	sqlText += " ORDER BY seq DESC LIMIT ?"
	args = append(args, store.ActionsLimit(q.Limit))
	rows, err := s.r.QueryContext(ctx, sqlText, args...)
	if err != nil {
		return nil, dbErr("read actions", err)
	}
	defer rows.Close()
	var out []auth.Action
	for rows.Next() {
		var a auth.Action
		var at int64
		if err := rows.Scan(&a.Seq, &at, &a.Operator, &a.TokenID, &a.Role, &a.Via, &a.Client, &a.Kind,
			&a.AgentID, &a.Target, &a.Detail, &a.Outcome, &a.Code); err != nil {
			return nil, dbErr("read actions", err)
		}
		a.At = fromMicros(at)
		out = append(out, a)
	}
	return out, dbErr("read actions", rows.Err())
}

// CreateSession implements service.SessionStore.
func (s *Store) CreateSession(ctx context.Context, sess auth.Session, forgetBefore time.Time) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return dbErr("begin create session", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM console_sessions WHERE seen_at < ?`, micros(forgetBefore)); err != nil {
		return dbErr("forget sessions", err)
	}
	var known bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM api_tokens WHERE id = ?)`, sess.TokenID).Scan(&known); err != nil {
		return dbErr("create session", err)
	}
	if !known {
		return fmt.Errorf("%w: token %q", errkind.ErrNotFound, sess.TokenID)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO console_sessions (id_sha256, token_id, created_at, seen_at, client, browser)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		sess.IDSum[:], sess.TokenID, micros(sess.CreatedAt), micros(sess.SeenAt), sess.Client, sess.Browser)
	if err != nil {
		return dbErr("create session", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: session id in use", errkind.ErrConflict)
	}
	return dbErr("commit create session", tx.Commit())
}

const sessionColumns = `s.id_sha256, s.token_id, t.operator_id, t.role, s.created_at, s.seen_at, s.client, s.browser,
	s.revoked_at, COALESCE(s.revoked_by, ''), t.revoked_at IS NOT NULL`

func scanSession(sc interface{ Scan(...any) error }) (auth.Session, error) {
	var sess auth.Session
	var sum []byte
	var created, seen int64
	var revoked sql.NullInt64
	if err := sc.Scan(&sum, &sess.TokenID, &sess.Operator, &sess.Role, &created, &seen, &sess.Client, &sess.Browser,
		&revoked, &sess.RevokedBy, &sess.TokenRevoked); err != nil {
		return auth.Session{}, err
	}
	copy(sess.IDSum[:], sum)
	sess.CreatedAt, sess.SeenAt, sess.RevokedAt = fromMicros(created), fromMicros(seen), nullMicros(revoked)
	return sess, nil
}

// Session implements service.SessionStore.
func (s *Store) Session(ctx context.Context, sum [sha256.Size]byte) (auth.Session, error) {
	sess, err := scanSession(s.rp.QueryRowContext(ctx, `SELECT `+sessionColumns+`
		FROM console_sessions s JOIN api_tokens t ON t.id = s.token_id WHERE s.id_sha256 = ?`, sum[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return auth.Session{}, fmt.Errorf("%w: no such session", errkind.ErrNotFound)
	}
	return sess, dbErr("read session", err)
}

// TouchSession implements service.SessionStore.
func (s *Store) TouchSession(ctx context.Context, sum [sha256.Size]byte, at time.Time) error {
	_, err := s.w.ExecContext(ctx, `UPDATE console_sessions SET seen_at = ? WHERE id_sha256 = ? AND seen_at < ?`, micros(at), sum[:], micros(at))
	return dbErr("touch session", err)
}

// RevokeSession implements service.SessionStore.
func (s *Store) RevokeSession(ctx context.Context, sum [sha256.Size]byte, at time.Time, by string) error {
	res, err := s.w.ExecContext(ctx, `UPDATE console_sessions SET revoked_at = COALESCE(revoked_at, ?), revoked_by = COALESCE(revoked_by, ?)
		WHERE id_sha256 = ?`, micros(at), by, sum[:])
	if err != nil {
		return dbErr("revoke session", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: no such session", errkind.ErrNotFound)
	}
	return nil
}

// Sessions implements service.SessionStore.
func (s *Store) Sessions(ctx context.Context, seenSince, createdSince time.Time) ([]auth.Session, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+sessionColumns+`
		FROM console_sessions s JOIN api_tokens t ON t.id = s.token_id
		WHERE s.revoked_at IS NULL AND t.revoked_at IS NULL AND s.seen_at >= ? AND s.created_at >= ?
		ORDER BY s.seen_at DESC, s.id_sha256`, micros(seenSince), micros(createdSince))
	if err != nil {
		return nil, dbErr("list sessions", err)
	}
	defer rows.Close()
	var out []auth.Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, dbErr("list sessions", err)
		}
		out = append(out, sess)
	}
	return out, dbErr("list sessions", rows.Err())
}
