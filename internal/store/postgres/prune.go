package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

// anchors loads every pruned chain's anchor (where filters chain_anchors).
func anchors(ctx context.Context, tx pgx.Tx, where string, args ...any) (map[string]ledger.Anchor, error) {
	rows, err := tx.Query(ctx, `SELECT agent_id, seq, hash FROM chain_anchors`+where, args...)
	if err != nil {
		return nil, err
	}
	out := map[string]ledger.Anchor{}
	var (
		id   string
		a    ledger.Anchor
		hash []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &a.Seq, &hash}, func() error {
		copy(a.Hash[:], hash)
		out[id] = a
		return nil
	})
	return out, err
}

// summaries loads the summary records' contents, by agent and seq.
func summaries(ctx context.Context, tx pgx.Tx, where string, args ...any) (map[string]map[int64]*ledger.Summary, error) {
	out := map[string]map[int64]*ledger.Summary{}
	rows, err := tx.Query(ctx, `SELECT agent_id, seq, created_at, pruned_through, anchor FROM ledger_summaries`+where, args...)
	if err != nil {
		return nil, err
	}
	var (
		s      ledger.Summary
		anchor []byte
	)
	if _, err := pgx.ForEachRow(rows, []any{&s.AgentID, &s.Seq, &s.At, &s.PrunedThrough, &anchor}, func() error {
		sm := s
		sm.At = sm.At.UTC()
		copy(sm.Anchor[:], anchor)
		if out[sm.AgentID] == nil {
			out[sm.AgentID] = map[int64]*ledger.Summary{}
		}
		out[sm.AgentID][sm.Seq] = &sm
		return nil
	}); err != nil {
		return nil, err
	}
	rows, err = tx.Query(ctx, `SELECT agent_id, seq, month, event_type, status, voided, count, escrow_cents FROM ledger_summary_rows`+where, args...)
	if err != nil {
		return nil, err
	}
	var (
		id, typ, status string
		seq             int64
		r               ledger.SummaryRow
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &seq, &r.Month, &typ, &status, &r.Voided, &r.Count, &r.EscrowCents}, func() error {
		if sm := out[id][seq]; sm != nil {
			row := r
			row.Type, row.Status = ledger.Type(typ), ledger.Status(status)
			sm.Rows = append(sm.Rows, row)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for _, m := range out {
		for _, sm := range m {
			ledger.SortSummaryRows(sm.Rows)
		}
	}
	return out, nil
}

// Anchors implements service.RetentionStore.
func (s *Store) Anchors(ctx context.Context) (map[string]ledger.Anchor, error) {
	var out map[string]ledger.Anchor
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		out, err = anchors(ctx, tx, "")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read anchors: %w", classify(err))
	}
	return out, nil
}

// pruneCandidates and pruneFirstKept are store.PruneCandidates and
// store.PruneFirstKept.
var pruneCandidates, pruneFirstKept = store.PruneCandidates(dialect), store.PruneFirstKept(dialect)

// Prune implements service.RetentionStore: one transaction per chain, its
// agent's row locked as an ingest locks it, then the partitions closed at
// or before the cutoff dropped (partitions.go), and the current partition
// rotated once it is PartitionSpan old.
func (s *Store) Prune(ctx context.Context, cutoff, at time.Time) (ledger.PruneReport, error) {
	rep := ledger.PruneReport{Cutoff: cutoff}
	drop, err := droppable(ctx, s.pool, cutoff)
	if err != nil {
		return rep, fmt.Errorf("postgres: prune: %w", classify(err))
	}
	if drop == nil {
		drop = []int{} // <> ALL('{}') holds; <> ALL(NULL) would not
	}
	rows, err := s.pool.Query(ctx, pruneCandidates, cutoff)
	if err != nil {
		return rep, fmt.Errorf("postgres: prune candidates: %w", classify(err))
	}
	agents, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return rep, fmt.Errorf("postgres: prune candidates: %w", classify(err))
	}
	for _, id := range agents {
		var r ledger.PruneReport
		if err := s.inTx(ctx, func(tx pgx.Tx) error {
			r = ledger.PruneReport{}
			return pruneChain(ctx, tx, id, cutoff, at, drop, &r)
		}); err != nil {
			return rep, fmt.Errorf("postgres: prune: %w", err)
		}
		rep.Agents, rep.Records, rep.Events = rep.Agents+r.Agents, rep.Records+r.Records, rep.Events+r.Events
	}
	for _, p := range drop {
		if _, err := s.dropPartition(ctx, p, at); err != nil {
			return rep, err
		}
	}
	var opened time.Time
	if err := s.pool.QueryRow(ctx, `SELECT opened_at FROM ledger_partitions WHERE closed_at IS NULL`).Scan(&opened); err != nil {
		return rep, fmt.Errorf("postgres: prune: %w", classify(err))
	}
	if !at.Before(opened.Add(PartitionSpan)) {
		if _, err := s.RotatePartitions(ctx, at); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// pruneChain prunes one agent's chain inside tx. The prefix's rows in the
// partitions of drop stay, dead, until those are dropped.
func pruneChain(ctx context.Context, tx pgx.Tx, agentID string, cutoff, at time.Time, drop []int, rep *ledger.PruneReport) error {
	st, events, ok, err := loadPrune(ctx, tx, agentID, cutoff)
	if err != nil || !ok {
		return err
	}
	plan, ok, err := ledger.DecidePrune(agentID, st, at)
	if err != nil || !ok {
		return err
	}
	return writePrune(ctx, tx, agentID, &plan, st.Anchor.Seq, events, drop, rep)
}

// loadPrune locks the agent's row and reads what its chain's prune is
// decided against: the head and anchor, how far the prefix of prunable
// records goes (ledger.PrunePrefix) and what that prefix holds
// (loadPruned); ok is false when there is no prefix past the anchor.
func loadPrune(ctx context.Context, tx pgx.Tx, agentID string, cutoff time.Time) (st ledger.PruneState, events map[ledger.Type][]string, ok bool, err error) {
	var head, anchor []byte
	var anchorSeq *int64
	if err := tx.QueryRow(ctx, `SELECT a.head_seq, a.head_hash, c.seq, c.hash FROM agents a LEFT JOIN chain_anchors c ON c.agent_id = a.id
	    WHERE a.id = $1 FOR UPDATE OF a`, agentID).Scan(&st.Head.Seq, &head, &anchorSeq, &anchor); err != nil {
		return st, nil, false, err
	}
	copy(st.Head.Hash[:], head)
	if anchorSeq != nil {
		st.Anchor.Seq = *anchorSeq
	}
	copy(st.Anchor.Hash[:], anchor)
	var first *int64
	if err := tx.QueryRow(ctx, pruneFirstKept, agentID, cutoff, st.Anchor.Seq).Scan(&first); err != nil {
		return st, nil, false, err
	}
	st.Through = st.Head.Seq
	if first != nil {
		st.Through = *first - 1
	}
	if st.Through <= st.Anchor.Seq {
		return st, nil, false, nil
	}
	rows, err := tx.Query(ctx, `SELECT min(seq), max(seq) FROM ledger_records WHERE agent_id = $1 AND seq > $2 AND event_type <> 'summary'
	    GROUP BY event_type, event_id HAVING min(seq) <= $3 AND max(seq) > $3`, agentID, st.Anchor.Seq, st.Through)
	if err != nil {
		return st, nil, false, err
	}
	var (
		spans []ledger.EventSpan
		span  ledger.EventSpan
	)
	if _, err := pgx.ForEachRow(rows, []any{&span.First, &span.Last}, func() error { spans = append(spans, span); return nil }); err != nil {
		return st, nil, false, err
	}
	if st.Through = ledger.PrunePrefix(st.Through, spans); st.Through <= st.Anchor.Seq {
		return st, nil, false, nil
	}
	var through []byte
	if err := tx.QueryRow(ctx, `SELECT hash FROM ledger_records WHERE agent_id = $1 AND seq = $2`, agentID, st.Through).Scan(&through); err != nil {
		return st, nil, false, err
	}
	copy(st.ThroughHash[:], through)
	events, err = loadPruned(ctx, tx, agentID, &st)
	return st, events, err == nil, err
}

// loadPruned reads what the prefix through st.Through holds: its events'
// rows, counted into st.Rows, and its earlier summaries' rows, carried
// into st.Carried. It returns the events' ids by type.
func loadPruned(ctx context.Context, tx pgx.Tx, agentID string, st *ledger.PruneState) (map[ledger.Type][]string, error) {
	// Past the anchor: a pruned record may still wait in a droppable
	// partition (partitions.go).
	rows, err := tx.Query(ctx, `SELECT DISTINCT event_type, event_id FROM ledger_records
	    WHERE agent_id = $1 AND seq > $3 AND seq <= $2 AND correction_id IS NULL AND event_type <> 'summary'`, agentID, st.Through, st.Anchor.Seq)
	if err != nil {
		return nil, err
	}
	byType := map[ledger.Type][]string{}
	var typ, id string
	if _, err := pgx.ForEachRow(rows, []any{&typ, &id}, func() error {
		byType[ledger.Type(typ)] = append(byType[ledger.Type(typ)], id)
		return nil
	}); err != nil {
		return nil, err
	}
	for t, ids := range byType {
		rows, err := tx.Query(ctx, eventSelect(t)+` WHERE id = ANY($1)`, ids)
		if err != nil {
			return nil, err
		}
		events := map[ledger.EventKey]ledger.StoredEvent{}
		if err := scanEvents(t, events)(rows); err != nil {
			return nil, err
		}
		for _, e := range events {
			st.Rows = append(st.Rows, ledger.SummaryRow{Type: t, Status: e.CurrentStatus(), Voided: e.IsVoided(),
				Month: ledger.MonthOf(e.Event.EndedAt), Count: 1, EscrowCents: e.Event.EscrowAmountCents})
		}
	}
	carried, err := summaries(ctx, tx, ` WHERE agent_id = $1 AND seq <= $2`, agentID, st.Through)
	if err != nil {
		return nil, err
	}
	for _, sm := range carried[agentID] {
		st.Carried = append(st.Carried, sm.Rows...)
	}
	return byType, nil
}

// writePrune applies a decided prune of one chain in one batch: the
// anchor, the prefix's rows deleted (events, their corrections, earlier
// summaries, records; events and records only outside the partitions of
// drop, where they wait to be dropped whole), the summary record appended
// and the head moved. anchor is the chain's anchor before the prune.
func writePrune(ctx context.Context, tx pgx.Tx, agentID string, plan *ledger.PrunePlan, anchor int64, events map[ledger.Type][]string, drop []int, rep *ledger.PruneReport) error {
	through := plan.Anchor.Seq
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO chain_anchors (agent_id, seq, hash) VALUES ($1, $2, $3) ON CONFLICT (agent_id) DO UPDATE SET seq = $2, hash = $3`,
		agentID, plan.Anchor.Seq, plan.Anchor.Hash[:])
	b.Queue(`DELETE FROM ledger_summary_rows WHERE agent_id = $1 AND seq <= $2`, agentID, through)
	b.Queue(`DELETE FROM ledger_summaries WHERE agent_id = $1 AND seq <= $2`, agentID, through)
	for t, ids := range events {
		b.Queue(`DELETE FROM corrections WHERE event_type = $1 AND event_id = ANY($2)`, string(t), ids)
		b.Queue(`DELETE FROM `+ledger.EventTable(t).Name+` WHERE id = ANY($1) AND period <> ALL($2)`, ids, drop)
		rep.Events += int64(len(ids))
	}
	b.Queue(`DELETE FROM ledger_records WHERE agent_id = $1 AND seq > $2 AND seq <= $3 AND period <> ALL($4)`, agentID, anchor, through, drop)
	rep.Records += through - anchor
	sm := &plan.Summary
	b.Queue(`INSERT INTO ledger_summaries (agent_id, seq, created_at, pruned_through, anchor) VALUES ($1, $2, $3, $4, $5)`,
		agentID, sm.Seq, sm.At, sm.PrunedThrough, sm.Anchor[:])
	for _, r := range sm.Rows {
		b.Queue(`INSERT INTO ledger_summary_rows (agent_id, seq, month, event_type, status, voided, count, escrow_cents) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			agentID, sm.Seq, r.Month, string(r.Type), string(r.Status), r.Voided, r.Count, r.EscrowCents)
	}
	b.Queue(`UPDATE agents SET head_seq = $1, head_hash = $2 WHERE id = $3`, plan.Head.Seq, plan.Head.Hash[:], agentID)
	b.Queue(appendRecordsSQL, appendRecordsArgs([]ledger.ChainRecord{{AgentID: agentID, Seq: plan.Record.Seq, Type: ledger.SummaryType,
		EventID: plan.Record.EventID, Hash: plan.Record.Hash}})...)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	rep.Agents++
	return nil
}
