package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/ledger"
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
		e.Digests = make([]ledger.Hash, len(digests)/ledger.HashSize)
		for i := range e.Digests {
			copy(e.Digests[i][:], digests[i*ledger.HashSize:])
		}
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

// erasureScope is the scope's chain query: the agent's chain, then the
// records of other chains whose content may name it (filtered exactly in
// Go, by ledger.ChainRow.NamesAgent).
var erasureScope = []string{
	chainSelect + ` WHERE r.agent_id = ?1 ORDER BY r.seq`,
	chainSelect + ` WHERE r.agent_id <> ?1 AND (COALESCE(c.buyer_id, t.buyer_id, o.buyer_id) = ?1
	    OR k.from_agent = ?1 OR k.to_agent = ?1 OR instr(k.reason, ?1) > 0 OR instr(k.actor, ?1) > 0)
	  ORDER BY r.agent_id, r.seq`,
}

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
		if r.AgentID != x && !r.NamesAgent(x) {
			continue
		}
		row := *r
		if row.Record.Type == ledger.SummaryType {
			row.Summary = ss[x][row.Record.Seq]
		}
		row.StoredHash = append([]byte(nil), r.StoredHash...)
		row.HeadHash = append([]byte(nil), r.HeadHash...)
		sc.Records = append(sc.Records, ledger.ScopedRow{ChainRow: row})
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

// writeErasure applies a decided erasure of x.
func writeErasure(ctx context.Context, tx *sql.Tx, x string, plan *ledger.ErasurePlan) error {
	e := &plan.Erasure
	p, at := e.Pseudonym, micros(e.At)
	digests := make([]byte, 0, len(e.Digests)*ledger.HashSize)
	for _, d := range e.Digests {
		digests = append(digests, d[:]...)
	}
	exec := func(q string, args ...any) error {
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	}
	if err := exec(`INSERT INTO erasures (id, pseudonym, identity, actor, created_at, digests) VALUES (?, ?, ?, ?, ?, ?)`,
		e.ID, p, e.Identity, e.By, at, digests); err != nil {
		return err
	}
	if err := exec(`INSERT INTO agents (id, created_at, head_seq, head_hash, terminal_seq)
	    SELECT ?1, created_at, ?2, ?3, terminal_seq FROM agents WHERE id = ?4`, p, plan.Head.Seq, plan.Head.Hash[:], x); err != nil {
		return err
	}
	// The trigger lets a record's agent and seal change, nothing else.
	if err := exec(`UPDATE ledger_records SET agent_id = ?1, sealed_by = ?2 WHERE agent_id = ?3`, p, e.ID, x); err != nil {
		return err
	}
	for _, r := range plan.Sealed {
		if r.AgentID == p {
			continue
		}
		if err := exec(`UPDATE ledger_records SET sealed_by = ? WHERE agent_id = ? AND seq = ?`, e.ID, r.AgentID, r.Seq); err != nil {
			return err
		}
	}
	if err := exec(`INSERT INTO ledger_records (agent_id, seq, event_type, event_id, status, hash) VALUES (?, ?, ?, ?, '', ?)`,
		p, plan.Record.Seq, string(ledger.ErasureType), e.ID, plan.Record.Hash[:]); err != nil {
		return err
	}
	for _, q := range []string{
		`UPDATE conduit_sessions SET agent_id = ?1 WHERE agent_id = ?2`,
		`UPDATE conduit_sessions SET buyer_id = ?1 WHERE buyer_id = ?2`,
		`UPDATE conduit_sessions SET reported_agent_id = ?1 WHERE reported_agent_id = ?2`,
		`UPDATE ap2_transactions SET provider_id = ?1 WHERE provider_id = ?2`,
		`UPDATE ap2_transactions SET buyer_id = ?1 WHERE buyer_id = ?2`,
		`UPDATE ap2_transactions SET reported_agent_id = ?1 WHERE reported_agent_id = ?2`,
		`UPDATE task_offers SET agent_id = ?1 WHERE agent_id = ?2`,
		`UPDATE task_offers SET buyer_id = ?1 WHERE buyer_id = ?2`,
		`UPDATE task_offers SET reported_agent_id = ?1 WHERE reported_agent_id = ?2`,
		`UPDATE corrections SET from_agent = ?1 WHERE from_agent = ?2`,
		`UPDATE corrections SET to_agent = ?1 WHERE to_agent = ?2`,
		`DELETE FROM swarmscore_cache WHERE agent_id = ?2`,
		`UPDATE passports SET agent_id = ?1, document = '', signature = '', revoked_at = COALESCE(revoked_at, ?3) WHERE agent_id = ?2`,
		`UPDATE api_tokens SET agent_id = ?1, revoked_at = COALESCE(revoked_at, ?3) WHERE agent_id = ?2`,
		`UPDATE consent SET agent_id = ?1 WHERE agent_id = ?2`,
		`INSERT INTO consent (agent_id, visibility, consented_at) VALUES (?1, 'unlisted', ?3)
		    ON CONFLICT (agent_id) DO UPDATE SET visibility = 'unlisted'`,
		`UPDATE appeals SET agent_id = ?1 WHERE agent_id = ?2`,
		`UPDATE chain_breaks SET agent_id = ?1 WHERE agent_id = ?2`,
		`UPDATE chain_anchors SET agent_id = ?1 WHERE agent_id = ?2`,
		`UPDATE ledger_summaries SET agent_id = ?1 WHERE agent_id = ?2`,
		`UPDATE ledger_summary_rows SET agent_id = ?1 WHERE agent_id = ?2`,
	} {
		if err := exec(q, p, x, at); err != nil {
			return err
		}
	}
	for _, t := range []struct {
		table string
		key   []string
		text  []string
	}{
		{"corrections", []string{"id"}, []string{"reason", "actor"}},
		{"appeals", []string{"id"}, []string{"statement", "decision", "filed_by"}},
		{"appeal_actions", []string{"appeal_id", "seq"}, []string{"actor", "note"}},
		{"consent", []string{"agent_id"}, []string{"consent_by"}},
		{"chain_breaks", []string{"agent_id"}, []string{"reason"}},
	} {
		if err := renameText(ctx, tx, t.table, t.key, t.text, x, p); err != nil {
			return err
		}
	}
	// Checkpoint leaves keep the leaf hash they were signed with.
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
		if err := exec(`UPDATE checkpoint_leaves SET agent_id = ?, erased_hash = ? WHERE number = ? AND agent_id = ?`, p, h[:], l.number, x); err != nil {
			return err
		}
	}
	return exec(`DELETE FROM agents WHERE id = ?`, x)
}

// renameText replaces x by p, as a whole identifier (ledger.ReplaceID), in
// the free-text columns text of table, row by row.
func renameText(ctx context.Context, tx *sql.Tx, table string, key, text []string, x, p string) error {
	var where []string
	for _, c := range text {
		where = append(where, "instr(COALESCE("+c+", ''), ?1) > 0")
	}
	cols := append(append([]string{}, key...), text...)
	rows, err := tx.QueryContext(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM `+table+` WHERE `+strings.Join(where, " OR "), x)
	if err != nil {
		return err
	}
	var updates [][]any
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			rows.Close()
			return err
		}
		var args []any
		changed := false
		for i := range text {
			v := vals[len(key)+i]
			if v.Valid {
				if r := ledger.ReplaceID(v.String, x, p); r != v.String {
					v.String, changed = r, true
				}
			}
			args = append(args, v)
		}
		for i := range key {
			args = append(args, vals[i])
		}
		if changed {
			updates = append(updates, args)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var set, match []string
	for _, c := range text {
		set = append(set, c+" = ?")
	}
	for _, c := range key {
		match = append(match, c+" = ?")
	}
	for _, args := range updates {
		if _, err := tx.ExecContext(ctx, `UPDATE `+table+` SET `+strings.Join(set, ", ")+` WHERE `+strings.Join(match, " AND "), args...); err != nil {
			return err
		}
	}
	return nil
}
