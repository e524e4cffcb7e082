package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

// eventSelect is store.EventSelect.
var eventSelect = store.EventSelect

// Correct records a correction and re-issues the affected agents' cache
// entries in one transaction; see service.LedgerStore. The rows of the
// agents involved are locked in id order, as Ingest locks them, so a
// correction and a batch of the same agents serialise.
func (s *Store) Correct(ctx context.Context, req ledger.CorrectionRequest, issue ledger.IssueFunc) (ledger.Correction, bool, error) {
	if err := req.Validate(); err != nil {
		return ledger.Correction{}, false, err
	}
	var plan ledger.CorrectionPlan
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		plan, err = correctIn(ctx, tx, req, issue)
		return err
	})
	var ie issueError
	if errors.As(err, &ie) {
		return ledger.Correction{}, false, ie.err
	}
	if err != nil {
		return ledger.Correction{}, false, fmt.Errorf("postgres: correct: %w", err)
	}
	return plan.Correction, !plan.Existing, nil
}

// correctIn decides and writes a correction inside tx; an error of issue
// comes back as an issueError.
func correctIn(ctx context.Context, tx pgx.Tx, req ledger.CorrectionRequest, issue ledger.IssueFunc) (ledger.CorrectionPlan, error) {
	var plan ledger.CorrectionPlan
	err := func() error {
		st := ledger.CorrectionState{Heads: map[string]ledger.Head{}}
		existing, ok, err := readCorrection(ctx, tx, req.ID())
		if err != nil {
			return err
		}
		if ok {
			st.Existing = &existing
		}
		// The hold of a transaction is locked before its event, in the
		// order ApplyHold takes them, so that a correction and a change
		// of the hold wait for each other instead of deadlocking.
		if req.EventType == ledger.AP2Transaction {
			if err := lockHold(ctx, tx, req.EventID); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, eventSelect(req.EventType)+` WHERE id = $1 FOR UPDATE`, req.EventID)
		if err != nil {
			return err
		}
		evs := map[ledger.EventKey]ledger.StoredEvent{}
		if err := scanEvents(req.EventType, evs)(rows); err != nil {
			return err
		}
		st.Event, st.Found = evs[ledger.EventKey{Type: req.EventType, ID: req.EventID}]
		agents := []string{}
		for _, a := range []string{st.Event.CurrentAgent(), req.AgentID} {
			if a != "" && !slices.Contains(agents, a) {
				agents = append(agents, a)
			}
		}
		slices.Sort(agents)
		rows, err = tx.Query(ctx, `SELECT id, head_seq, head_hash FROM agents WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`, agents)
		if err != nil {
			return err
		}
		var id string
		var h ledger.Head
		var hash []byte
		if _, err := pgx.ForEachRow(rows, []any{&id, &h.Seq, &hash}, func() error {
			copy(h.Hash[:], hash)
			st.Heads[id] = h
			return nil
		}); err != nil {
			return err
		}
		// A pruned event (its last record at or before its chain's anchor)
		// waits in a droppable partition: it is not there any more. Read
		// with the agents locked, after any prune of theirs committed.
		if st.Found {
			var anchor int64
			if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT seq FROM chain_anchors WHERE agent_id = $1), 0)`,
				st.Event.CurrentAgent()).Scan(&anchor); err != nil {
				return err
			}
			if st.Event.Seq <= anchor {
				st.Event, st.Found = ledger.StoredEvent{}, false
			}
		}
		plan, err = ledger.DecideCorrection(req, st)
		if err != nil || plan.Existing {
			return err
		}
		return writeCorrection(ctx, tx, &plan, issue)
	}()
	return plan, err
}

func writeCorrection(ctx context.Context, tx pgx.Tx, plan *ledger.CorrectionPlan, issue ledger.IssueFunc) error {
	c := &plan.Correction
	for _, h := range plan.Heads {
		if _, err := tx.Exec(ctx, `INSERT INTO agents (id, head_seq, head_hash, terminal_seq) VALUES ($1, $2, $3, $4)
			ON CONFLICT (id) DO UPDATE SET head_seq = EXCLUDED.head_seq, head_hash = EXCLUDED.head_hash,
				terminal_seq = greatest(agents.terminal_seq, EXCLUDED.terminal_seq)`,
			h.AgentID, h.Head.Seq, h.Head.Hash[:], h.Terminal); err != nil {
			return err
		}
	}
	table, agentCol := ledger.EventTable(c.EventType).Name, ledger.EventTable(c.EventType).Owner
	var voided *time.Time
	if plan.Event.IsVoided() {
		voided = &c.At
	}
	ct, err := tx.Exec(ctx, `UPDATE `+table+` SET reported_agent_id = coalesce(reported_agent_id, `+agentCol+`),
			reported_status = coalesce(reported_status, status), `+agentCol+` = $1, status = $2, voided_at = $3, seq = $4, updated_at = now()
		WHERE id = $5 AND seq = $6`,
		plan.Event.CurrentAgent(), string(plan.Event.CurrentStatus()), voided, plan.Event.Seq, c.EventID, plan.LoadedSeq)
	if err != nil {
		return err
	}
	if ct.RowsAffected() != 1 {
		return fmt.Errorf("correct event: %d rows changed, want 1", ct.RowsAffected())
	}
	if _, err := tx.Exec(ctx, `INSERT INTO corrections (id, event_type, event_id, action, from_agent, to_agent, from_status, to_status,
			reason, appeal_id, actor, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		c.ID, string(c.EventType), c.EventID, string(c.Action), c.FromAgent, c.ToAgent, string(c.FromStatus), string(c.ToStatus),
		c.Reason, c.AppealID, c.By, c.At); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, appendRecordsSQL, appendRecordsArgs(plan.Records)...); err != nil {
		return err
	}
	// Every affected agent's score is recomputed as of the correction in
	// the same transaction, so no stale passport outlives it.
	for _, a := range plan.Invalidated() {
		if _, err := refreshIn(ctx, tx, a, c.At, issue); err != nil {
			return err
		}
	}
	// A hold of the transaction follows the correction (ERRATA E65–E67).
	if err := correctHold(ctx, tx, c); err != nil {
		return err
	}
	if issue != nil {
		c.ReissuedAt = c.At
		if _, err := tx.Exec(ctx, `UPDATE corrections SET reissued_at = $1 WHERE id = $2`, c.At, c.ID); err != nil {
			return err
		}
	}
	return nil
}

func scanCorrection(scan func(...any) error) (ledger.Correction, error) {
	var c ledger.Correction
	var typ, action, from, to string
	var reissued *time.Time
	if err := scan(&c.ID, &typ, &c.EventID, &action, &c.FromAgent, &c.ToAgent, &from, &to, &c.Reason, &c.AppealID, &c.By, &c.At, &reissued); err != nil {
		return c, err
	}
	c.EventType, c.Action, c.FromStatus, c.ToStatus = ledger.Type(typ), ledger.CorrectionAction(action), ledger.Status(from), ledger.Status(to)
	c.At, c.ReissuedAt = c.At.UTC(), timeOrZero(reissued)
	c.SetRequested()
	return c, nil
}

func readCorrection(ctx context.Context, tx pgx.Tx, id string) (ledger.Correction, bool, error) {
	c, err := scanCorrection(tx.QueryRow(ctx, `SELECT `+store.CorrectionColumns+` FROM corrections WHERE id = $1`, id).Scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, err
}

// Corrections lists an event's corrections, oldest first; see
// service.LedgerStore.
func (s *Store) Corrections(ctx context.Context, typ ledger.Type, eventID string) ([]ledger.Correction, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+store.CorrectionColumns+` FROM corrections WHERE event_type = $1 AND event_id = $2 ORDER BY created_at, id`,
		string(typ), eventID)
	if err != nil {
		return nil, fmt.Errorf("postgres: read corrections: %w", classify(err))
	}
	defer rows.Close()
	var out []ledger.Correction
	for rows.Next() {
		c, err := scanCorrection(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("postgres: read corrections: %w", classify(err))
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: read corrections: %w", classify(err))
	}
	return out, nil
}

// Events implements service.EventReader: one query per event type.
func (s *Store) Events(ctx context.Context, keys []ledger.EventKey) ([]ledger.StoredEvent, error) {
	ids := map[ledger.Type][]string{}
	for _, k := range keys {
		if k.Type.Valid() {
			ids[k.Type] = append(ids[k.Type], k.ID)
		}
	}
	found := make(map[ledger.EventKey]ledger.StoredEvent, len(keys))
	for t, list := range ids {
		rows, err := s.pool.Query(ctx, eventSelect(t)+` WHERE id = ANY($1)`, list)
		if err != nil {
			return nil, fmt.Errorf("postgres: read events: %w", classify(err))
		}
		if err := scanEvents(t, found)(rows); err != nil {
			return nil, fmt.Errorf("postgres: read events: %w", classify(err))
		}
	}
	out := make([]ledger.StoredEvent, 0, len(found))
	for _, k := range keys {
		if e, ok := found[k]; ok {
			out = append(out, e)
			delete(found, k)
		}
	}
	return out, nil
}
