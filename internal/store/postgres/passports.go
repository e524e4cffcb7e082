package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

func scanPassport(scan func(...any) error) (ledger.IssuedPassport, error) {
	var p ledger.IssuedPassport
	var doc string
	var revoked *time.Time
	if err := scan(&p.ID, &p.AgentID, &p.ComputedAt, &p.ExpiresAt, &p.KeyID, &p.Signature, &doc, &revoked); err != nil {
		return p, err
	}
	p.ComputedAt, p.ExpiresAt, p.Document, p.RevokedAt = p.ComputedAt.UTC(), p.ExpiresAt.UTC(), []byte(doc), timeOrZero(revoked)
	return p, nil
}

// Passport returns an issued passport; see service.PassportStore.
func (s *Store) Passport(ctx context.Context, id string) (ledger.IssuedPassport, error) {
	p, err := scanPassport(s.pool.QueryRow(ctx, `SELECT `+store.PassportColumns+` FROM passports WHERE id = $1`, id).Scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, fmt.Errorf("%w: no passport with id %q was issued here", errkind.ErrNotFound, id)
	}
	if err != nil {
		return p, fmt.Errorf("postgres: read passport: %w", classify(err))
	}
	return p, nil
}

// Passports returns an agent's issued passports; see service.PassportStore.
func (s *Store) Passports(ctx context.Context, agentID string) ([]ledger.IssuedPassport, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+store.PassportColumns+` FROM passports WHERE agent_id = $1 ORDER BY computed_at, id`, agentID)
	if err != nil {
		return nil, fmt.Errorf("postgres: read passports: %w", classify(err))
	}
	defer rows.Close()
	var out []ledger.IssuedPassport
	for rows.Next() {
		p, err := scanPassport(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("postgres: read passports: %w", classify(err))
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: read passports: %w", classify(err))
	}
	return out, nil
}

// StalePassports lists agents whose passport a rotation must re-issue; see
// service.PassportStore.
func (s *Store) StalePassports(ctx context.Context, activeKeyID string, asOf time.Time, after string, limit int) ([]string, error) {
	if limit < 1 {
		return nil, fmt.Errorf("%w: limit %d", errkind.ErrInvalid, limit)
	}
	rows, err := s.pool.Query(ctx, `SELECT agent_id FROM swarmscore_cache
		WHERE passport_json IS NOT NULL AND coalesce(passport_kid, '') <> $1 AND expires_at > $2 AND agent_id > $3
		ORDER BY agent_id LIMIT $4`, activeKeyID, asOf, after, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: find stale passports: %w", classify(err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: find stale passports: %w", classify(err))
	}
	return ids, nil
}
