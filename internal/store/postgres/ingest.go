package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// eventKey identifies an event: ids are unique per type.
type eventKey struct {
	typ ledger.Type
	id  string
}

// eventState is an event's current state while a batch is applied.
type eventState struct {
	ev       ledger.Event
	operator string
	seq      int64
	inDB     bool  // the row exists (update it) or not (insert it)
	dbSeq    int64 // seq of the row as read, guarding the update
	dirty    bool
}

// head is an agent's chain head while a batch is applied.
type head struct {
	seq      int64
	hash     ledger.Hash
	terminal int64 // seq of the batch's last terminal report, 0 if none
	exists   bool  // the agents row exists
	dirty    bool
}

// chainRecord is a ledger_records row to append.
type chainRecord struct {
	agent   string
	seq     int64
	typ     ledger.Type
	id      string
	content []byte
	hash    ledger.Hash
}

// Ingest records a batch of events; see service.LedgerStore.
//
// The batch runs in one transaction: it locks the agents rows it touches
// (FOR NO KEY UPDATE, in id order, so concurrent batches cannot deadlock on
// them and RecomputeAll's foreign-key checks are not blocked), reads the
// current state of its events, decides every outcome in Go, and writes the
// result with a handful of set-based statements in one pipeline. A new
// agent has no row to lock: two batches creating it race on its primary
// key, and the loser is re-run from the start, when the row exists.
func (s *Store) Ingest(ctx context.Context, b ledger.Batch) ([]ledger.Outcome, error) {
	operator, events := b.Operator, b.Events
	if err := ledger.CheckID("operator", operator); err != nil {
		return nil, fmt.Errorf("postgres: ingest: %w", err)
	}
	out := make([]ledger.Outcome, len(events))
	valid := make([]int, 0, len(events))
	for i := range events {
		if err := events[i].Validate(); err != nil {
			out[i] = ledger.Outcome{Status: ledger.OutcomeRejected, Err: err}
			continue
		}
		valid = append(valid, i)
	}
	if len(valid) == 0 {
		return out, nil
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		return ingestTx(ctx, tx, operator, events, valid, out)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: ingest: %w", err)
	}
	return out, nil
}

func ingestTx(ctx context.Context, tx pgx.Tx, operator string, events []ledger.Event, valid []int, out []ledger.Outcome) error {
	var agentIDs, conduitIDs, ap2IDs []string
	for _, i := range valid {
		e := &events[i]
		agentIDs = append(agentIDs, e.AgentID)
		if e.Type == ledger.ConduitSession {
			conduitIDs = append(conduitIDs, e.ID)
		} else {
			ap2IDs = append(ap2IDs, e.ID)
		}
	}
	slices.Sort(agentIDs)
	agentIDs = slices.Compact(agentIDs)

	heads := make(map[string]*head, len(agentIDs))
	for _, id := range agentIDs {
		heads[id] = &head{}
	}
	state := make(map[eventKey]*eventState, len(valid))

	// Read phase, one round trip. The lock comes first: later statements
	// of the pipeline take their snapshots after it is granted, so they see
	// every batch that held these agents before us.
	b := &pgx.Batch{}
	b.Queue(`SELECT id, head_seq, head_hash FROM agents WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`, agentIDs).
		Query(func(rows pgx.Rows) error {
			var id string
			var seq int64
			var hash []byte
			_, err := pgx.ForEachRow(rows, []any{&id, &seq, &hash}, func() error {
				h := heads[id]
				h.seq, h.exists = seq, true
				if len(hash) != ledger.HashSize {
					return fmt.Errorf("agent %s: head_hash has %d bytes", id, len(hash))
				}
				copy(h.hash[:], hash)
				return nil
			})
			return err
		})
	if len(conduitIDs) > 0 {
		b.Queue(`SELECT id, agent_id, coalesce(buyer_id, ''), operator_id, status, 0::bigint, started_at, completed_at, seq
			FROM conduit_sessions WHERE id = ANY($1)`, conduitIDs).Query(scanEvents(ledger.ConduitSession, state))
	}
	if len(ap2IDs) > 0 {
		b.Queue(`SELECT id, provider_id, buyer_id, operator_id, status, escrow_amount_cents, started_at, settled_at, seq
			FROM ap2_transactions WHERE id = ANY($1)`, ap2IDs).Query(scanEvents(ledger.AP2Transaction, state))
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}

	// Decide, in batch order: later events see earlier ones.
	var records []chainRecord
	invalidate := map[string]bool{}
	for _, i := range valid {
		e := events[i]
		key := eventKey{e.Type, e.ID}
		cur := state[key]
		if cur != nil {
			// Any decision but a conflict implies the same agent, whose row
			// we hold locked; a conflict rests on immutable fields only.
			d, err := ledger.Classify(&cur.ev, cur.operator, &e, operator)
			if err != nil {
				out[i] = ledger.Outcome{Status: ledger.OutcomeRejected, Err: err}
				continue
			}
			if d == ledger.Duplicate {
				out[i] = ledger.Outcome{Status: ledger.OutcomeDuplicate}
				continue
			}
		}
		h := heads[e.AgentID]
		h.seq++
		rec := ledger.Record{Event: e, Operator: operator, Seq: h.seq}
		content := rec.Canonical()
		h.hash = ledger.Link(h.hash, content)
		h.dirty = true
		records = append(records, chainRecord{e.AgentID, h.seq, e.Type, e.ID, content, h.hash})
		if cur == nil {
			cur = &eventState{operator: operator}
			state[key] = cur
		}
		cur.ev, cur.seq, cur.dirty = e, h.seq, true
		if e.Status.Terminal() {
			invalidate[e.AgentID] = true
			h.terminal = h.seq
		}
		out[i] = ledger.Outcome{Status: ledger.OutcomeAccepted}
	}
	if len(records) == 0 {
		return nil
	}
	return writeBatch(ctx, tx, operator, heads, state, records, invalidate)
}

// scanEvents reads event rows into state.
func scanEvents(typ ledger.Type, state map[eventKey]*eventState) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		var (
			st      eventState
			status  string
			started time.Time
			ended   *time.Time
		)
		e := &st.ev
		_, err := pgx.ForEachRow(rows,
			[]any{&e.ID, &e.AgentID, &e.BuyerID, &st.operator, &status, &e.EscrowAmountCents, &started, &ended, &st.seq},
			func() error {
				e.Type, e.Status, e.StartedAt, e.EndedAt = typ, ledger.Status(status), utc(started), timeOrZero(ended)
				c := st
				c.inDB, c.dbSeq = true, st.seq
				state[eventKey{typ, e.ID}] = &c
				return nil
			})
		return err
	}
}

// writeBatch writes a decided batch in one pipeline.
func writeBatch(ctx context.Context, tx pgx.Tx, operator string, heads map[string]*head,
	state map[eventKey]*eventState, records []chainRecord, invalidate map[string]bool) error {
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO operators (id) VALUES ($1) ON CONFLICT DO NOTHING`, operator)

	var newAgents, oldAgents []string
	var newSeq, oldSeq, newTerminal, oldTerminal []int64
	var newHash, oldHash [][]byte
	for id, h := range heads {
		if !h.dirty {
			continue
		}
		if h.exists {
			oldAgents, oldSeq, oldHash = append(oldAgents, id), append(oldSeq, h.seq), append(oldHash, h.hash[:])
			oldTerminal = append(oldTerminal, h.terminal)
		} else {
			newAgents, newSeq, newHash = append(newAgents, id), append(newSeq, h.seq), append(newHash, h.hash[:])
			newTerminal = append(newTerminal, h.terminal)
		}
	}
	if len(newAgents) > 0 {
		// A plain INSERT: if a concurrent batch creates the same agent, the
		// unique violation re-runs this batch, which then locks the row.
		b.Queue(`INSERT INTO agents (id, head_seq, head_hash, terminal_seq)
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::bigint[]) ORDER BY 1`, newAgents, newSeq, newHash, newTerminal)
	}

	var c, a eventColumns
	var cu, au eventColumns
	for _, st := range state {
		if !st.dirty {
			continue
		}
		switch {
		case st.ev.Type == ledger.ConduitSession && !st.inDB:
			c.add(st)
		case st.ev.Type == ledger.ConduitSession:
			cu.add(st)
		case !st.inDB:
			a.add(st)
		default:
			au.add(st)
		}
	}
	useCopy := len(records) >= copyThreshold
	if useCopy {
		// Event and chain rows go by COPY after the agents they reference.
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		b = &pgx.Batch{}
		if err := copyNew(ctx, tx, operator, &c, &a, records); err != nil {
			return err
		}
	} else {
		queueNew(b, operator, &c, &a, records)
	}
	checkRows := func(what string, want int) func(pgconn.CommandTag) error {
		return func(ct pgconn.CommandTag) error {
			if got := ct.RowsAffected(); got != int64(want) {
				return fmt.Errorf("%s: %d rows changed, want %d", what, got, want)
			}
			return nil
		}
	}
	// Transitions: the agent is locked, so the guard on seq only catches a
	// bug, never a race.
	if len(cu.id) > 0 {
		b.Queue(`UPDATE conduit_sessions t SET status = u.status, completed_at = u.completed_at, seq = u.seq, updated_at = now()
			FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::bigint[], $5::bigint[]) AS u(id, status, completed_at, seq, old_seq)
			WHERE t.id = u.id AND t.seq = u.old_seq`,
			cu.id, cu.status, cu.ended, cu.seq, cu.oldSeq).Exec(checkRows("conduit_sessions update", len(cu.id)))
	}
	if len(au.id) > 0 {
		b.Queue(`UPDATE ap2_transactions t SET status = u.status, settled_at = u.settled_at, seq = u.seq, updated_at = now()
			FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::bigint[], $5::bigint[]) AS u(id, status, settled_at, seq, old_seq)
			WHERE t.id = u.id AND t.seq = u.old_seq`,
			au.id, au.status, au.ended, au.seq, au.oldSeq).Exec(checkRows("ap2_transactions update", len(au.id)))
	}

	if len(oldAgents) > 0 {
		// terminal_seq moves to the batch's last terminal report, if any:
		// that alone stops every cache entry read before it from being
		// served (see store.go, "Concurrency").
		b.Queue(`UPDATE agents t SET head_seq = u.seq, head_hash = u.hash, terminal_seq = greatest(t.terminal_seq, u.terminal)
			FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::bigint[]) AS u(id, seq, hash, terminal) WHERE t.id = u.id`,
			oldAgents, oldSeq, oldHash, oldTerminal).Exec(checkRows("agents update", len(oldAgents)))
	}
	if len(invalidate) > 0 {
		ids := make([]string, 0, len(invalidate))
		for id := range invalidate {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		// Defence in depth: terminal_seq above already retires these
		// entries. SKIP LOCKED keeps a batch from waiting for a running
		// RecomputeAll or RefreshScore that has written the row: that
		// writer read the ledger before this batch commits, so its entry
		// carries an older terminal_seq and is not served either.
		b.Queue(`UPDATE swarmscore_cache SET valid_until = computed_at
			WHERE agent_id IN (SELECT agent_id FROM swarmscore_cache
				WHERE agent_id = ANY($1) AND valid_until <> computed_at
				ORDER BY agent_id FOR UPDATE SKIP LOCKED)`, ids)
	}
	return tx.SendBatch(ctx, b).Close()
}

// copyThreshold is the number of chain records from which a batch inserts
// its new rows by COPY (fastest for many rows, but one round trip per table)
// rather than by INSERT … SELECT FROM unnest(…) in the pipeline.
const copyThreshold = 64

// queueNew queues the inserts of new events and chain records.
func queueNew(b *pgx.Batch, operator string, c, a *eventColumns, records []chainRecord) {
	if len(c.id) > 0 {
		b.Queue(`INSERT INTO conduit_sessions (id, agent_id, buyer_id, operator_id, status, started_at, completed_at, seq)
			SELECT id, agent_id, nullif(buyer_id, ''), $8, status, started_at, completed_at, seq
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::bigint[])
				AS u(id, agent_id, buyer_id, status, started_at, completed_at, seq)`,
			c.id, c.agent, c.buyer, c.status, c.started, c.ended, c.seq, operator)
	}
	if len(a.id) > 0 {
		b.Queue(`INSERT INTO ap2_transactions (id, provider_id, buyer_id, operator_id, status, escrow_amount_cents, started_at, settled_at, seq)
			SELECT id, provider_id, buyer_id, $9, status, amount, started_at, settled_at, seq
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[], $7::timestamptz[], $8::bigint[])
				AS u(id, provider_id, buyer_id, status, amount, started_at, settled_at, seq)`,
			a.id, a.agent, a.buyer, a.status, a.amount, a.started, a.ended, a.seq, operator)
	}
	ra := make([]string, len(records))
	rs := make([]int64, len(records))
	rt := make([]string, len(records))
	ri := make([]string, len(records))
	rc := make([][]byte, len(records))
	rh := make([][]byte, len(records))
	for k := range records {
		r := &records[k]
		ra[k], rs[k], rt[k], ri[k], rc[k], rh[k] = r.agent, r.seq, string(r.typ), r.id, r.content, r.hash[:]
	}
	b.Queue(`INSERT INTO ledger_records (agent_id, seq, event_type, event_id, content, hash)
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bytea[], $6::bytea[])`,
		ra, rs, rt, ri, rc, rh)
}

// copyNew inserts new events and chain records by COPY.
func copyNew(ctx context.Context, tx pgx.Tx, operator string, c, a *eventColumns, records []chainRecord) error {
	if len(c.id) > 0 {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"conduit_sessions"},
			[]string{"id", "agent_id", "buyer_id", "operator_id", "status", "started_at", "completed_at", "seq"},
			pgx.CopyFromSlice(len(c.id), func(i int) ([]any, error) {
				var buyer any
				if c.buyer[i] != "" {
					buyer = c.buyer[i]
				}
				return []any{c.id[i], c.agent[i], buyer, operator, c.status[i], c.started[i], c.ended[i], c.seq[i]}, nil
			}))
		if err != nil {
			return err
		}
	}
	if len(a.id) > 0 {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"ap2_transactions"},
			[]string{"id", "provider_id", "buyer_id", "operator_id", "status", "escrow_amount_cents", "started_at", "settled_at", "seq"},
			pgx.CopyFromSlice(len(a.id), func(i int) ([]any, error) {
				return []any{a.id[i], a.agent[i], a.buyer[i], operator, a.status[i], a.amount[i], a.started[i], a.ended[i], a.seq[i]}, nil
			}))
		if err != nil {
			return err
		}
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"ledger_records"},
		[]string{"agent_id", "seq", "event_type", "event_id", "content", "hash"},
		pgx.CopyFromSlice(len(records), func(i int) ([]any, error) {
			r := &records[i]
			return []any{r.agent, r.seq, string(r.typ), r.id, r.content, r.hash[:]}, nil
		}))
	return err
}

// eventColumns holds events column-wise for unnest.
type eventColumns struct {
	id, agent, buyer, status []string
	amount, seq, oldSeq      []int64
	started                  []time.Time
	ended                    []*time.Time
}

func (c *eventColumns) add(st *eventState) {
	e := &st.ev
	c.id = append(c.id, e.ID)
	c.agent = append(c.agent, e.AgentID)
	c.buyer = append(c.buyer, e.BuyerID)
	c.status = append(c.status, string(e.Status))
	c.amount = append(c.amount, e.EscrowAmountCents)
	c.seq = append(c.seq, st.seq)
	c.oldSeq = append(c.oldSeq, st.dbSeq)
	c.started = append(c.started, e.StartedAt)
	if e.EndedAt.IsZero() {
		c.ended = append(c.ended, nil)
	} else {
		t := e.EndedAt
		c.ended = append(c.ended, &t)
	}
}
