package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

func scanPassport(scan func(...any) error) (ledger.IssuedPassport, error) {
	var p ledger.IssuedPassport
	var computed, expires int64
	var doc string
	var revoked sql.NullInt64
	if err := scan(&p.ID, &p.AgentID, &computed, &expires, &p.KeyID, &p.Signature, &doc, &revoked); err != nil {
		return p, err
	}
	p.ComputedAt, p.ExpiresAt, p.Document, p.RevokedAt = fromMicros(computed), fromMicros(expires), []byte(doc), nullMicros(revoked)
	return p, nil
}

// Passport implements service.PassportStore.
func (s *Store) Passport(ctx context.Context, id string) (ledger.IssuedPassport, error) {
	p, err := scanPassport(s.rp.QueryRowContext(ctx, `SELECT `+store.PassportColumns+` FROM passports WHERE id = ?`, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("%w: no passport with id %q was issued here", errkind.ErrNotFound, id)
	}
	return p, dbErr("read passport", err)
}

// Passports implements service.PassportStore.
func (s *Store) Passports(ctx context.Context, agentID string) ([]ledger.IssuedPassport, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+store.PassportColumns+` FROM passports WHERE agent_id = ? ORDER BY computed_at, id`, agentID)
	if err != nil {
		return nil, dbErr("read passports", err)
	}
	defer rows.Close()
	var out []ledger.IssuedPassport
	for rows.Next() {
		p, err := scanPassport(rows.Scan)
		if err != nil {
			return nil, dbErr("read passports", err)
		}
		out = append(out, p)
	}
	return out, dbErr("read passports", rows.Err())
}

// StalePassports implements service.PassportStore.
func (s *Store) StalePassports(ctx context.Context, activeKeyID string, asOf time.Time, after string, limit int) ([]string, error) {
	if limit < 1 {
		return nil, fmt.Errorf("%w: limit %d", errkind.ErrInvalid, limit)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT agent_id FROM swarmscore_cache
	  WHERE passport_json IS NOT NULL AND COALESCE(passport_kid, '') <> ? AND expires_at > ? AND agent_id > ?
	  ORDER BY agent_id LIMIT ?`, activeKeyID, micros(asOf), after, limit)
	if err != nil {
		return nil, dbErr("find stale passports", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, dbErr("find stale passports", err)
		}
		out = append(out, id)
	}
	return out, dbErr("find stale passports", rows.Err())
}
