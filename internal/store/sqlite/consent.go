package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// RecordConsent implements service.ConsentStore.
func (s *Store) RecordConsent(ctx context.Context, agentID, version, by string, at time.Time) error {
	if err := ledger.CheckConsent(version, by); err != nil {
		return err
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO consent (agent_id, visibility, consented_at, disclosure_version, consent_given_at, consent_by)
	  SELECT id, 'public', ?2, ?3, ?2, ?4 FROM agents WHERE id = ?1
	  ON CONFLICT (agent_id) DO UPDATE SET disclosure_version = excluded.disclosure_version,
	    consent_given_at = excluded.consent_given_at, consent_by = excluded.consent_by`,
		agentID, micros(at), version, by)
	if err != nil {
		return dbErr("record consent", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: agent %q", errkind.ErrNotFound, agentID)
	}
	return nil
}

// Consent implements service.ConsentStore.
func (s *Store) Consent(ctx context.Context, agentID string) (ledger.Consent, error) {
	var (
		c                  ledger.Consent
		vis                sql.NullString
		visAt, given       sql.NullInt64
		version, consentBy sql.NullString
	)
	err := s.r.QueryRowContext(ctx, `SELECT c.visibility, c.consented_at, c.disclosure_version, c.consent_given_at, c.consent_by
	  FROM agents a LEFT JOIN consent c ON c.agent_id = a.id WHERE a.id = ?`, agentID).Scan(&vis, &visAt, &version, &given, &consentBy)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("%w: agent %q", errkind.ErrNotFound, agentID)
	}
	if err != nil {
		return c, dbErr("read consent", err)
	}
	c.Visibility = ledger.VisibilityPublic
	if vis.Valid {
		c.Visibility = ledger.Visibility(vis.String)
	}
	if version.Valid {
		c.DisclosureVersion, c.GivenAt, c.By = version.String, nullMicros(given), consentBy.String
	}
	return c, nil
}

// Records implements service.LedgerStore.
func (s *Store) Records(ctx context.Context, agentID string, asOf time.Time) ([]ledger.StoredEvent, error) {
	if _, err := s.Agent(ctx, agentID); err != nil {
		return nil, err
	}
	lo, hi := ledger.Bounds(asOf)
	var out []ledger.StoredEvent
	for _, q := range []struct {
		typ  ledger.Type
		cond string
	}{
		{ledger.ConduitSession, ` WHERE agent_id = ?1 AND status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at BETWEEN ?2 AND ?3`},
		{ledger.AP2Transaction, ` WHERE provider_id = ?1 AND status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at BETWEEN ?2 AND ?3`},
	} {
		rows, err := s.r.QueryContext(ctx, eventSelect(q.typ)+q.cond, agentID, micros(lo), micros(hi))
		if err != nil {
			return nil, dbErr("read records", err)
		}
		for rows.Next() {
			e, err := scanEvent(q.typ, rows.Scan)
			if err != nil {
				rows.Close()
				return nil, dbErr("read records", err)
			}
			out = append(out, e)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, dbErr("read records", err)
		}
	}
	sortByEnd(out)
	return out, nil
}

// sortByEnd orders events by end time, then type and id.
func sortByEnd(evs []ledger.StoredEvent) {
	slices.SortFunc(evs, func(a, b ledger.StoredEvent) int {
		return cmp.Or(a.Event.EndedAt.Compare(b.Event.EndedAt), strings.Compare(string(a.Event.Type), string(b.Event.Type)),
			strings.Compare(a.Event.ID, b.Event.ID))
	})
}
