package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

func scanAppeal(scan func(...any) error) (appeal.Appeal, error) {
	var a appeal.Appeal
	var grounds, state string
	var computed, filed int64
	var acked, decided, escalated, reissued sql.NullInt64
	if err := scan(&a.ID, &a.AgentID, &a.PassportID, &computed, &grounds, &a.Statement, &state, &a.FiledBy, &filed,
		&acked, &decided, &escalated, &a.Decision, &reissued); err != nil {
		return a, err
	}
	a.Grounds, a.State = appeal.Grounds(grounds), appeal.State(state)
	a.PassportComputedAt, a.FiledAt = fromMicros(computed), fromMicros(filed)
	a.AcknowledgedAt, a.DecidedAt, a.EscalatedAt, a.ReissuedAt = nullMicros(acked), nullMicros(decided), nullMicros(escalated), nullMicros(reissued)
	return a, nil
}

// CreateAppeal implements service.AppealStore.
func (s *Store) CreateAppeal(ctx context.Context, a appeal.Appeal) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return dbErr("begin appeal", err)
	}
	defer tx.Rollback()
	var used bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM appeals WHERE id = ?)`, a.ID).Scan(&used); err != nil {
		return dbErr("file appeal", err)
	}
	if used {
		return fmt.Errorf("%w: appeal id %q is already in use", errkind.ErrConflict, a.ID)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO appeals (`+store.AppealColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.AgentID, a.PassportID, micros(a.PassportComputedAt), string(a.Grounds), a.Statement, string(a.State), a.FiledBy, micros(a.FiledAt),
		nullTime(a.AcknowledgedAt), nullTime(a.DecidedAt), nullTime(a.EscalatedAt), a.Decision, nullTime(a.ReissuedAt)); err != nil {
		return dbErr("file appeal", err)
	}
	for _, e := range a.Events {
		if _, err := tx.ExecContext(ctx, `INSERT INTO appeal_events (appeal_id, event_type, event_id) VALUES (?, ?, ?)`, a.ID, string(e.Type), e.ID); err != nil {
			return dbErr("file appeal", err)
		}
	}
	if err := appendActions(ctx, tx, a, 0); err != nil {
		return err
	}
	if err := emitWebhook(ctx, tx, store.AppealEvent(a, "")); err != nil {
		return err
	}
	return dbErr("commit appeal", tx.Commit())
}

// appendActions stores a's history from position from on.
func appendActions(ctx context.Context, tx *sql.Tx, a appeal.Appeal, from int) error {
	for i := from; i < len(a.History); i++ {
		h := a.History[i]
		if _, err := tx.ExecContext(ctx, `INSERT INTO appeal_actions (appeal_id, seq, action, actor, at, note) VALUES (?, ?, ?, ?, ?, ?)`,
			a.ID, i+1, string(h.Action), h.By, micros(h.At), h.Note); err != nil {
			return dbErr("record appeal action", err)
		}
	}
	return nil
}

// Appeal implements service.AppealStore.
func (s *Store) Appeal(ctx context.Context, id string) (appeal.Appeal, error) {
	a, err := scanAppeal(s.r.QueryRowContext(ctx, `SELECT `+store.AppealColumns+` FROM appeals WHERE id = ?`, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("%w: no appeal with id %q", errkind.ErrNotFound, id)
	}
	if err != nil {
		return a, dbErr("read appeal", err)
	}
	return a, s.appealDetails(ctx, &a)
}

func (s *Store) appealDetails(ctx context.Context, a *appeal.Appeal) error {
	rows, err := s.r.QueryContext(ctx, `SELECT event_type, event_id FROM appeal_events WHERE appeal_id = ? ORDER BY event_type, event_id`, a.ID)
	if err != nil {
		return dbErr("read appeal", err)
	}
	for rows.Next() {
		var k ledger.EventKey
		var typ string
		if err := rows.Scan(&typ, &k.ID); err != nil {
			rows.Close()
			return dbErr("read appeal", err)
		}
		k.Type = ledger.Type(typ)
		a.Events = append(a.Events, k)
	}
	rows.Close()
	rows, err = s.r.QueryContext(ctx, `SELECT action, actor, at, note FROM appeal_actions WHERE appeal_id = ? ORDER BY seq`, a.ID)
	if err != nil {
		return dbErr("read appeal", err)
	}
	for rows.Next() {
		var h appeal.Entry
		var action string
		var at int64
		if err := rows.Scan(&action, &h.By, &at, &h.Note); err != nil {
			rows.Close()
			return dbErr("read appeal", err)
		}
		h.Action, h.At = appeal.Action(action), fromMicros(at)
		a.History = append(a.History, h)
	}
	rows.Close()
	rows, err = s.r.QueryContext(ctx, `SELECT id FROM corrections WHERE appeal_id = ? ORDER BY created_at, id`, a.ID)
	if err != nil {
		return dbErr("read appeal", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return dbErr("read appeal", err)
		}
		a.Corrections = append(a.Corrections, id)
	}
	return dbErr("read appeal", rows.Err())
}

// Appeals implements service.AppealStore.
func (s *Store) Appeals(ctx context.Context, state appeal.State) ([]appeal.Appeal, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+store.AppealColumns+` FROM appeals WHERE ? = '' OR state = ? ORDER BY filed_at, id`, string(state), string(state))
	if err != nil {
		return nil, dbErr("list appeals", err)
	}
	var out []appeal.Appeal
	for rows.Next() {
		a, err := scanAppeal(rows.Scan)
		if err != nil {
			rows.Close()
			return nil, dbErr("list appeals", err)
		}
		out = append(out, a)
	}
	rows.Close()
	for i := range out {
		if err := s.appealDetails(ctx, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// AppealSummaries implements service.AppealStore.
func (s *Store) AppealSummaries(ctx context.Context) ([]appeal.Appeal, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+store.AppealColumns+` FROM appeals ORDER BY filed_at, id`)
	if err != nil {
		return nil, dbErr("list appeals", err)
	}
	defer rows.Close()
	var out []appeal.Appeal
	for rows.Next() {
		a, err := scanAppeal(rows.Scan)
		if err != nil {
			return nil, dbErr("list appeals", err)
		}
		out = append(out, a)
	}
	return out, dbErr("list appeals", rows.Err())
}

// SaveAppeal implements service.AppealStore.
func (s *Store) SaveAppeal(ctx context.Context, a appeal.Appeal, from appeal.State, corrections []ledger.CorrectionRequest, issue ledger.IssueFunc) ([]ledger.Correction, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, dbErr("begin appeal", err)
	}
	defer tx.Rollback()
	var state string
	var actions int
	err = tx.QueryRowContext(ctx, `SELECT state, (SELECT COUNT(*) FROM appeal_actions WHERE appeal_id = ?1) FROM appeals WHERE id = ?1`, a.ID).Scan(&state, &actions)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: no appeal with id %q", errkind.ErrNotFound, a.ID)
	}
	if err != nil {
		return nil, dbErr("read appeal", err)
	}
	if appeal.State(state) != from {
		return nil, fmt.Errorf("%w: appeal %s is %s now, not %s: someone acted on it first", errkind.ErrConflict, a.ID, state, from)
	}
	var out []ledger.Correction
	for _, req := range corrections {
		c, _, err := s.correctIn(ctx, tx, req, issue)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if n := len(out); n > 0 && a.ReissuedAt.IsZero() {
		a.ReissuedAt = out[n-1].ReissuedAt
	}
	if _, err := tx.ExecContext(ctx, `UPDATE appeals SET state = ?, acknowledged_at = ?, decided_at = ?, escalated_at = ?, decision = ?, reissued_at = ?
	  WHERE id = ?`, string(a.State), nullTime(a.AcknowledgedAt), nullTime(a.DecidedAt), nullTime(a.EscalatedAt), a.Decision, nullTime(a.ReissuedAt), a.ID); err != nil {
		return nil, dbErr("save appeal", err)
	}
	if err := appendActions(ctx, tx, a, actions); err != nil {
		return nil, err
	}
	if err := emitWebhook(ctx, tx, store.AppealEvent(a, from)); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, dbErr("commit appeal", err)
	}
	return out, nil
}
