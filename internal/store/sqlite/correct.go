package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

// eventSelect is store.EventSelect.
var eventSelect = store.EventSelect

// scanEvent reads one row of eventSelect.
func scanEvent(t ledger.Type, scan func(...any) error) (ledger.StoredEvent, error) {
	se := ledger.StoredEvent{Event: ledger.Event{Type: t}}
	var status string
	var started int64
	var ended sql.NullInt64
	var reportedAgent, reportedStatus sql.NullString
	var voided bool
	if err := scan(&se.Event.ID, &se.Event.AgentID, &se.Event.BuyerID, &se.Operator, &status, &se.Event.EscrowAmountCents, &started, &ended, &se.Seq,
		&reportedAgent, &reportedStatus, &voided); err != nil {
		return se, err
	}
	se.Event.Status, se.Event.StartedAt, se.Event.EndedAt = ledger.Status(status), fromMicros(started), nullMicros(ended)
	se.SetReported(nullable(&reportedAgent), nullable(&reportedStatus), voided)
	return se, nil
}

// Correct implements service.LedgerStore: it loads the event, the heads of
// the agents involved and an identical earlier correction, writes what
// ledger.DecideCorrection returns, and re-issues the affected agents' cache
// entries as of the correction (with passports when issue is not nil), all
// in one write transaction.
func (s *Store) Correct(ctx context.Context, req ledger.CorrectionRequest, issue ledger.IssueFunc) (ledger.Correction, bool, error) {
	if err := req.Validate(); err != nil {
		return ledger.Correction{}, false, err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return ledger.Correction{}, false, dbErr("begin correction", err)
	}
	defer tx.Rollback()
	c, created, err := s.correctIn(ctx, tx, req, issue)
	if err != nil || !created {
		return c, false, err
	}
	if err := tx.Commit(); err != nil {
		return ledger.Correction{}, false, dbErr("commit correction", err)
	}
	return c, true, nil
}

// correctIn is Correct inside tx, which the caller commits.
func (s *Store) correctIn(ctx context.Context, tx *sql.Tx, req ledger.CorrectionRequest, issue ledger.IssueFunc) (ledger.Correction, bool, error) {
	var err error
	st := ledger.CorrectionState{Heads: map[string]ledger.Head{}}
	if existing, ok, err := readCorrection(ctx, tx, req.ID()); err != nil {
		return ledger.Correction{}, false, err
	} else if ok {
		st.Existing = &existing
	}
	st.Event, err = scanEvent(req.EventType, tx.QueryRowContext(ctx, eventSelect(req.EventType)+` WHERE id = ?`, req.EventID).Scan)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return ledger.Correction{}, false, dbErr("read event", err)
	default:
		st.Found = true
	}
	for _, a := range []string{st.Event.CurrentAgent(), req.AgentID} {
		if a == "" {
			continue
		}
		var h ledger.Head
		var hash []byte
		err := tx.QueryRowContext(ctx, `SELECT head_seq, head_hash FROM agents WHERE id = ?`, a).Scan(&h.Seq, &hash)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return ledger.Correction{}, false, dbErr("read chain head", err)
		}
		copy(h.Hash[:], hash)
		st.Heads[a] = h
	}
	plan, err := ledger.DecideCorrection(req, st)
	if err != nil || plan.Existing {
		return plan.Correction, false, err
	}
	now := micros(s.now())
	c := &plan.Correction
	for _, h := range plan.Heads {
		if _, err := tx.ExecContext(ctx, `INSERT INTO agents (id, created_at, head_seq, head_hash, terminal_seq) VALUES (?, ?, ?, ?, ?)
		  ON CONFLICT (id) DO UPDATE SET head_seq = excluded.head_seq, head_hash = excluded.head_hash, terminal_seq = max(terminal_seq, excluded.terminal_seq)`,
			h.AgentID, now, h.Head.Seq, h.Head.Hash[:], h.Terminal); err != nil {
			return ledger.Correction{}, false, dbErr("move chain heads", err)
		}
	}
	table, agentCol := ledger.EventTable(req.EventType).Name, ledger.EventTable(req.EventType).Owner
	var voided any
	if plan.Event.IsVoided() {
		voided = micros(c.At)
	}
	res, err := tx.ExecContext(ctx, `UPDATE `+table+` SET reported_agent_id = COALESCE(reported_agent_id, `+agentCol+`),
	  reported_status = COALESCE(reported_status, status), `+agentCol+` = ?, status = ?, voided_at = ?, seq = ?, updated_at = ?
	  WHERE id = ? AND seq = ?`, plan.Event.CurrentAgent(), string(plan.Event.CurrentStatus()), voided, plan.Event.Seq, now, req.EventID, plan.LoadedSeq)
	if err != nil {
		return ledger.Correction{}, false, dbErr("correct event", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return ledger.Correction{}, false, fmt.Errorf("sqlite: correct event: %d rows changed (%v)", n, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO corrections (id, event_type, event_id, action, from_agent, to_agent, from_status, to_status,
	  reason, appeal_id, actor, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, c.ID, string(c.EventType), c.EventID, string(c.Action),
		c.FromAgent, c.ToAgent, string(c.FromStatus), string(c.ToStatus), c.Reason, c.AppealID, c.By, micros(c.At)); err != nil {
		return ledger.Correction{}, false, dbErr("store correction", err)
	}
	next, err := nextLogIndex(ctx, tx)
	if err != nil {
		return ledger.Correction{}, false, err
	}
	for i, r := range plan.Records {
		idx := next + int64(i)
		if _, err := tx.ExecContext(ctx, `INSERT INTO ledger_records (agent_id, seq, event_type, event_id, status, hash, correction_id, log_index) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			r.AgentID, r.Seq, string(r.Type), r.EventID, string(r.Status), r.Hash[:], r.CorrectionID, idx); err != nil {
			return ledger.Correction{}, false, dbErr("append chain record", err)
		}
		if err := appendLeaf(ctx, tx, idx, r.Hash, r.Seq); err != nil {
			return ledger.Correction{}, false, err
		}
	}
	// Every affected agent's score is recomputed as of the correction in
	// the same transaction, so no stale passport outlives it.
	for _, a := range plan.Invalidated() {
		if _, err := refreshIn(ctx, tx, a, c.At, issue); err != nil {
			return ledger.Correction{}, false, err
		}
	}
	// A hold of the transaction follows the correction (ERRATA E65–E67).
	if err := correctHold(ctx, tx, c); err != nil {
		return ledger.Correction{}, false, err
	}
	if issue != nil {
		c.ReissuedAt = c.At
		if _, err := tx.ExecContext(ctx, `UPDATE corrections SET reissued_at = ? WHERE id = ?`, micros(c.At), c.ID); err != nil {
			return ledger.Correction{}, false, dbErr("record re-issue", err)
		}
	}
	return *c, true, nil
}

func scanCorrection(scan func(...any) error) (ledger.Correction, error) {
	var c ledger.Correction
	var typ, action, from, to string
	var at int64
	var reissued sql.NullInt64
	if err := scan(&c.ID, &typ, &c.EventID, &action, &c.FromAgent, &c.ToAgent, &from, &to, &c.Reason, &c.AppealID, &c.By, &at, &reissued); err != nil {
		return c, err
	}
	c.EventType, c.Action, c.FromStatus, c.ToStatus = ledger.Type(typ), ledger.CorrectionAction(action), ledger.Status(from), ledger.Status(to)
	c.At, c.ReissuedAt = fromMicros(at), nullMicros(reissued)
	c.SetRequested()
	return c, nil
}

func readCorrection(ctx context.Context, q queryer, id string) (ledger.Correction, bool, error) {
	c, err := scanCorrection(q.QueryRowContext(ctx, `SELECT `+store.CorrectionColumns+` FROM corrections WHERE id = ?`, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, dbErr("read correction", err)
	}
	return c, true, nil
}

// Corrections implements service.LedgerStore: every correction of the
// event, oldest first.
func (s *Store) Corrections(ctx context.Context, typ ledger.Type, eventID string) ([]ledger.Correction, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+store.CorrectionColumns+` FROM corrections WHERE event_type = ? AND event_id = ? ORDER BY created_at, id`,
		string(typ), eventID)
	if err != nil {
		return nil, dbErr("read corrections", err)
	}
	defer rows.Close()
	var out []ledger.Correction
	for rows.Next() {
		c, err := scanCorrection(rows.Scan)
		if err != nil {
			return nil, dbErr("read corrections", err)
		}
		out = append(out, c)
	}
	return out, dbErr("read corrections", rows.Err())
}

// Events implements service.EventReader.
func (s *Store) Events(ctx context.Context, keys []ledger.EventKey) ([]ledger.StoredEvent, error) {
	out := make([]ledger.StoredEvent, 0, len(keys))
	seen := make(map[ledger.EventKey]bool, len(keys))
	for _, k := range keys {
		if seen[k] || !k.Type.Valid() {
			continue
		}
		seen[k] = true
		e, err := scanEvent(k.Type, s.r.QueryRowContext(ctx, eventSelect(k.Type)+` WHERE id = ?`, k.ID).Scan)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, dbErr("read events", err)
		}
		out = append(out, e)
	}
	return out, nil
}
