package postgres

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// AppendAction implements service.ActionStore.
func (s *Store) AppendAction(ctx context.Context, a auth.Action) (int64, error) {
	if err := store.CheckAction(a); err != nil {
		return 0, fmt.Errorf("postgres: append action: %w", err)
	}
	var seq int64
	err := s.pool.QueryRow(ctx, `INSERT INTO operator_actions
		(at, operator_id, token_id, role, via, client, action, agent_id, target, detail, outcome, code)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING seq`,
		a.At.UTC().Truncate(ledger.Resolution), a.Operator, nullText(a.TokenID), nullText(string(a.Role)), string(a.Via),
		nullText(a.Client), string(a.Kind), nullText(a.AgentID), nullText(a.Target), a.Detail, string(a.Outcome),
		nullText(a.Code)).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("postgres: append action: %w", classify(err))
	}
	return seq, nil
}

// Actions implements service.ActionStore.
func (s *Store) Actions(ctx context.Context, q auth.ActionQuery) ([]auth.Action, error) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, cond+" $"+strconv.Itoa(len(args)))
	}
	if q.Before > 0 {
		add("seq <", q.Before)
	}
	if q.Operator != "" {
		add("operator_id =", q.Operator)
	}
	if q.Kind != "" {
		add("action =", string(q.Kind))
	}
	if q.AgentID != "" {
		add("agent_id =", q.AgentID)
	}
	sqlText := `SELECT seq, at, operator_id, coalesce(token_id, ''), coalesce(role, ''), via, coalesce(client, ''), action,
		coalesce(agent_id, ''), coalesce(target, ''), detail, outcome, coalesce(code, '') FROM operator_actions`
	if len(where) > 0 {
		sqlText += " WHERE " + strings.Join(where, " AND ")
	}
	args = append(args, store.ActionsLimit(q.Limit))
	sqlText += " ORDER BY seq DESC LIMIT $" + strconv.Itoa(len(args))
	rows, err := s.pool.Query(ctx, sqlText, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: read actions: %w", classify(err))
	}
	var out []auth.Action
	var a auth.Action
	_, err = pgx.ForEachRow(rows, []any{&a.Seq, &a.At, &a.Operator, &a.TokenID, &a.Role, &a.Via, &a.Client, &a.Kind,
		&a.AgentID, &a.Target, &a.Detail, &a.Outcome, &a.Code}, func() error {
		a.At = a.At.UTC()
		out = append(out, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read actions: %w", classify(err))
	}
	return out, nil
}

// CreateSession implements service.SessionStore.
func (s *Store) CreateSession(ctx context.Context, sess auth.Session, forgetBefore time.Time) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM console_sessions WHERE seen_at < $1`, forgetBefore.UTC()); err != nil {
			return err
		}
		var known bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_tokens WHERE id = $1)`, sess.TokenID).Scan(&known); err != nil {
			return err
		}
		if !known {
			return fmt.Errorf("%w: token %q", errkind.ErrNotFound, sess.TokenID)
		}
		ct, err := tx.Exec(ctx, `INSERT INTO console_sessions (id_sha256, token_id, created_at, seen_at, client, browser)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
			sess.IDSum[:], sess.TokenID, sess.CreatedAt.UTC().Truncate(ledger.Resolution), sess.SeenAt.UTC().Truncate(ledger.Resolution),
			sess.Client, sess.Browser)
		if err != nil {
			return err
		}
		if ct.RowsAffected() == 0 {
			return fmt.Errorf("%w: session id in use", errkind.ErrConflict)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: create session: %w", classify(err))
	}
	return nil
}

const sessionColumns = `s.id_sha256, s.token_id, t.operator_id, t.role, s.created_at, s.seen_at, s.client, s.browser,
	s.revoked_at, coalesce(s.revoked_by, ''), t.revoked_at IS NOT NULL`

func scanSession(row pgx.Row) (auth.Session, error) {
	var sess auth.Session
	var sum []byte
	var revoked *time.Time
	if err := row.Scan(&sum, &sess.TokenID, &sess.Operator, &sess.Role, &sess.CreatedAt, &sess.SeenAt, &sess.Client, &sess.Browser,
		&revoked, &sess.RevokedBy, &sess.TokenRevoked); err != nil {
		return auth.Session{}, err
	}
	copy(sess.IDSum[:], sum)
	sess.CreatedAt, sess.SeenAt, sess.RevokedAt = sess.CreatedAt.UTC(), sess.SeenAt.UTC(), timeOrZero(revoked)
	return sess, nil
}

// Session implements service.SessionStore.
func (s *Store) Session(ctx context.Context, sum [sha256.Size]byte) (auth.Session, error) {
	sess, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+`
		FROM console_sessions s JOIN api_tokens t ON t.id = s.token_id WHERE s.id_sha256 = $1`, sum[:]))
	if errors.Is(err, pgx.ErrNoRows) {
		return auth.Session{}, fmt.Errorf("%w: no such session", errkind.ErrNotFound)
	}
	if err != nil {
		return auth.Session{}, fmt.Errorf("postgres: read session: %w", classify(err))
	}
	return sess, nil
}

// TouchSession implements service.SessionStore.
func (s *Store) TouchSession(ctx context.Context, sum [sha256.Size]byte, at time.Time) error {
	at = at.UTC().Truncate(ledger.Resolution)
	if _, err := s.pool.Exec(ctx, `UPDATE console_sessions SET seen_at = $1 WHERE id_sha256 = $2 AND seen_at < $1`, at, sum[:]); err != nil {
		return fmt.Errorf("postgres: touch session: %w", classify(err))
	}
	return nil
}

// RevokeSession implements service.SessionStore.
func (s *Store) RevokeSession(ctx context.Context, sum [sha256.Size]byte, at time.Time, by string) error {
	ct, err := s.pool.Exec(ctx, `UPDATE console_sessions SET revoked_at = coalesce(revoked_at, $1), revoked_by = coalesce(revoked_by, $2)
		WHERE id_sha256 = $3`, at.UTC().Truncate(ledger.Resolution), by, sum[:])
	if err != nil {
		return fmt.Errorf("postgres: revoke session: %w", classify(err))
	}
	if ct.RowsAffected() == 0 {
		return fmt.Errorf("postgres: revoke session: %w: no such session", errkind.ErrNotFound)
	}
	return nil
}

// Sessions implements service.SessionStore.
func (s *Store) Sessions(ctx context.Context, seenSince, createdSince time.Time) ([]auth.Session, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+sessionColumns+`
		FROM console_sessions s JOIN api_tokens t ON t.id = s.token_id
		WHERE s.revoked_at IS NULL AND t.revoked_at IS NULL AND s.seen_at >= $1 AND s.created_at >= $2
		ORDER BY s.seen_at DESC, s.id_sha256`, seenSince.UTC(), createdSince.UTC())
	if err != nil {
		return nil, fmt.Errorf("postgres: list sessions: %w", classify(err))
	}
	defer rows.Close()
	var out []auth.Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list sessions: %w", classify(err))
		}
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list sessions: %w", classify(err))
	}
	return out, nil
}
