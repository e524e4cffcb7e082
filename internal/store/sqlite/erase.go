package sqlite

import (
	"context"
	"database/sql"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

// erasures loads every stored erasure with its digests, oldest first.
func erasures(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) ([]ledger.Erasure, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, pseudonym, identity, actor, created_at, digests FROM erasures ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ledger.Erasure
	for rows.Next() {
		var e ledger.Erasure
		var at int64
		var digests []byte
		if err := rows.Scan(&e.ID, &e.Pseudonym, &e.Identity, &e.By, &at, &digests); err != nil {
			return nil, err
		}
		e.At = fromMicros(at)
		e.SetDigests(digests)
		out = append(out, e)
	}
	return out, rows.Err()
}

// Erasures implements service.ErasureStore.
func (s *Store) Erasures(ctx context.Context) ([]ledger.Erasure, error) {
	es, err := erasures(ctx, s.r)
	if err != nil {
		return nil, dbErr("read erasures", err)
	}
	return es, nil
}

// erasureScope is store.ErasureScope over this back end's chain walk.
var erasureScope = store.ErasureScope(dialect, chainSelect)

// Erase implements service.ErasureStore in one write transaction (SQLite
// has one writer, so no ingest runs meanwhile).
func (s *Store) Erase(ctx context.Context, req ledger.ErasureRequest) (ledger.Erasure, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return ledger.Erasure{}, dbErr("begin erasure", err)
	}
	defer tx.Rollback()
	x, p := req.AgentID, req.Pseudonym
	sc := ledger.ErasureScope{Sealed: map[string][]ledger.Hash{}}
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE id = ?1) OR EXISTS (SELECT 1 FROM erasures WHERE id = ?2 OR pseudonym = ?1)`,
		p, req.ID).Scan(&sc.Taken); err != nil {
		return ledger.Erasure{}, dbErr("erasure", err)
	}
	var headHash []byte
	switch err := tx.QueryRowContext(ctx, `SELECT head_seq, head_hash FROM agents WHERE id = ?`, x).Scan(&sc.Head.Seq, &headHash); err {
	case nil:
		sc.Found = true
		copy(sc.Head.Hash[:], headHash)
	case sql.ErrNoRows:
	default:
		return ledger.Erasure{}, dbErr("erasure", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) > 0 FROM erasures WHERE pseudonym = ?`, x).Scan(&sc.Erased); err != nil {
		return ledger.Erasure{}, dbErr("erasure", err)
	}
	if sc.Found && !sc.Erased && !sc.Taken {
		if err := loadScope(ctx, tx, x, &sc); err != nil {
			return ledger.Erasure{}, err
		}
	}
	plan, err := ledger.DecideErasure(req, sc)
	if err != nil {
		return ledger.Erasure{}, err
	}
	if err := writeErasure(ctx, tx, x, &plan); err != nil {
		return ledger.Erasure{}, dbErr("erasure", err)
	}
	if err := tx.Commit(); err != nil {
		return ledger.Erasure{}, dbErr("commit erasure", err)
	}
	return plan.Erasure, nil
}

// loadScope reads the records the erasure of x affects, each with the
// stored hash before it, and the digests of the erasures that sealed any.
func loadScope(ctx context.Context, tx *sql.Tx, x string, sc *ledger.ErasureScope) error {
	ss, err := summaries(ctx, tx, ` WHERE agent_id = ?`, x)
	if err != nil {
		return dbErr("erasure scope", err)
	}
	as, err := anchors(ctx, tx, "")
	if err != nil {
		return dbErr("erasure scope", err)
	}
	for r, err := range chainRows(ctx, tx, erasureScope, x) {
		if err != nil {
			return err
		}
		sc.Consider(x, r, ss[x])
	}
	for i := range sc.Records {
		r := &sc.Records[i]
		if a, ok := as[r.AgentID]; ok && r.Record.Seq == a.Seq+1 {
			r.Prev = a.Hash
			continue
		}
		if r.Record.Seq == 1 {
			continue
		}
		var prev []byte
		if err := tx.QueryRowContext(ctx, `SELECT hash FROM ledger_records WHERE agent_id = ? AND seq = ?`, r.AgentID, r.Record.Seq-1).Scan(&prev); err != nil && err != sql.ErrNoRows {
			return dbErr("erasure scope", err)
		}
		copy(r.Prev[:], prev)
	}
	es, err := erasures(ctx, tx)
	if err != nil {
		return dbErr("erasure scope", err)
	}
	for _, e := range es {
		sc.Sealed[e.ID] = e.Digests
	}
	return nil
}

// erasureSQL is what the catalogue makes an erasure run (store.NewErasureSQL).
var erasureSQL = store.NewErasureSQL(dialect)

// writeErasure applies a decided erasure of x: the plan's rows, then the
// renames the catalogue generates, then the checkpoint leaves, and x's
// agent row last.
func writeErasure(ctx context.Context, tx *sql.Tx, x string, plan *ledger.ErasurePlan) error {
	e := &plan.Erasure
	if err := writeErasurePlan(ctx, tx, x, plan); err != nil {
		return err
	}
	if err := erasureSQL.Write(txOf(ctx, tx), x, e.Pseudonym, micros(e.At), e.ID); err != nil {
		return err
	}
	if err := renameLeaves(ctx, tx, x, e.Pseudonym); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM agents WHERE id = ?`, x)
	return err
}

// writeErasurePlan stores the erasure, the pseudonym's agent row with its
// new head, the seals of other chains' records and the erasure's record.
func writeErasurePlan(ctx context.Context, tx *sql.Tx, x string, plan *ledger.ErasurePlan) error {
	e := &plan.Erasure
	p := e.Pseudonym
	exec := func(q string, args ...any) error {
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	}
	if err := exec(`INSERT INTO erasures (id, pseudonym, identity, actor, created_at, digests) VALUES (?, ?, ?, ?, ?, ?)`,
		e.ID, p, e.Identity, e.By, micros(e.At), e.DigestBytes()); err != nil {
		return err
	}
	if err := exec(`INSERT INTO agents (id, created_at, head_seq, head_hash, terminal_seq)
	    SELECT ?1, created_at, ?2, ?3, terminal_seq FROM agents WHERE id = ?4`, p, plan.Head.Seq, plan.Head.Hash[:], x); err != nil {
		return err
	}
	// x's own records are sealed as they are renamed (erasureSQL).
	for _, r := range plan.Sealed {
		if r.AgentID == p {
			continue
		}
		if err := exec(`UPDATE ledger_records SET sealed_by = ? WHERE agent_id = ? AND seq = ?`, e.ID, r.AgentID, r.Seq); err != nil {
			return err
		}
	}
	idx, err := nextLogIndex(ctx, tx)
	if err != nil {
		return err
	}
	if err := exec(`INSERT INTO ledger_records (agent_id, seq, event_type, event_id, status, hash, log_index) VALUES (?, ?, ?, ?, '', ?, ?)`,
		p, plan.Record.Seq, string(ledger.ErasureType), e.ID, plan.Record.Hash[:], idx); err != nil {
		return err
	}
	return appendLeaf(ctx, tx, idx, plan.Record.Hash, plan.Record.Seq)
}

// renameLeaves renames x to p in the checkpoint leaves, each keeping the
// leaf hash it was signed with (ledger.LeafHash).
func renameLeaves(ctx context.Context, tx *sql.Tx, x, p string) error {
	rows, err := tx.QueryContext(ctx, `SELECT number, seq, hash FROM checkpoint_leaves WHERE agent_id = ?`, x)
	if err != nil {
		return err
	}
	type leafRow struct {
		number int64
		leaf   checkpoint.Leaf
	}
	var leaves []leafRow
	for rows.Next() {
		l := leafRow{leaf: checkpoint.Leaf{AgentID: x}}
		var hash []byte
		if err := rows.Scan(&l.number, &l.leaf.Seq, &hash); err != nil {
			rows.Close()
			return err
		}
		copy(l.leaf.Hash[:], hash)
		leaves = append(leaves, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, l := range leaves {
		h, err := l.leaf.MerkleHash()
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE checkpoint_leaves SET agent_id = ?, erased_hash = ? WHERE number = ? AND agent_id = ?`,
			p, h[:], l.number, x); err != nil {
			return err
		}
	}
	return nil
}
