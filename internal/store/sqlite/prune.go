package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
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

// pruneCandidates and pruneFirstKept are store.PruneCandidates and
// store.PruneFirstKept.
var pruneCandidates, pruneFirstKept = store.PruneCandidates(dialect), store.PruneFirstKept(dialect)

// Prune implements service.RetentionStore, one write transaction per
// chain, so that ingests interleave with a long prune.
func (s *Store) Prune(ctx context.Context, cutoff, at time.Time) (ledger.PruneReport, error) {
	rep := ledger.PruneReport{Cutoff: cutoff}
	// Candidates: chains with a prunable event's record after their
	// anchor; pruneChain finds how far the prefix goes.
	rows, err := s.r.QueryContext(ctx, pruneCandidates, micros(cutoff))
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
	st, events, ok, err := loadPrune(ctx, tx, agentID, cutoff)
	if err != nil || !ok {
		return err
	}
	plan, ok, err := ledger.DecidePrune(agentID, st, at)
	if err != nil || !ok {
		return err
	}
	if err := writePrune(ctx, tx, agentID, &plan, events, rep); err != nil {
		return dbErr("prune", err)
	}
	if err := tx.Commit(); err != nil {
		return dbErr("commit prune", err)
	}
	rep.Agents++
	return nil
}

// loadPrune reads what one chain's prune is decided against: its head and
// anchor, how far its prefix of prunable records goes (ledger.PrunePrefix)
// and what that prefix holds (loadPruned); ok is false when there is no
// prefix past the anchor.
func loadPrune(ctx context.Context, tx *sql.Tx, agentID string, cutoff time.Time) (st ledger.PruneState, events map[ledger.Type][]string, ok bool, err error) {
	var head, anchor []byte
	var anchorSeq sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT a.head_seq, a.head_hash, c.seq, c.hash FROM agents a LEFT JOIN chain_anchors c ON c.agent_id = a.id WHERE a.id = ?`,
		agentID).Scan(&st.Head.Seq, &head, &anchorSeq, &anchor); err != nil {
		return st, nil, false, dbErr("prune", err)
	}
	copy(st.Head.Hash[:], head)
	st.Anchor.Seq = anchorSeq.Int64
	copy(st.Anchor.Hash[:], anchor)
	var first sql.NullInt64
	if err := tx.QueryRowContext(ctx, pruneFirstKept, agentID, micros(cutoff), st.Anchor.Seq).Scan(&first); err != nil {
		return st, nil, false, dbErr("prune", err)
	}
	st.Through = st.Head.Seq
	if first.Valid {
		st.Through = first.Int64 - 1
	}
	if st.Through <= st.Anchor.Seq {
		return st, nil, false, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT MIN(seq), MAX(seq) FROM ledger_records WHERE agent_id = ? AND seq > ? AND event_type <> 'summary'
	    GROUP BY event_type, event_id HAVING MIN(seq) <= ? AND MAX(seq) > ?`, agentID, st.Anchor.Seq, st.Through, st.Through)
	if err != nil {
		return st, nil, false, dbErr("prune", err)
	}
	var spans []ledger.EventSpan
	for rows.Next() {
		var e ledger.EventSpan
		if err := rows.Scan(&e.First, &e.Last); err != nil {
			rows.Close()
			return st, nil, false, dbErr("prune", err)
		}
		spans = append(spans, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, nil, false, dbErr("prune", err)
	}
	if st.Through = ledger.PrunePrefix(st.Through, spans); st.Through <= st.Anchor.Seq {
		return st, nil, false, nil
	}
	var through []byte
	if err := tx.QueryRowContext(ctx, `SELECT hash FROM ledger_records WHERE agent_id = ? AND seq = ?`, agentID, st.Through).Scan(&through); err != nil {
		return st, nil, false, dbErr("prune", err)
	}
	copy(st.ThroughHash[:], through)
	events, err = loadPruned(ctx, tx, agentID, &st)
	return st, events, err == nil, err
}

// loadPruned reads what the prefix through st.Through holds: its events'
// rows, counted into st.Rows, and its earlier summaries' rows, carried
// into st.Carried. It returns the events' ids by type.
func loadPruned(ctx context.Context, tx *sql.Tx, agentID string, st *ledger.PruneState) (map[ledger.Type][]string, error) {
	type key struct{ typ, id string }
	byType := map[ledger.Type][]string{}
	summarised := false
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT event_type, event_id, seq FROM ledger_records WHERE agent_id = ? AND seq <= ? AND correction_id IS NULL`,
		agentID, st.Through)
	if err != nil {
		return nil, dbErr("prune", err)
	}
	seen := map[key]bool{}
	for rows.Next() {
		var k key
		var seq int64
		if err := rows.Scan(&k.typ, &k.id, &seq); err != nil {
			rows.Close()
			return nil, dbErr("prune", err)
		}
		switch {
		case k.typ == string(ledger.SummaryType):
			summarised = true
		case !seen[k]:
			seen[k] = true
			byType[ledger.Type(k.typ)] = append(byType[ledger.Type(k.typ)], k.id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, dbErr("prune", err)
	}
	for typ, ids := range byType {
		list, _ := json.Marshal(ids)
		rows, err := tx.QueryContext(ctx, eventSelect(typ)+` WHERE id IN (SELECT value FROM json_each(?))`, string(list))
		if err != nil {
			return nil, dbErr("prune", err)
		}
		for rows.Next() {
			e, err := scanEvent(typ, rows.Scan)
			if err != nil {
				rows.Close()
				return nil, dbErr("prune", err)
			}
			st.Rows = append(st.Rows, ledger.SummaryRow{Type: typ, Status: e.CurrentStatus(), Voided: e.IsVoided(),
				Month: ledger.MonthOf(e.Event.EndedAt), Count: 1, EscrowCents: e.Event.EscrowAmountCents})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, dbErr("prune", err)
		}
	}
	if summarised {
		carried, err := summaries(ctx, tx, ` WHERE agent_id = ? AND seq <= ?`, agentID, st.Through)
		if err != nil {
			return nil, dbErr("prune", err)
		}
		for _, sm := range carried[agentID] {
			st.Carried = append(st.Carried, sm.Rows...)
		}
	}
	return byType, nil
}

// writePrune applies a decided prune of one chain: the anchor, the prefix's
// rows deleted (events, their corrections, earlier summaries, records),
// the summary record appended and the head moved.
func writePrune(ctx context.Context, tx *sql.Tx, agentID string, plan *ledger.PrunePlan, events map[ledger.Type][]string, rep *ledger.PruneReport) error {
	exec := func(q string, args ...any) (int64, error) {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	through := plan.Anchor.Seq
	steps := []struct {
		q    string
		args []any
	}{
		{`INSERT INTO chain_anchors (agent_id, seq, hash) VALUES (?1, ?2, ?3) ON CONFLICT (agent_id) DO UPDATE SET seq = ?2, hash = ?3`,
			[]any{agentID, plan.Anchor.Seq, plan.Anchor.Hash[:]}},
		{`DELETE FROM ledger_summary_rows WHERE agent_id = ? AND seq <= ?`, []any{agentID, through}},
		{`DELETE FROM ledger_summaries WHERE agent_id = ? AND seq <= ?`, []any{agentID, through}},
	}
	for _, step := range steps {
		if _, err := exec(step.q, step.args...); err != nil {
			return err
		}
	}
	for typ, ids := range events {
		list, _ := json.Marshal(ids)
		if _, err := exec(`DELETE FROM corrections WHERE event_type = ? AND event_id IN (SELECT value FROM json_each(?))`, string(typ), string(list)); err != nil {
			return err
		}
		n, err := exec(`DELETE FROM `+ledger.EventTable(typ).Name+` WHERE id IN (SELECT value FROM json_each(?))`, string(list))
		if err != nil {
			return err
		}
		rep.Events += n
	}
	n, err := exec(`DELETE FROM ledger_records WHERE agent_id = ? AND seq <= ?`, agentID, through)
	if err != nil {
		return err
	}
	rep.Records += n
	sm := &plan.Summary
	if _, err := exec(`INSERT INTO ledger_summaries (agent_id, seq, created_at, pruned_through, anchor) VALUES (?, ?, ?, ?, ?)`,
		agentID, sm.Seq, micros(sm.At), sm.PrunedThrough, sm.Anchor[:]); err != nil {
		return err
	}
	for _, r := range sm.Rows {
		if _, err := exec(`INSERT INTO ledger_summary_rows (agent_id, seq, month, event_type, status, voided, count, escrow_cents) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			agentID, sm.Seq, r.Month, string(r.Type), string(r.Status), r.Voided, r.Count, r.EscrowCents); err != nil {
			return err
		}
	}
	idx, err := nextLogIndex(ctx, tx)
	if err != nil {
		return err
	}
	if _, err := exec(`INSERT INTO ledger_records (agent_id, seq, event_type, event_id, status, hash, log_index) VALUES (?, ?, ?, ?, '', ?, ?)`,
		agentID, plan.Record.Seq, string(ledger.SummaryType), plan.Record.EventID, plan.Record.Hash[:], idx); err != nil {
		return err
	}
	if err := appendLeaf(ctx, tx, idx, plan.Record.Hash, plan.Record.Seq); err != nil {
		return err
	}
	_, err = exec(`UPDATE agents SET head_seq = ?, head_hash = ? WHERE id = ?`, plan.Head.Seq, plan.Head.Hash[:], agentID)
	return err
}
