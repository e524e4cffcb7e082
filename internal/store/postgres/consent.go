package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/jackc/pgx/v5/pgconn"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// RecordConsent records an agent's consent; see service.ConsentStore.
func (s *Store) RecordConsent(ctx context.Context, agentID, version, by string, at time.Time) error {
	if err := ledger.CheckConsent(version, by); err != nil {
		return err
	}
	var ct pgconn.CommandTag
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		ct, err = tx.Exec(ctx, `INSERT INTO consent (agent_id, visibility, consented_at, disclosure_version, consent_given_at, consent_by)
		SELECT id, 'public', $2, $3, $2, $4 FROM agents WHERE id = $1
		ON CONFLICT (agent_id) DO UPDATE SET disclosure_version = EXCLUDED.disclosure_version,
			consent_given_at = EXCLUDED.consent_given_at, consent_by = EXCLUDED.consent_by`,
			agentID, at.UTC().Truncate(ledger.Resolution), version, by)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: record consent: %w", classify(err))
	}
	if ct.RowsAffected() == 0 {
		return fmt.Errorf("%w: agent %q", errkind.ErrNotFound, agentID)
	}
	return nil
}

// Consent returns an agent's consent and visibility; see
// service.ConsentStore.
func (s *Store) Consent(ctx context.Context, agentID string) (ledger.Consent, error) {
	var (
		c                       ledger.Consent
		vis, version, consentBy *string
		given                   *time.Time
	)
	err := s.pool.QueryRow(ctx, `SELECT c.visibility, c.disclosure_version, c.consent_given_at, c.consent_by
		FROM agents a LEFT JOIN consent c ON c.agent_id = a.id WHERE a.id = $1`, agentID).Scan(&vis, &version, &given, &consentBy)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, fmt.Errorf("%w: agent %q", errkind.ErrNotFound, agentID)
	}
	if err != nil {
		return c, fmt.Errorf("postgres: read consent: %w", classify(err))
	}
	c.Visibility = ledger.VisibilityPublic
	if vis != nil {
		c.Visibility = ledger.Visibility(*vis)
	}
	if version != nil {
		c.DisclosureVersion, c.GivenAt = *version, timeOrZero(given)
		if consentBy != nil {
			c.By = *consentBy
		}
	}
	return c, nil
}

// Records returns the events counting in an agent's score; see
// service.LedgerStore.
func (s *Store) Records(ctx context.Context, agentID string, asOf time.Time) ([]ledger.StoredEvent, error) {
	if _, err := s.Agent(ctx, agentID); err != nil {
		return nil, err
	}
	lo, hi := ledger.Bounds(asOf)
	events := map[ledger.EventKey]ledger.StoredEvent{}
	for _, q := range []struct {
		typ  ledger.Type
		cond string
	}{
		{ledger.ConduitSession, ` WHERE agent_id = $1 AND status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at BETWEEN $2 AND $3`},
		{ledger.AP2Transaction, ` WHERE provider_id = $1 AND status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at BETWEEN $2 AND $3`},
	} {
		rows, err := s.pool.Query(ctx, eventSelect(q.typ)+q.cond, agentID, lo, hi)
		if err != nil {
			return nil, fmt.Errorf("postgres: read records: %w", classify(err))
		}
		if err := scanEvents(q.typ, events)(rows); err != nil {
			return nil, fmt.Errorf("postgres: read records: %w", classify(err))
		}
	}
	out := make([]ledger.StoredEvent, 0, len(events))
	for _, e := range events {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b ledger.StoredEvent) int {
		return cmp.Or(a.Event.EndedAt.Compare(b.Event.EndedAt), strings.Compare(string(a.Event.Type), string(b.Event.Type)),
			strings.Compare(a.Event.ID, b.Event.ID))
	})
	return out, nil
}
