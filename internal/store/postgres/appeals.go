package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

func scanAppeal(scan func(...any) error) (appeal.Appeal, error) {
	var a appeal.Appeal
	var grounds, state string
	var acked, decided, escalated, reissued *time.Time
	if err := scan(&a.ID, &a.AgentID, &a.PassportID, &a.PassportComputedAt, &grounds, &a.Statement, &state, &a.FiledBy, &a.FiledAt,
		&acked, &decided, &escalated, &a.Decision, &reissued); err != nil {
		return a, err
	}
	a.Grounds, a.State = appeal.Grounds(grounds), appeal.State(state)
	a.PassportComputedAt, a.FiledAt = a.PassportComputedAt.UTC(), a.FiledAt.UTC()
	a.AcknowledgedAt, a.DecidedAt, a.EscalatedAt, a.ReissuedAt = timeOrZero(acked), timeOrZero(decided), timeOrZero(escalated), timeOrZero(reissued)
	return a, nil
}

func nullable(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// CreateAppeal stores a new appeal; see service.AppealStore.
func (s *Store) CreateAppeal(ctx context.Context, a appeal.Appeal) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		ct, err := tx.Exec(ctx, `INSERT INTO appeals (`+store.AppealColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (id) DO NOTHING`,
			a.ID, a.AgentID, a.PassportID, a.PassportComputedAt, string(a.Grounds), a.Statement, string(a.State), a.FiledBy, a.FiledAt,
			nullable(a.AcknowledgedAt), nullable(a.DecidedAt), nullable(a.EscalatedAt), a.Decision, nullable(a.ReissuedAt))
		if err != nil {
			return err
		}
		if ct.RowsAffected() != 1 {
			return fmt.Errorf("%w: appeal id %q is already in use", errkind.ErrConflict, a.ID)
		}
		for _, e := range a.Events {
			if _, err := tx.Exec(ctx, `INSERT INTO appeal_events (appeal_id, event_type, event_id) VALUES ($1, $2, $3)`, a.ID, string(e.Type), e.ID); err != nil {
				return err
			}
		}
		if err := appendActions(ctx, tx, a, 0); err != nil {
			return err
		}
		if err := notifyAppeal(ctx, tx, a.ID); err != nil {
			return err
		}
		return emitWebhook(ctx, tx, store.AppealEvent(a, ""))
	})
	if err != nil {
		return fmt.Errorf("postgres: file appeal: %w", err)
	}
	return nil
}

// notifyAppeal notifies the cache channel (NotifyChannel), at commit, of
// the agent of appeal id: an agent's public page names its open appeals,
// and serving processes remember them while their watch hears nothing of
// the agent (service.Certificates.ProfileWindow).
func notifyAppeal(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, agent_id) FROM appeals WHERE id = $2`, NotifyChannel, id)
	return err
}

func appendActions(ctx context.Context, tx pgx.Tx, a appeal.Appeal, from int) error {
	for i := from; i < len(a.History); i++ {
		h := a.History[i]
		if _, err := tx.Exec(ctx, `INSERT INTO appeal_actions (appeal_id, seq, action, actor, at, note) VALUES ($1, $2, $3, $4, $5, $6)`,
			a.ID, i+1, string(h.Action), h.By, h.At, h.Note); err != nil {
			return err
		}
	}
	return nil
}

// Appeal returns an appeal with its details; see service.AppealStore.
func (s *Store) Appeal(ctx context.Context, id string) (appeal.Appeal, error) {
	a, err := scanAppeal(s.pool.QueryRow(ctx, `SELECT `+store.AppealColumns+` FROM appeals WHERE id = $1`, id).Scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, fmt.Errorf("%w: no appeal with id %q", errkind.ErrNotFound, id)
	}
	if err == nil {
		err = s.appealDetails(ctx, &a)
	}
	if err != nil {
		return a, fmt.Errorf("postgres: read appeal: %w", classify(err))
	}
	return a, nil
}

func (s *Store) appealDetails(ctx context.Context, a *appeal.Appeal) error {
	rows, err := s.pool.Query(ctx, `SELECT event_type, event_id FROM appeal_events WHERE appeal_id = $1 ORDER BY event_type, event_id`, a.ID)
	if err != nil {
		return err
	}
	var typ, id string
	if _, err := pgx.ForEachRow(rows, []any{&typ, &id}, func() error {
		a.Events = append(a.Events, ledger.EventKey{Type: ledger.Type(typ), ID: id})
		return nil
	}); err != nil {
		return err
	}
	rows, err = s.pool.Query(ctx, `SELECT action, actor, at, note FROM appeal_actions WHERE appeal_id = $1 ORDER BY seq`, a.ID)
	if err != nil {
		return err
	}
	var h appeal.Entry
	var action string
	if _, err := pgx.ForEachRow(rows, []any{&action, &h.By, &h.At, &h.Note}, func() error {
		e := h
		e.Action, e.At = appeal.Action(action), h.At.UTC()
		a.History = append(a.History, e)
		return nil
	}); err != nil {
		return err
	}
	rows, err = s.pool.Query(ctx, `SELECT id FROM corrections WHERE appeal_id = $1 ORDER BY created_at, id`, a.ID)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if len(ids) > 0 {
		a.Corrections = ids
	}
	return err
}

// Appeals lists appeals by state; see service.AppealStore.
func (s *Store) Appeals(ctx context.Context, state appeal.State) ([]appeal.Appeal, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+store.AppealColumns+` FROM appeals WHERE $1 = '' OR state = $1 ORDER BY filed_at, id`, string(state))
	if err != nil {
		return nil, fmt.Errorf("postgres: list appeals: %w", classify(err))
	}
	var out []appeal.Appeal
	for rows.Next() {
		a, err := scanAppeal(rows.Scan)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("postgres: list appeals: %w", classify(err))
		}
		out = append(out, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list appeals: %w", classify(err))
	}
	for i := range out {
		if err := s.appealDetails(ctx, &out[i]); err != nil {
			return nil, fmt.Errorf("postgres: list appeals: %w", classify(err))
		}
	}
	return out, nil
}

// AppealSummaries returns every appeal without its details; see
// service.AppealStore.
func (s *Store) AppealSummaries(ctx context.Context) ([]appeal.Appeal, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+store.AppealColumns+` FROM appeals ORDER BY filed_at, id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list appeals: %w", classify(err))
	}
	defer rows.Close()
	var out []appeal.Appeal
	for rows.Next() {
		a, err := scanAppeal(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("postgres: list appeals: %w", classify(err))
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list appeals: %w", classify(err))
	}
	return out, nil
}

// SaveAppeal stores an appeal's new state and applies an uphold's
// corrections in the same transaction; see service.AppealStore.
func (s *Store) SaveAppeal(ctx context.Context, a appeal.Appeal, from appeal.State, corrections []ledger.CorrectionRequest, issue ledger.IssueFunc) ([]ledger.Correction, error) {
	var out []ledger.Correction
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		out = nil
		var state string
		var actions int
		err := tx.QueryRow(ctx, `SELECT state, (SELECT count(*) FROM appeal_actions WHERE appeal_id = $1) FROM appeals WHERE id = $1 FOR UPDATE`, a.ID).
			Scan(&state, &actions)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: no appeal with id %q", errkind.ErrNotFound, a.ID)
		}
		if err != nil {
			return err
		}
		if appeal.State(state) != from {
			return fmt.Errorf("%w: appeal %s is %s now, not %s: someone acted on it first", errkind.ErrConflict, a.ID, state, from)
		}
		for _, req := range corrections {
			plan, err := correctIn(ctx, tx, req, issue)
			if err != nil {
				return err
			}
			out = append(out, plan.Correction)
		}
		saved := a
		if n := len(out); n > 0 && saved.ReissuedAt.IsZero() {
			saved.ReissuedAt = out[n-1].ReissuedAt
		}
		if _, err := tx.Exec(ctx, `UPDATE appeals SET state = $1, acknowledged_at = $2, decided_at = $3, escalated_at = $4, decision = $5, reissued_at = $6
			WHERE id = $7`, string(saved.State), nullable(saved.AcknowledgedAt), nullable(saved.DecidedAt), nullable(saved.EscalatedAt), saved.Decision,
			nullable(saved.ReissuedAt), saved.ID); err != nil {
			return err
		}
		if err := appendActions(ctx, tx, saved, actions); err != nil {
			return err
		}
		if err := notifyAppeal(ctx, tx, saved.ID); err != nil {
			return err
		}
		return emitWebhook(ctx, tx, store.AppealEvent(saved, from))
	})
	var ie issueError
	if errors.As(err, &ie) {
		return nil, ie.err
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: save appeal: %w", err)
	}
	s.wrote()
	return out, nil
}
