package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

// head is an agent's chain head during a batch.
type head struct {
	seq        int64
	hash       ledger.Hash
	terminal   int64 // seq of the batch's last terminal report, 0 if none
	registered bool  // the agents row exists
	dirty      bool  // head moved in this batch
	invalidate bool  // a terminal report arrived in this batch
}

// ingestTx holds one batch's prepared statements and chain heads.
type ingestTx struct {
	tx       *sql.Tx
	operator string
	now      int64
	heads    map[string]*head

	insConduit, insAP2, insRecord *sql.Stmt
	getConduit, getAP2, getHead   *sql.Stmt
	updConduit, updAP2            *sql.Stmt
}

// Ingest implements store.Store.
func (s *Store) Ingest(ctx context.Context, operator string, events []ledger.Event) ([]store.Outcome, error) {
	if err := ledger.CheckID("operator", operator); err != nil {
		return nil, err
	}
	out := make([]store.Outcome, len(events))
	if len(events) == 0 {
		return out, nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, dbErr("begin ingest", err)
	}
	defer tx.Rollback()
	it := &ingestTx{tx: tx, operator: operator, now: micros(s.now()), heads: make(map[string]*head)}
	if err := it.prepare(ctx); err != nil {
		return nil, err
	}
	defer it.close()
	if _, err := tx.ExecContext(ctx, "INSERT INTO operators (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING", operator, it.now); err != nil {
		return nil, dbErr("register operator", err)
	}
	if err := it.preload(ctx, events); err != nil {
		return nil, err
	}
	for i := range events {
		o, err := it.one(ctx, &events[i])
		if err != nil {
			return nil, err
		}
		out[i] = o
	}
	if err := it.finish(ctx); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, dbErr("commit ingest", err)
	}
	return out, nil
}

func (it *ingestTx) prepare(ctx context.Context) error {
	prep := func(dst **sql.Stmt, q string) error {
		st, err := it.tx.PrepareContext(ctx, q)
		if err != nil {
			return dbErr("prepare", err)
		}
		*dst = st
		return nil
	}
	return errors.Join(
		prep(&it.insConduit, `INSERT INTO conduit_sessions (id, agent_id, buyer_id, operator_id, started_at, completed_at, status, seq, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		prep(&it.insAP2, `INSERT INTO ap2_transactions (id, provider_id, buyer_id, operator_id, status, escrow_amount_cents, started_at, settled_at, seq, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		prep(&it.insRecord, `INSERT INTO ledger_records (agent_id, seq, event_type, event_id, content, hash) VALUES (?, ?, ?, ?, ?, ?)`),
		prep(&it.getConduit, `SELECT agent_id, COALESCE(buyer_id, ''), operator_id, status, 0, started_at, completed_at FROM conduit_sessions WHERE id = ?`),
		prep(&it.getAP2, `SELECT provider_id, buyer_id, operator_id, status, escrow_amount_cents, started_at, settled_at FROM ap2_transactions WHERE id = ?`),
		prep(&it.getHead, `SELECT head_seq, head_hash FROM agents WHERE id = ?`),
		prep(&it.updConduit, `UPDATE conduit_sessions SET status = ?, completed_at = ?, seq = ?, updated_at = ? WHERE id = ?`),
		prep(&it.updAP2, `UPDATE ap2_transactions SET status = ?, settled_at = ?, seq = ?, updated_at = ? WHERE id = ?`),
	)
}

func (it *ingestTx) close() {
	for _, st := range []*sql.Stmt{it.insConduit, it.insAP2, it.insRecord, it.getConduit, it.getAP2, it.getHead, it.updConduit, it.updAP2} {
		if st != nil {
			st.Close()
		}
	}
}

// preload reads the chain heads of every agent the batch names in one
// statement (unknown agents get a zero head).
func (it *ingestTx) preload(ctx context.Context, events []ledger.Event) error {
	ids := make([]string, 0, len(events))
	for i := range events {
		if _, ok := it.heads[events[i].AgentID]; !ok {
			it.heads[events[i].AgentID] = &head{}
			ids = append(ids, events[i].AgentID)
		}
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	rows, err := it.tx.QueryContext(ctx, `SELECT id, head_seq, head_hash FROM agents WHERE id IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return dbErr("read chain heads", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var seq int64
		var hash []byte
		if err := rows.Scan(&id, &seq, &hash); err != nil {
			return dbErr("read chain heads", err)
		}
		if len(hash) != ledger.HashSize {
			return fmt.Errorf("sqlite: agent %q has a %d-byte chain head", id, len(hash))
		}
		h := it.heads[id]
		h.seq, h.registered = seq, true
		copy(h.hash[:], hash)
	}
	return dbErr("read chain heads", rows.Err())
}

func (it *ingestTx) head(ctx context.Context, agent string) (*head, error) {
	if h, ok := it.heads[agent]; ok {
		return h, nil
	}
	h := &head{}
	var hash []byte
	err := it.getHead.QueryRowContext(ctx, agent).Scan(&h.seq, &hash)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, dbErr("read chain head", err)
	default:
		h.registered = true
		if len(hash) != ledger.HashSize {
			return nil, fmt.Errorf("sqlite: agent %q has a %d-byte chain head", agent, len(hash))
		}
		copy(h.hash[:], hash)
	}
	it.heads[agent] = h
	return h, nil
}

// one records one event and classifies it; a returned error aborts the batch.
func (it *ingestTx) one(ctx context.Context, e *ledger.Event) (store.Outcome, error) {
	if err := e.Validate(); err != nil {
		return reject(err), nil
	}
	h, err := it.head(ctx, e.AgentID)
	if err != nil {
		return store.Outcome{}, err
	}
	rec := ledger.Record{Event: *e, Operator: it.operator, Seq: h.seq + 1}
	if !h.registered {
		// An agent is registered only with an accepted event. An id that
		// exists already belongs to another, registered agent, so this
		// report is a conflict; otherwise register the agent before its
		// first event so that foreign keys hold at every statement.
		old, operator, found, err := it.existing(ctx, e)
		if err != nil {
			return store.Outcome{}, err
		}
		if found {
			return it.again(ctx, h, &rec, &old, operator)
		}
		if _, err := it.tx.ExecContext(ctx, "INSERT INTO agents (id, created_at) VALUES (?, ?)", e.AgentID, it.now); err != nil {
			return store.Outcome{}, dbErr("register agent", err)
		}
		h.registered = true
	}
	var res sql.Result
	if e.Type == ledger.ConduitSession {
		res, err = it.insConduit.ExecContext(ctx, e.ID, e.AgentID, nullString(e.BuyerID), it.operator,
			micros(e.StartedAt), nullTime(e.EndedAt), string(e.Status), rec.Seq, it.now, it.now)
	} else {
		res, err = it.insAP2.ExecContext(ctx, e.ID, e.AgentID, e.BuyerID, it.operator, string(e.Status),
			e.EscrowAmountCents, micros(e.StartedAt), nullTime(e.EndedAt), rec.Seq, it.now, it.now)
	}
	if err != nil {
		return store.Outcome{}, dbErr("insert event", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return store.Outcome{}, dbErr("insert event", err)
	} else if n == 1 {
		return store.Outcome{Status: store.Accepted}, it.append(ctx, h, &rec)
	}
	// The id exists: a duplicate, a transition or a conflict.
	old, operator, found, err := it.existing(ctx, e)
	if err != nil {
		return store.Outcome{}, err
	}
	if !found {
		return store.Outcome{}, fmt.Errorf("sqlite: %s %q neither inserted nor found", e.Type, e.ID)
	}
	return it.again(ctx, h, &rec, &old, operator)
}

// again handles a report of an event the ledger already holds as old.
func (it *ingestTx) again(ctx context.Context, h *head, rec *ledger.Record, old *ledger.Event, operator string) (store.Outcome, error) {
	e := &rec.Event
	switch d, err := ledger.Classify(old, operator, e, it.operator); {
	case err != nil:
		return reject(err), nil
	case d == ledger.Duplicate:
		return store.Outcome{Status: store.Duplicate}, nil
	}
	upd := it.updConduit
	if e.Type == ledger.AP2Transaction {
		upd = it.updAP2
	}
	if _, err := upd.ExecContext(ctx, string(e.Status), nullTime(e.EndedAt), rec.Seq, it.now, e.ID); err != nil {
		return store.Outcome{}, dbErr("update event", err)
	}
	return store.Outcome{Status: store.Accepted}, it.append(ctx, h, rec)
}

// append adds the record to the agent's chain.
func (it *ingestTx) append(ctx context.Context, h *head, rec *ledger.Record) error {
	content := rec.Canonical()
	hash := ledger.Link(h.hash, content)
	if _, err := it.insRecord.ExecContext(ctx, rec.Event.AgentID, rec.Seq, string(rec.Event.Type), rec.Event.ID, content, hash[:]); err != nil {
		return dbErr("append chain record", err)
	}
	h.seq, h.hash, h.dirty = rec.Seq, hash, true
	if rec.Event.Status.Terminal() {
		h.invalidate, h.terminal = true, rec.Seq
	}
	return nil
}

// finish moves the chain heads and invalidates the cache entries of agents
// that received a terminal report, one statement each for the whole batch.
func (it *ingestTx) finish(ctx context.Context) error {
	type move struct {
		ID   string `json:"id"`
		Seq  int64  `json:"seq"`
		Hash string `json:"hash"`
	}
	var moves []move
	var invalid []string
	for agent, h := range it.heads {
		if h.dirty {
			moves = append(moves, move{agent, h.seq, hex.EncodeToString(h.hash[:])})
		}
		if h.invalidate {
			invalid = append(invalid, agent)
		}
	}
	if len(moves) > 0 {
		// terminal_seq moves to the batch's last terminal report, if any,
		// retiring every cache entry read before it (store.go,
		// "Concurrency").
		st, err := it.tx.PrepareContext(ctx, `UPDATE agents SET head_seq = ?, head_hash = ?, terminal_seq = max(terminal_seq, ?) WHERE id = ?`)
		if err != nil {
			return dbErr("move chain heads", err)
		}
		defer st.Close()
		for _, m := range moves {
			h := it.heads[m.ID]
			if _, err := st.ExecContext(ctx, h.seq, h.hash[:], h.terminal, m.ID); err != nil {
				return dbErr("move chain heads", err)
			}
		}
	}
	if len(invalid) > 0 {
		list, err := json.Marshal(invalid)
		if err != nil {
			return err
		}
		if _, err := it.tx.ExecContext(ctx, `UPDATE swarmscore_cache SET valid_until = computed_at
		  WHERE agent_id IN (SELECT value FROM json_each(?)) AND valid_until <> computed_at`, string(list)); err != nil {
			return dbErr("invalidate cache", err)
		}
	}
	return nil
}

// existing reads the stored state of e's id; found is false if there is none.
func (it *ingestTx) existing(ctx context.Context, e *ledger.Event) (old ledger.Event, operator string, found bool, err error) {
	get := it.getConduit
	if e.Type == ledger.AP2Transaction {
		get = it.getAP2
	}
	old = ledger.Event{Type: e.Type, ID: e.ID}
	var status string
	var started int64
	var ended sql.NullInt64
	err = get.QueryRowContext(ctx, e.ID).Scan(&old.AgentID, &old.BuyerID, &operator, &status, &old.EscrowAmountCents, &started, &ended)
	if errors.Is(err, sql.ErrNoRows) {
		return old, "", false, nil
	}
	if err != nil {
		return old, "", false, dbErr("read event", err)
	}
	old.Status, old.StartedAt, old.EndedAt = ledger.Status(status), fromMicros(started), nullMicros(ended)
	return old, operator, true, nil
}

func reject(err error) store.Outcome { return store.Outcome{Status: store.Rejected, Err: err} }
