package postgres

import (
	"context"
	"errors"
	"fmt"
	"github.com/jackc/pgx/v5/pgconn"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// CreateToken stores a token's hash; see service.TokenStore.
func (s *Store) CreateToken(ctx context.Context, t auth.Token) error {
	if err := ledger.CheckID("token id", t.ID); err != nil {
		return fmt.Errorf("postgres: create token: %w", err)
	}
	if err := ledger.CheckID("operator", t.Operator); err != nil {
		return fmt.Errorf("postgres: create token: %w", err)
	}
	if t.AgentID != "" {
		if err := ledger.CheckID("agent_id", t.AgentID); err != nil {
			return fmt.Errorf("postgres: create token: %w", err)
		}
	}
	if t.CreatedAt.IsZero() {
		return fmt.Errorf("postgres: create token: %w: created_at is required", errkind.ErrInvalid)
	}
	role, err := auth.StoredRole(t)
	if err != nil {
		return fmt.Errorf("postgres: create token: %w", err)
	}
	var agent *string
	if t.AgentID != "" {
		agent = &t.AgentID
	}
	created := t.CreatedAt.UTC().Truncate(ledger.Resolution)
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO operators (id) VALUES ($1) ON CONFLICT DO NOTHING`, t.Operator); err != nil {
			return err
		}
		ct, err := tx.Exec(ctx, `INSERT INTO api_tokens (id, operator_id, token_sha256, created_at, agent_id, role)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, t.ID, t.Operator, t.SHA256[:], created, agent, string(role))
		if err != nil {
			return err
		}
		if ct.RowsAffected() == 1 {
			return nil
		}
		// Either key was taken: a no-op only if it is this very token.
		var same bool
		err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_tokens WHERE id = $1 AND operator_id = $2 AND token_sha256 = $3
			AND coalesce(agent_id, '') = $4 AND role = $5)`, t.ID, t.Operator, t.SHA256[:], t.AgentID, string(role)).Scan(&same)
		if err != nil {
			return err
		}
		if !same {
			return fmt.Errorf("%w: token id %q or its secret is already in use", errkind.ErrConflict, t.ID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: create token: %w", err)
	}
	return nil
}

// Authenticate maps a token hash to its operator; see service.TokenStore.
func (s *Store) Authenticate(ctx context.Context, sum [32]byte) (auth.Token, error) {
	var t auth.Token
	err := s.pool.QueryRow(ctx, `SELECT id, operator_id, coalesce(agent_id, ''), created_at, role FROM api_tokens
		WHERE token_sha256 = $1 AND revoked_at IS NULL`, sum[:]).Scan(&t.ID, &t.Operator, &t.AgentID, &t.CreatedAt, &t.Role)
	if errors.Is(err, pgx.ErrNoRows) {
		return auth.Token{}, fmt.Errorf("%w: unknown or revoked token", errkind.ErrUnauthorized)
	}
	if err != nil {
		return auth.Token{}, fmt.Errorf("postgres: authenticate: %w", classify(err))
	}
	t.CreatedAt = t.CreatedAt.UTC()
	if t.AgentID != "" {
		t.Role = ""
	}
	return t, nil
}

// RevokeToken revokes a token; see service.TokenStore.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) error {
	ct, err := s.pool.Exec(ctx, `UPDATE api_tokens SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1`,
		id, at.UTC().Truncate(ledger.Resolution))
	if err != nil {
		return fmt.Errorf("postgres: revoke token: %w", classify(err))
	}
	if ct.RowsAffected() == 0 {
		return fmt.Errorf("postgres: revoke token: %w: token %q", errkind.ErrNotFound, id)
	}
	return nil
}

// ListTokens lists tokens without their hashes; see service.TokenStore.
func (s *Store) ListTokens(ctx context.Context) ([]auth.Token, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, operator_id, coalesce(agent_id, ''), created_at, revoked_at, role FROM api_tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list tokens: %w", classify(err))
	}
	var out []auth.Token
	var t auth.Token
	var created time.Time
	var revoked *time.Time
	_, err = pgx.ForEachRow(rows, []any{&t.ID, &t.Operator, &t.AgentID, &created, &revoked, &t.Role}, func() error {
		t.CreatedAt, t.RevokedAt = created.UTC(), timeOrZero(revoked)
		if t.AgentID != "" {
			t.Role = ""
		}
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list tokens: %w", classify(err))
	}
	return out, nil
}

// SetVisibility records an agent's consent choice; see service.ConsentStore.
func (s *Store) SetVisibility(ctx context.Context, agentID string, v ledger.Visibility, at time.Time) error {
	if v != ledger.VisibilityPublic && v != ledger.VisibilityUnlisted {
		return fmt.Errorf("postgres: set visibility: %w: visibility %q is not public or unlisted", errkind.ErrInvalid, v)
	}
	var ct pgconn.CommandTag
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		ct, err = tx.Exec(ctx, `INSERT INTO consent (agent_id, visibility, consented_at)
		SELECT id, $2, $3 FROM agents WHERE id = $1
		ON CONFLICT (agent_id) DO UPDATE SET visibility = EXCLUDED.visibility, consented_at = EXCLUDED.consented_at`,
			agentID, string(v), at.UTC().Truncate(ledger.Resolution))
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: set visibility: %w", classify(err))
	}
	if ct.RowsAffected() == 0 {
		return fmt.Errorf("postgres: set visibility: %w", notFound(agentID))
	}
	return nil
}
