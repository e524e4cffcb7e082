package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Ingest loads what ledger.Prepare names and writes what Decide returns;
// see service.LedgerStore.
//
// The batch runs in one transaction: it locks the agents rows it touches
// (FOR NO KEY UPDATE, in id order, so concurrent batches cannot deadlock on
// them and RecomputeAll's foreign-key checks are not blocked), reads the
// current state of its events, and writes the plan with a handful of
// set-based statements in one pipeline. A new agent has no row to lock: two
// batches creating it race on its primary key, and the loser is run again
// from the start (and decided again), when the row exists.
func (s *Store) Ingest(ctx context.Context, b ledger.Batch) ([]ledger.Outcome, error) {
	p, err := ledger.Prepare(b)
	if err != nil {
		return nil, fmt.Errorf("postgres: ingest: %w", err)
	}
	if len(p.Events) == 0 {
		return p.Decide(ledger.State{}).Outcomes, nil
	}
	var plan ledger.Plan
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		st, err := load(ctx, tx, p)
		if err != nil {
			return err
		}
		plan = p.Decide(st)
		if plan.Empty() {
			return nil
		}
		return writePlan(ctx, tx, &plan)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: ingest: %w", err)
	}
	return plan.Outcomes, nil
}

// keyPlans makes every statement after it in the transaction find rows by
// their keys, whatever the planner believes of the tables' sizes.
//
// Without it, a fresh database's ingest collapsed (issue 25): the event
// tables' key is (id, period), so without statistics (none until an
// ANALYZE, and with autovacuum off none ever) the planner takes an id to
// match 0.5% of the rows, and a batch's 1000 ids all of them: the lookups
// and the UPDATE … FROM unnest joins scan the whole table, once per batch.
// A generic plan made while the tables were nearly empty is also kept for
// the life of the connection, statistics or not. With sequential scans,
// hash and merge joins priced out, the only plans left are index probes
// (a bitmap scan for = ANY, a nested loop for the joins), cheap at any
// size; nothing the ingest transaction runs needs a scan. SET LOCAL ends
// with the transaction, so nothing else on the connection is affected.
const keyPlans = `SELECT set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true),
	set_config('enable_mergejoin', 'off', true)`

// load locks and reads the chain heads of the agents p names and reads the
// stored rows of its events, in one round trip. The lock comes first: the
// later statements of the pipeline take their snapshots after it is
// granted, so they see every batch that held these agents before this one.
func load(ctx context.Context, tx pgx.Tx, p *ledger.Prepared) (ledger.State, error) {
	st := ledger.State{Heads: make(map[string]ledger.Head, len(p.Agents)), Events: make(map[ledger.EventKey]ledger.StoredEvent, len(p.Events))}
	b := &pgx.Batch{}
	b.Queue(keyPlans)
	b.Queue(`SELECT id, head_seq, head_hash FROM agents WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`, p.Agents).
		Query(func(rows pgx.Rows) error {
			var id string
			var h ledger.Head
			var hash []byte
			_, err := pgx.ForEachRow(rows, []any{&id, &h.Seq, &hash}, func() error {
				if len(hash) != ledger.HashSize {
					return fmt.Errorf("agent %s: head_hash has %d bytes", id, len(hash))
				}
				copy(h.Hash[:], hash)
				st.Heads[id] = h
				return nil
			})
			return err
		})
	for _, t := range ledger.Types {
		if ids := p.IDs(t); len(ids) > 0 {
			// The cast makes the text differ from Prune's same lookup, so
			// a plan that one cached on the connection under the default
			// settings is never this one's (prepared statements are cached
			// by text, and a cached plan ignores later settings).
			b.Queue(eventSelect(t)+` WHERE id = ANY($1::text[])`, ids).Query(scanEvents(t, st.Events))
		}
	}
	return st, tx.SendBatch(ctx, b).Close()
}

// scanEvents reads event rows into events.
func scanEvents(typ ledger.Type, events map[ledger.EventKey]ledger.StoredEvent) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		var (
			se                            ledger.StoredEvent
			status                        string
			started                       time.Time
			ended                         *time.Time
			reportedAgent, reportedStatus *string
			voided                        bool
		)
		e := &se.Event
		_, err := pgx.ForEachRow(rows,
			[]any{&e.ID, &e.AgentID, &e.BuyerID, &se.Operator, &status, &e.EscrowAmountCents, &started, &ended, &se.Seq,
				&reportedAgent, &reportedStatus, &voided},
			func() error {
				e.Type, e.Status, e.StartedAt, e.EndedAt = typ, ledger.Status(status), utc(started), timeOrZero(ended)
				se.Corrected = nil
				se.SetReported(reportedAgent, reportedStatus, voided)
				events[ledger.EventKey{Type: typ, ID: e.ID}] = se
				return nil
			})
		return err
	}
}

// writePlan writes a decided batch in one pipeline.
func writePlan(ctx context.Context, tx pgx.Tx, plan *ledger.Plan) error {
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO operators (id) VALUES ($1) ON CONFLICT DO NOTHING`, plan.Operator)

	var newAgents, oldAgents []string
	var newSeq, oldSeq, newTerminal, oldTerminal []int64
	var newHash, oldHash [][]byte
	for i := range plan.Heads {
		h := &plan.Heads[i]
		if h.New {
			newAgents, newSeq, newHash = append(newAgents, h.AgentID), append(newSeq, h.Head.Seq), append(newHash, h.Head.Hash[:])
			newTerminal = append(newTerminal, h.Terminal)
		} else {
			oldAgents, oldSeq, oldHash = append(oldAgents, h.AgentID), append(oldSeq, h.Head.Seq), append(oldHash, h.Head.Hash[:])
			oldTerminal = append(oldTerminal, h.Terminal)
		}
	}
	if len(newAgents) > 0 {
		// A plain INSERT: if a concurrent batch creates the same agent, the
		// unique violation re-runs this batch, which then locks the row.
		b.Queue(`INSERT INTO agents (id, head_seq, head_hash, terminal_seq)
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::bigint[]) ORDER BY 1`, newAgents, newSeq, newHash, newTerminal)
	}

	var c, a, o eventColumns
	var cu, au, ou eventColumns
	for i := range plan.Inserts {
		switch w := &plan.Inserts[i]; w.Event.Type {
		case ledger.ConduitSession:
			c.add(w)
		case ledger.AP2Transaction:
			a.add(w)
		default:
			o.add(w)
		}
	}
	for i := range plan.Updates {
		switch w := &plan.Updates[i]; w.Event.Type {
		case ledger.ConduitSession:
			cu.add(w)
		case ledger.AP2Transaction:
			au.add(w)
		default:
			ou.add(w)
		}
	}
	if len(plan.Records) >= copyThreshold {
		// Event and chain rows go by COPY after the agents they reference.
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		b = &pgx.Batch{}
		if err := copyNew(ctx, tx, plan.Operator, &c, &a); err != nil {
			return err
		}
	} else {
		queueNew(b, plan.Operator, &c, &a)
	}
	checkRows := func(what string, want int) func(pgconn.CommandTag) error {
		return func(ct pgconn.CommandTag) error {
			if got := ct.RowsAffected(); got != int64(want) {
				return fmt.Errorf("%s: %d rows changed, want %d", what, got, want)
			}
			return nil
		}
	}
	// Task offers are few: always by INSERT, after the agents they name.
	if len(o.id) > 0 {
		b.Queue(`INSERT INTO task_offers (id, agent_id, buyer_id, operator_id, status, started_at, decided_at, seq)
			SELECT id, agent_id, buyer_id, $8, status, started_at, decided_at, seq
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::bigint[])
				AS u(id, agent_id, buyer_id, status, started_at, decided_at, seq)`,
			o.id, o.agent, o.buyer, o.status, o.started, o.ended, o.seq, plan.Operator)
	}
	// Transitions: the agent is locked, so the guard on seq only catches a
	// bug, never a race.
	if len(ou.id) > 0 {
		b.Queue(`UPDATE task_offers t SET status = u.status, decided_at = u.decided_at, seq = u.seq, updated_at = now()
			FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::bigint[], $5::bigint[]) AS u(id, status, decided_at, seq, old_seq)
			WHERE t.id = u.id AND t.seq = u.old_seq`,
			ou.id, ou.status, ou.ended, ou.seq, ou.oldSeq).Exec(checkRows("task_offers update", len(ou.id)))
	}
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
	if ids := plan.Invalidated(); len(ids) > 0 {
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
	// The proof_hash of the Conduit sessions written that carry one,
	// where the row has none yet (the first report that carries it wins:
	// ledger.Event.ProofHash).
	for _, ws := range [][]ledger.EventWrite{plan.Inserts, plan.Updates} {
		for i := range ws {
			if e := &ws[i].Event; e.Type == ledger.ConduitSession && e.ProofHash != "" {
				b.Queue(`UPDATE conduit_sessions SET proof_hash = $1 WHERE id = $2 AND proof_hash IS NULL`, e.ProofHash, e.ID)
			}
		}
	}
	// The chain records last: appending them to the log takes the lock
	// every appender shares (appendRecordsSQL).
	switch {
	case len(plan.Records) >= copyThreshold:
		// Many records go by COPY, numbered from the size this batch's
		// last statement moves (appendRecordsSQL's lock, taken last).
		var first int64
		b.Queue(`UPDATE log_state SET size = size + $1 RETURNING size - $1`, int64(len(plan.Records))).QueryRow(func(r pgx.Row) error {
			return r.Scan(&first)
		})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return copyRecords(ctx, tx, plan.Records, first)
	case len(plan.Records) > 0:
		b.Queue(appendRecordsSQL, appendRecordsArgs(plan.Records)...).Exec(checkRows("log append", len(plan.Records)))
	}
	return tx.SendBatch(ctx, b).Close()
}

// copyThreshold is the number of chain records from which a batch inserts
// its new rows by COPY (fastest for many rows, but one round trip per table)
// rather than by INSERT … SELECT FROM unnest(…) in the pipeline.
const copyThreshold = 64

// queueNew queues the inserts of new events.
func queueNew(b *pgx.Batch, operator string, c, a *eventColumns) {
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
}

// copyNew inserts new events by COPY.
func copyNew(ctx context.Context, tx pgx.Tx, operator string, c, a *eventColumns) error {
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
	return nil
}

// copyRecords inserts chain records by COPY, numbered from first in the
// log, and their leaves.
func copyRecords(ctx context.Context, tx pgx.Tx, records []ledger.ChainRecord, first int64) error {
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"ledger_records"},
		[]string{"agent_id", "seq", "event_type", "event_id", "status", "hash", "received_at", "log_index"},
		pgx.CopyFromSlice(len(records), func(i int) ([]any, error) {
			r := &records[i]
			return []any{r.AgentID, r.Seq, string(r.Type), r.EventID, string(r.Status), r.Hash[:], optTime(r.ReceivedAt), first + int64(i)}, nil
		}))
	if err != nil {
		return err
	}
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"log_leaves"}, []string{"idx", "hash", "seq"},
		pgx.CopyFromSlice(len(records), func(i int) ([]any, error) {
			r := &records[i]
			return []any{first + int64(i), r.Hash[:], r.Seq}, nil
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

func (c *eventColumns) add(w *ledger.EventWrite) {
	e := &w.Event
	c.id = append(c.id, e.ID)
	c.agent = append(c.agent, e.AgentID)
	c.buyer = append(c.buyer, e.BuyerID)
	c.status = append(c.status, string(e.Status))
	c.amount = append(c.amount, e.EscrowAmountCents)
	c.seq = append(c.seq, w.Seq)
	c.oldSeq = append(c.oldSeq, w.LoadedSeq)
	c.started = append(c.started, e.StartedAt)
	if e.EndedAt.IsZero() {
		c.ended = append(c.ended, nil)
	} else {
		t := e.EndedAt
		c.ended = append(c.ended, &t)
	}
}

// optTime is t, or NULL when t is zero.
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
