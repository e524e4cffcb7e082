package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"sort"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// verifier collects the first broken link of each chain.
type verifier struct {
	report ledger.VerifyReport
	broken map[string]ledger.BrokenLink
}

func (v *verifier) fail(agent string, seq int64, event, format string, args ...any) {
	if b, ok := v.broken[agent]; ok && b.Seq <= seq {
		return // keep the earliest break in chain order
	}
	v.broken[agent] = ledger.BrokenLink{AgentID: agent, Seq: seq, EventID: event, Reason: fmt.Sprintf(format, args...)}
}

// VerifyLedger implements service.LedgerStore. It reads in one snapshot (a read
// transaction under WAL), so concurrent ingests do not look like breaks.
//
// Chain records hold only what event rows cannot give back (migration
// 00003), so each record's canonical content is rebuilt from the record and
// its event row and hashed with the previous record's hash: an edit to the
// record, to any hashed field of the event row, or to the stored hashes
// breaks the link where it happened. The event rows are then checked
// against the records: each names its latest record and holds that
// record's status.
func (s *Store) VerifyLedger(ctx context.Context) (ledger.VerifyReport, error) {
	v := &verifier{broken: make(map[string]ledger.BrokenLink)}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return v.report, dbErr("begin verify", err)
	}
	defer tx.Rollback()
	if err := v.chains(ctx, tx); err != nil {
		return v.report, err
	}
	if err := v.empty(ctx, tx); err != nil {
		return v.report, err
	}
	for _, t := range []ledger.Type{ledger.ConduitSession, ledger.AP2Transaction} {
		if err := v.rows(ctx, tx, t); err != nil {
			return v.report, err
		}
	}
	for _, b := range v.broken {
		v.report.Broken = append(v.report.Broken, b)
	}
	sort.Slice(v.report.Broken, func(i, j int) bool { return v.report.Broken[i].AgentID < v.report.Broken[j].AgentID })
	return v.report, nil
}

// chainQuery lists every record in chain order with its agent's head (NULL
// when the agents row is missing) and its event row (NULL when deleted).
const chainQuery = `SELECT r.agent_id, a.head_seq, a.head_hash, r.seq, r.event_type, r.event_id, r.status, r.hash,
    c.id IS NOT NULL OR t.id IS NOT NULL, COALESCE(c.agent_id, t.provider_id, ''), COALESCE(c.buyer_id, t.buyer_id, ''),
    COALESCE(c.operator_id, t.operator_id, ''), COALESCE(t.escrow_amount_cents, 0), COALESCE(c.started_at, t.started_at, 0),
    COALESCE(c.completed_at, t.settled_at), COALESCE(c.status, t.status, ''), COALESCE(c.seq, t.seq, 0)
  FROM ledger_records r
  LEFT JOIN agents a ON a.id = r.agent_id
  LEFT JOIN conduit_sessions c ON r.event_type = 'conduit_session' AND c.id = r.event_id
  LEFT JOIN ap2_transactions t ON r.event_type = 'ap2_transaction' AND t.id = r.event_id
  ORDER BY r.agent_id, r.seq`

// chains walks every record in chain order, rebuilding each one's content
// and recomputing its hash from the previous stored hash, and checks each
// chain's end against the agent's head.
func (v *verifier) chains(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, chainQuery)
	if err != nil {
		return dbErr("verify chains", err)
	}
	defer rows.Close()
	var (
		agent      string
		registered bool
		headSeq    int64
		headHash   []byte
		prev       ledger.Hash
		expectSeq  int64
		chain      ledger.Chainer
	)
	end := func() {
		if agent == "" || !registered {
			return
		}
		if expectSeq-1 != headSeq || !bytes.Equal(prev[:], headHash) {
			v.fail(agent, expectSeq-1, "", "chain ends at seq %d but the agent's head is seq %d with another hash (records removed or head altered)", expectSeq-1, headSeq)
		}
	}
	for rows.Next() {
		var (
			id, typ, event, status, rowStatus string
			rowAgent, rowBuyer, rowOperator   string
			seq, rowSeq, started              int64
			hs, ended                         sql.NullInt64
			hh, hash                          []byte
			found                             bool
			rec                               ledger.Record
		)
		if err := rows.Scan(&id, &hs, &hh, &seq, &typ, &event, &status, &hash,
			&found, &rowAgent, &rowBuyer, &rowOperator, &rec.Event.EscrowAmountCents, &started, &ended, &rowStatus, &rowSeq); err != nil {
			return dbErr("verify chains", err)
		}
		if id != agent {
			end()
			v.report.Agents++
			agent, registered, headSeq, headHash, prev, expectSeq = id, hs.Valid, hs.Int64, hh, ledger.Hash{}, 1
			if !registered {
				v.fail(agent, seq, event, "chain records exist for an agent that is not registered")
			}
		}
		v.report.Records++
		if seq != expectSeq {
			v.fail(agent, expectSeq, "", "record seq %d is missing (next present is %d)", expectSeq, seq)
		}
		expectSeq = seq + 1
		switch {
		case !found:
			v.fail(agent, seq, event, "%s recorded in the chain has no row (deleted)", typ)
		case rowAgent != agent:
			v.fail(agent, seq, event, "%s row belongs to agent %q, not to this chain", typ, rowAgent)
		default:
			rec.Seq, rec.Operator = seq, rowOperator
			rec.Event.Type, rec.Event.ID, rec.Event.AgentID, rec.Event.BuyerID = ledger.Type(typ), event, rowAgent, rowBuyer
			rec.Event.Status, rec.Event.StartedAt = ledger.Status(status), fromMicros(started)
			if rec.Event.Status.Terminal() {
				// A terminal status is final: the row's end time is this
				// record's.
				rec.Event.EndedAt = nullMicros(ended)
			}
			if got, _ := chain.Link(prev, &rec); !bytes.Equal(got[:], hash) {
				v.fail(agent, seq, event, "hash mismatch: the chain record or its %s row was altered outside the ledger", typ)
			}
			switch {
			case seq > rowSeq:
				v.fail(agent, seq, event, "%s row is not at its latest chain record (it names seq %d)", typ, rowSeq)
			case seq == rowSeq && rowStatus != status:
				v.fail(agent, seq, event, "%s row differs from its chain record (status %s, recorded %s; altered outside the ledger)", typ, rowStatus, status)
			}
		}
		copy(prev[:], hash)
	}
	if err := rows.Err(); err != nil {
		return dbErr("verify chains", err)
	}
	end()
	return nil
}

// empty checks the agents that have no chain record: their head must be the
// empty chain's.
func (v *verifier) empty(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, head_seq, head_hash FROM agents a
	  WHERE NOT EXISTS (SELECT 1 FROM ledger_records r WHERE r.agent_id = a.id)`)
	if err != nil {
		return dbErr("verify chains", err)
	}
	defer rows.Close()
	var zero ledger.Hash
	for rows.Next() {
		var id string
		var headSeq int64
		var headHash []byte
		if err := rows.Scan(&id, &headSeq, &headHash); err != nil {
			return dbErr("verify chains", err)
		}
		v.report.Agents++
		if headSeq != 0 || !bytes.Equal(headHash, zero[:]) {
			v.fail(id, 0, "", "chain ends at seq 0 but the agent's head is seq %d with another hash (records removed or head altered)", headSeq)
		}
	}
	return dbErr("verify chains", rows.Err())
}

// rows checks that every event row names a chain record of its own event
// (the chain walk checks that it is the latest and holds its status).
func (v *verifier) rows(ctx context.Context, tx *sql.Tx, t ledger.Type) error {
	q := `SELECT e.id, e.agent_id, e.seq, r.event_type, r.event_id
	  FROM conduit_sessions e LEFT JOIN ledger_records r ON r.agent_id = e.agent_id AND r.seq = e.seq`
	if t == ledger.AP2Transaction {
		q = `SELECT e.id, e.provider_id, e.seq, r.event_type, r.event_id
	  FROM ap2_transactions e LEFT JOIN ledger_records r ON r.agent_id = e.provider_id AND r.seq = e.seq`
	}
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return dbErr("verify events", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, agent string
		var seq int64
		var typ, event sql.NullString
		if err := rows.Scan(&id, &agent, &seq, &typ, &event); err != nil {
			return dbErr("verify events", err)
		}
		v.report.Events++
		switch {
		case !typ.Valid:
			v.fail(agent, seq, id, "%s row points at a chain record that does not exist", t)
		case typ.String != string(t) || event.String != id:
			v.fail(agent, seq, id, "%s row points at chain record %d, which records %s %s", t, seq, typ.String, event.String)
		}
	}
	return dbErr("verify events", rows.Err())
}
