package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"sort"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

// verifier collects the first broken link of each chain.
type verifier struct {
	report store.VerifyReport
	broken map[string]store.BrokenLink
}

func (v *verifier) fail(agent string, seq int64, event, format string, args ...any) {
	if b, ok := v.broken[agent]; ok && b.Seq <= seq {
		return // keep the earliest break in chain order
	}
	v.broken[agent] = store.BrokenLink{AgentID: agent, Seq: seq, EventID: event, Reason: fmt.Sprintf(format, args...)}
}

// VerifyLedger implements store.Store. It reads in one snapshot (a read
// transaction under WAL), so concurrent ingests do not look like breaks.
func (s *Store) VerifyLedger(ctx context.Context) (store.VerifyReport, error) {
	v := &verifier{broken: make(map[string]store.BrokenLink)}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return v.report, dbErr("begin verify", err)
	}
	defer tx.Rollback()
	if err := v.chains(ctx, tx); err != nil {
		return v.report, err
	}
	for _, t := range []ledger.Type{ledger.ConduitSession, ledger.AP2Transaction} {
		if err := v.rows(ctx, tx, t); err != nil {
			return v.report, err
		}
		if err := v.latest(ctx, tx, t); err != nil {
			return v.report, err
		}
	}
	for _, b := range v.broken {
		v.report.Broken = append(v.report.Broken, b)
	}
	sort.Slice(v.report.Broken, func(i, j int) bool { return v.report.Broken[i].AgentID < v.report.Broken[j].AgentID })
	return v.report, nil
}

// chains walks every record in chain order, recomputing each hash from the
// previous one, and checks each chain's end against the agent's head.
func (v *verifier) chains(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT a.id, a.head_seq, a.head_hash, r.seq, r.event_type, r.event_id, r.content, r.hash
	  FROM agents a LEFT JOIN ledger_records r ON r.agent_id = a.id ORDER BY a.id, r.seq`)
	if err != nil {
		return dbErr("verify chains", err)
	}
	defer rows.Close()
	var (
		agent     string
		headSeq   int64
		headHash  []byte
		prev      ledger.Hash
		expectSeq int64
	)
	end := func() {
		if agent == "" {
			return
		}
		if expectSeq-1 != headSeq || !bytes.Equal(prev[:], headHash) {
			v.fail(agent, expectSeq-1, "", "chain ends at seq %d but the agent's head is seq %d with another hash (records removed or head altered)", expectSeq-1, headSeq)
		}
	}
	for rows.Next() {
		var id string
		var hs int64
		var hh []byte
		var seq sql.NullInt64
		var typ, event sql.NullString
		var content, hash []byte
		if err := rows.Scan(&id, &hs, &hh, &seq, &typ, &event, &content, &hash); err != nil {
			return dbErr("verify chains", err)
		}
		if id != agent {
			end()
			v.report.Agents++
			agent, headSeq, headHash, prev, expectSeq = id, hs, hh, ledger.Hash{}, 1
		}
		if !seq.Valid { // an agent without records
			continue
		}
		v.report.Records++
		if seq.Int64 != expectSeq {
			v.fail(agent, expectSeq, "", "record seq %d is missing (next present is %d)", expectSeq, seq.Int64)
		}
		rec, err := ledger.ParseCanonical(content)
		switch {
		case err != nil:
			v.fail(agent, seq.Int64, event.String, "record content is unreadable: %v", err)
		case rec.Seq != seq.Int64 || rec.Event.AgentID != agent || rec.Event.ID != event.String || string(rec.Event.Type) != typ.String:
			v.fail(agent, seq.Int64, event.String, "record columns disagree with its hashed content")
		}
		if got := ledger.Link(prev, content); !bytes.Equal(got[:], hash) {
			v.fail(agent, seq.Int64, event.String, "hash mismatch: the record or its predecessor was altered")
		}
		copy(prev[:], hash)
		expectSeq = seq.Int64 + 1
	}
	if err := rows.Err(); err != nil {
		return dbErr("verify chains", err)
	}
	end()
	return nil
}

// rows checks that every event row is exactly the content of the chain
// record it points at.
func (v *verifier) rows(ctx context.Context, tx *sql.Tx, t ledger.Type) error {
	q := `SELECT e.id, e.agent_id, COALESCE(e.buyer_id, ''), e.operator_id, e.status, 0, e.started_at, e.completed_at, e.seq, r.content
	  FROM conduit_sessions e LEFT JOIN ledger_records r ON r.agent_id = e.agent_id AND r.seq = e.seq`
	if t == ledger.AP2Transaction {
		q = `SELECT e.id, e.provider_id, e.buyer_id, e.operator_id, e.status, e.escrow_amount_cents, e.started_at, e.settled_at, e.seq, r.content
	  FROM ap2_transactions e LEFT JOIN ledger_records r ON r.agent_id = e.provider_id AND r.seq = e.seq`
	}
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return dbErr("verify events", err)
	}
	defer rows.Close()
	for rows.Next() {
		rec := ledger.Record{Event: ledger.Event{Type: t}}
		var status string
		var started int64
		var ended sql.NullInt64
		var content []byte
		if err := rows.Scan(&rec.Event.ID, &rec.Event.AgentID, &rec.Event.BuyerID, &rec.Operator, &status,
			&rec.Event.EscrowAmountCents, &started, &ended, &rec.Seq, &content); err != nil {
			return dbErr("verify events", err)
		}
		v.report.Events++
		rec.Event.Status, rec.Event.StartedAt, rec.Event.EndedAt = ledger.Status(status), fromMicros(started), nullMicros(ended)
		switch {
		case content == nil:
			v.fail(rec.Event.AgentID, rec.Seq, rec.Event.ID, "%s row points at a chain record that does not exist", t)
		case !bytes.Equal(rec.Canonical(), content):
			v.fail(rec.Event.AgentID, rec.Seq, rec.Event.ID, "%s row differs from its chain record (altered outside the ledger)", t)
		}
	}
	return dbErr("verify events", rows.Err())
}

// latest checks that every event in the chain has a row and that the row
// holds its latest record (a row rolled back to an earlier report, or
// deleted, is a break).
func (v *verifier) latest(ctx context.Context, tx *sql.Tx, t ledger.Type) error {
	table, agentCol := "conduit_sessions", "agent_id"
	if t == ledger.AP2Transaction {
		table, agentCol = "ap2_transactions", "provider_id"
	}
	rows, err := tx.QueryContext(ctx, `SELECT x.agent_id, x.event_id, x.m, e.seq, e.`+agentCol+`
	  FROM (SELECT agent_id, event_id, MAX(seq) AS m FROM ledger_records WHERE event_type = ? GROUP BY event_id, agent_id) x
	  LEFT JOIN `+table+` e ON e.id = x.event_id
	  WHERE e.id IS NULL OR e.seq <> x.m OR e.`+agentCol+` <> x.agent_id`, string(t))
	if err != nil {
		return dbErr("verify events", err)
	}
	defer rows.Close()
	for rows.Next() {
		var agent, event string
		var m int64
		var seq sql.NullInt64
		var rowAgent sql.NullString
		if err := rows.Scan(&agent, &event, &m, &seq, &rowAgent); err != nil {
			return dbErr("verify events", err)
		}
		if !seq.Valid {
			v.fail(agent, m, event, "%s recorded in the chain has no row (deleted)", t)
		} else {
			v.fail(agent, m, event, "%s row is not at its latest chain record (seq %d)", t, seq.Int64)
		}
	}
	return dbErr("verify events", rows.Err())
}
