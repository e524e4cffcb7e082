package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// anchors loads every pruned chain's anchor.
func anchors(ctx context.Context, q querier, where string, args ...any) (map[string]ledger.Anchor, error) {
	rows, err := q.QueryContext(ctx, `SELECT agent_id, seq, hash FROM chain_anchors`+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]ledger.Anchor{}
	for rows.Next() {
		var id string
		var a ledger.Anchor
		var hash []byte
		if err := rows.Scan(&id, &a.Seq, &hash); err != nil {
			return nil, err
		}
		copy(a.Hash[:], hash)
		out[id] = a
	}
	return out, rows.Err()
}

// summaries loads the summary records' contents, by agent and seq.
func summaries(ctx context.Context, q querier, where string, args ...any) (map[string]map[int64]*ledger.Summary, error) {
	out := map[string]map[int64]*ledger.Summary{}
	rows, err := q.QueryContext(ctx, `SELECT agent_id, seq, created_at, pruned_through, anchor FROM ledger_summaries`+where, args...)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		s := &ledger.Summary{}
		var at int64
		var anchor []byte
		if err := rows.Scan(&s.AgentID, &s.Seq, &at, &s.PrunedThrough, &anchor); err != nil {
			rows.Close()
			return nil, err
		}
		s.At = fromMicros(at)
		copy(s.Anchor[:], anchor)
		if out[s.AgentID] == nil {
			out[s.AgentID] = map[int64]*ledger.Summary{}
		}
		out[s.AgentID][s.Seq] = s
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = q.QueryContext(ctx, `SELECT agent_id, seq, month, event_type, status, voided, count, escrow_cents FROM ledger_summary_rows`+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, typ, status string
		var seq int64
		var r ledger.SummaryRow
		if err := rows.Scan(&id, &seq, &r.Month, &typ, &status, &r.Voided, &r.Count, &r.EscrowCents); err != nil {
			return nil, err
		}
		r.Type, r.Status = ledger.Type(typ), ledger.Status(status)
		if s := out[id][seq]; s != nil {
			s.Rows = append(s.Rows, r)
		}
	}
	for _, m := range out {
		for _, s := range m {
			ledger.SortSummaryRows(s.Rows)
		}
	}
	return out, rows.Err()
}

// Anchors implements service.RetentionStore.
func (s *Store) Anchors(ctx context.Context) (map[string]ledger.Anchor, error) {
	a, err := anchors(ctx, s.r, "")
	if err != nil {
		return nil, dbErr("read anchors", err)
	}
	return a, nil
}

// notPrunable is true of a chain record (r) that a prune at ?2 must keep:
// not a summary, and not a report or correction of an event that
// ledger.Prunable allows (final, ended before the cutoff, never moved to
// another agent). Event tables' end columns are set exactly when the
// status is final.
const notPrunable = `NOT (r.event_type = 'summary'
	  OR (r.event_type = 'conduit_session' AND EXISTS (SELECT 1 FROM conduit_sessions e WHERE e.id = r.event_id AND e.completed_at < ?2))
	  OR (r.event_type = 'ap2_transaction' AND EXISTS (SELECT 1 FROM ap2_transactions e WHERE e.id = r.event_id AND e.settled_at < ?2))
	  OR (r.event_type = 'task_offer' AND EXISTS (SELECT 1 FROM task_offers e WHERE e.id = r.event_id AND e.decided_at < ?2)))
	OR EXISTS (SELECT 1 FROM corrections k WHERE k.event_type = r.event_type AND k.event_id = r.event_id AND k.action = 'reattribute')`

// Prune implements service.RetentionStore, one write transaction per
// chain, so that ingests interleave with a long prune.
func (s *Store) Prune(ctx context.Context, cutoff, at time.Time) (ledger.PruneReport, error) {
	rep := ledger.PruneReport{Cutoff: cutoff}
	// Candidates: chains with a prunable event's record after their
	// anchor; pruneChain finds how far the prefix goes.
	rows, err := s.r.QueryContext(ctx, `SELECT a.id FROM agents a
	    WHERE EXISTS (SELECT 1 FROM ledger_records r WHERE r.agent_id = a.id
	        AND r.seq > COALESCE((SELECT c.seq FROM chain_anchors c WHERE c.agent_id = a.id), 0)
	        AND r.event_type <> 'summary' AND NOT (`+notPrunable+`))
	    ORDER BY a.id`, nil, micros(cutoff))
	if err != nil {
		return rep, dbErr("prune candidates", err)
	}
	var agents []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return rep, dbErr("prune candidates", err)
		}
		agents = append(agents, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return rep, dbErr("prune candidates", err)
	}
	for _, id := range agents {
		if err := ctx.Err(); err != nil {
			return rep, dbErr("prune", err)
		}
		if err := s.pruneChain(ctx, id, cutoff, at, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// pruneChain prunes one agent's chain in one transaction.
func (s *Store) pruneChain(ctx context.Context, agentID string, cutoff, at time.Time, rep *ledger.PruneReport) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return dbErr("begin prune", err)
	}
	defer tx.Rollback()
	var st ledger.PruneState
	var head, anchor []byte
	var anchorSeq sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT a.head_seq, a.head_hash, c.seq, c.hash FROM agents a LEFT JOIN chain_anchors c ON c.agent_id = a.id WHERE a.id = ?`,
		agentID).Scan(&st.Head.Seq, &head, &anchorSeq, &anchor); err != nil {
		return dbErr("prune", err)
	}
	copy(st.Head.Hash[:], head)
	st.Anchor.Seq = anchorSeq.Int64
	copy(st.Anchor.Hash[:], anchor)
	var first sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MIN(r.seq) FROM ledger_records r WHERE r.agent_id = ?1 AND r.seq > ?3 AND (`+notPrunable+`)`,
		agentID, micros(cutoff), st.Anchor.Seq).Scan(&first); err != nil {
		return dbErr("prune", err)
	}
	st.Through = st.Head.Seq
	if first.Valid {
		st.Through = first.Int64 - 1
	}
	if st.Through <= st.Anchor.Seq {
		return nil
	}
	spans, err := tx.QueryContext(ctx, `SELECT MIN(seq), MAX(seq) FROM ledger_records WHERE agent_id = ? AND seq > ? AND event_type <> 'summary'
	    GROUP BY event_type, event_id HAVING MIN(seq) <= ? AND MAX(seq) > ?`, agentID, st.Anchor.Seq, st.Through, st.Through)
	if err != nil {
		return dbErr("prune", err)
	}
	var sp []ledger.EventSpan
	for spans.Next() {
		var e ledger.EventSpan
		if err := spans.Scan(&e.First, &e.Last); err != nil {
			spans.Close()
			return dbErr("prune", err)
		}
		sp = append(sp, e)
	}
	spans.Close()
	if err := spans.Err(); err != nil {
		return dbErr("prune", err)
	}
	if st.Through = ledger.PrunePrefix(st.Through, sp); st.Through <= st.Anchor.Seq {
		return nil
	}
	var through []byte
	if err := tx.QueryRowContext(ctx, `SELECT hash FROM ledger_records WHERE agent_id = ? AND seq = ?`, agentID, st.Through).Scan(&through); err != nil {
		return dbErr("prune", err)
	}
	copy(st.ThroughHash[:], through)

	// The prefix's events, as their rows stand, and its earlier summaries.
	type key struct{ typ, id string }
	var events []key
	var summarySeqs []int64
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT event_type, event_id, seq FROM ledger_records WHERE agent_id = ? AND seq <= ? AND correction_id IS NULL`,
		agentID, st.Through)
	if err != nil {
		return dbErr("prune", err)
	}
	seen := map[key]bool{}
	for rows.Next() {
		var k key
		var seq int64
		if err := rows.Scan(&k.typ, &k.id, &seq); err != nil {
			rows.Close()
			return dbErr("prune", err)
		}
		switch {
		case k.typ == string(ledger.SummaryType):
			summarySeqs = append(summarySeqs, seq)
		case !seen[k]:
			seen[k] = true
			events = append(events, k)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return dbErr("prune", err)
	}
	byType := map[ledger.Type][]string{}
	for _, k := range events {
		byType[ledger.Type(k.typ)] = append(byType[ledger.Type(k.typ)], k.id)
	}
	for typ, ids := range byType {
		list, _ := json.Marshal(ids)
		rows, err := tx.QueryContext(ctx, eventSelect(typ)+` WHERE id IN (SELECT value FROM json_each(?))`, string(list))
		if err != nil {
			return dbErr("prune", err)
		}
		for rows.Next() {
			e, err := scanEvent(typ, rows.Scan)
			if err != nil {
				rows.Close()
				return dbErr("prune", err)
			}
			st.Rows = append(st.Rows, ledger.SummaryRow{Type: typ, Status: e.CurrentStatus(), Voided: e.IsVoided(),
				Month: ledger.MonthOf(e.Event.EndedAt), Count: 1, EscrowCents: e.Event.EscrowAmountCents})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return dbErr("prune", err)
		}
	}
	if len(summarySeqs) > 0 {
		carried, err := summaries(ctx, tx, ` WHERE agent_id = ? AND seq <= ?`, agentID, st.Through)
		if err != nil {
			return dbErr("prune", err)
		}
		for _, sm := range carried[agentID] {
			st.Carried = append(st.Carried, sm.Rows...)
		}
	}
	plan, ok, err := ledger.DecidePrune(agentID, st, at)
	if err != nil || !ok {
		return err
	}

	exec := func(q string, args ...any) (int64, error) {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	steps := []struct {
		q    string
		args []any
	}{
		{`INSERT INTO chain_anchors (agent_id, seq, hash) VALUES (?1, ?2, ?3) ON CONFLICT (agent_id) DO UPDATE SET seq = ?2, hash = ?3`,
			[]any{agentID, plan.Anchor.Seq, plan.Anchor.Hash[:]}},
		{`DELETE FROM ledger_summary_rows WHERE agent_id = ? AND seq <= ?`, []any{agentID, st.Through}},
		{`DELETE FROM ledger_summaries WHERE agent_id = ? AND seq <= ?`, []any{agentID, st.Through}},
	}
	for _, step := range steps {
		if _, err := exec(step.q, step.args...); err != nil {
			return dbErr("prune", err)
		}
	}
	for typ, ids := range byType {
		table, _ := tableOf(typ)
		list, _ := json.Marshal(ids)
		if _, err := exec(`DELETE FROM corrections WHERE event_type = ? AND event_id IN (SELECT value FROM json_each(?))`, string(typ), string(list)); err != nil {
			return dbErr("prune", err)
		}
		n, err := exec(`DELETE FROM `+table+` WHERE id IN (SELECT value FROM json_each(?))`, string(list))
		if err != nil {
			return dbErr("prune", err)
		}
		rep.Events += n
	}
	n, err := exec(`DELETE FROM ledger_records WHERE agent_id = ? AND seq <= ?`, agentID, st.Through)
	if err != nil {
		return dbErr("prune", err)
	}
	rep.Records += n
	sm := &plan.Summary
	if _, err := exec(`INSERT INTO ledger_summaries (agent_id, seq, created_at, pruned_through, anchor) VALUES (?, ?, ?, ?, ?)`,
		agentID, sm.Seq, micros(sm.At), sm.PrunedThrough, sm.Anchor[:]); err != nil {
		return dbErr("prune", err)
	}
	for _, r := range sm.Rows {
		if _, err := exec(`INSERT INTO ledger_summary_rows (agent_id, seq, month, event_type, status, voided, count, escrow_cents) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			agentID, sm.Seq, r.Month, string(r.Type), string(r.Status), r.Voided, r.Count, r.EscrowCents); err != nil {
			return dbErr("prune", err)
		}
	}
	if _, err := exec(`INSERT INTO ledger_records (agent_id, seq, event_type, event_id, status, hash) VALUES (?, ?, ?, ?, '', ?)`,
		agentID, plan.Record.Seq, string(ledger.SummaryType), plan.Record.EventID, plan.Record.Hash[:]); err != nil {
		return dbErr("prune", err)
	}
	if _, err := exec(`UPDATE agents SET head_seq = ?, head_hash = ? WHERE id = ?`, plan.Head.Seq, plan.Head.Hash[:], agentID); err != nil {
		return dbErr("prune", err)
	}
	if err := tx.Commit(); err != nil {
		return dbErr("commit prune", err)
	}
	rep.Agents++
	return nil
}
