package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// erasures loads every stored erasure with its digests, oldest first.
func erasures(ctx context.Context, tx pgx.Tx) ([]ledger.Erasure, error) {
	rows, err := tx.Query(ctx, `SELECT id, pseudonym, identity, actor, created_at, digests FROM erasures ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	var (
		out     []ledger.Erasure
		e       ledger.Erasure
		digests []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&e.ID, &e.Pseudonym, &e.Identity, &e.By, &e.At, &digests}, func() error {
		e.At = e.At.UTC()
		e.Digests = make([]ledger.Hash, len(digests)/ledger.HashSize)
		for i := range e.Digests {
			copy(e.Digests[i][:], digests[i*ledger.HashSize:])
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// Erasures implements service.ErasureStore.
func (s *Store) Erasures(ctx context.Context) ([]ledger.Erasure, error) {
	var out []ledger.Erasure
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		out, err = erasures(ctx, tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read erasures: %w", classify(err))
	}
	return out, nil
}

// erasureScope is the scope's chain query: the agent's chain, then the
// records of other chains whose content may name it (filtered exactly in
// Go, by ledger.ChainRow.NamesAgent).
var erasureScope = []string{
	chainSelect + ` WHERE r.agent_id = $1 ORDER BY r.seq`,
	chainSelect + ` WHERE r.agent_id <> $1 AND (coalesce(c.buyer_id, t.buyer_id, o.buyer_id) = $1
	    OR k.from_agent = $1 OR k.to_agent = $1 OR strpos(k.reason, $1) > 0 OR strpos(k.actor, $1) > 0)
	  ORDER BY r.agent_id, r.seq`,
}

// Erase implements service.ErasureStore. It locks agents against new row
// locks first (ingest and corrections lock agents' rows before writing),
// then the tables it renames in, so that no report naming the agent lands
// while it runs.
func (s *Store) Erase(ctx context.Context, req ledger.ErasureRequest) (ledger.Erasure, error) {
	var plan ledger.ErasurePlan
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE agents IN EXCLUSIVE MODE;
		    LOCK TABLE conduit_sessions, ap2_transactions, task_offers, corrections, ledger_records, checkpoints, checkpoint_leaves IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		x, p := req.AgentID, req.Pseudonym
		sc := ledger.ErasureScope{Sealed: map[string][]ledger.Hash{}}
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE id = $1) OR EXISTS (SELECT 1 FROM erasures WHERE id = $2 OR pseudonym = $1)`,
			p, req.ID).Scan(&sc.Taken); err != nil {
			return err
		}
		var headHash []byte
		switch err := tx.QueryRow(ctx, `SELECT head_seq, head_hash FROM agents WHERE id = $1`, x).Scan(&sc.Head.Seq, &headHash); {
		case err == nil:
			sc.Found = true
			copy(sc.Head.Hash[:], headHash)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM erasures WHERE pseudonym = $1)`, x).Scan(&sc.Erased); err != nil {
			return err
		}
		if sc.Found && !sc.Erased && !sc.Taken {
			if err := loadScope(ctx, tx, x, &sc); err != nil {
				return err
			}
		}
		var err error
		if plan, err = ledger.DecideErasure(req, sc); err != nil {
			return err
		}
		return writeErasure(ctx, tx, x, &plan)
	})
	if err != nil {
		if k := errkind.Of(err); k == errkind.Invalid || k == errkind.NotFound || k == errkind.Conflict {
			return ledger.Erasure{}, err
		}
		return ledger.Erasure{}, fmt.Errorf("postgres: erasure: %w", err)
	}
	return plan.Erasure, nil
}

// loadScope reads the records the erasure of x affects, each with the
// stored hash before it, and the digests of the erasures that sealed any.
func loadScope(ctx context.Context, tx pgx.Tx, x string, sc *ledger.ErasureScope) error {
	ss, err := summaries(ctx, tx, ` WHERE agent_id = $1`, x)
	if err != nil {
		return err
	}
	as, err := anchors(ctx, tx, "")
	if err != nil {
		return err
	}
	for _, q := range erasureScope {
		for r, err := range chainRows(ctx, tx, q, x) {
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
	}
	agents := make([]string, len(sc.Records))
	seqs := make([]int64, len(sc.Records))
	for i, r := range sc.Records {
		agents[i], seqs[i] = r.AgentID, r.Record.Seq-1
	}
	rows, err := tx.Query(ctx, `SELECT w.i, r.hash FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS w(agent_id, seq, i)
	    JOIN ledger_records r ON r.agent_id = w.agent_id AND r.seq = w.seq`, agents, seqs)
	if err != nil {
		return err
	}
	var (
		i    int64
		hash []byte
	)
	if _, err := pgx.ForEachRow(rows, []any{&i, &hash}, func() error {
		copy(sc.Records[i-1].Prev[:], hash)
		return nil
	}); err != nil {
		return err
	}
	for i := range sc.Records {
		if a, ok := as[sc.Records[i].AgentID]; ok && sc.Records[i].Record.Seq == a.Seq+1 {
			sc.Records[i].Prev = a.Hash
		}
	}
	es, err := erasures(ctx, tx)
	if err != nil {
		return err
	}
	for _, e := range es {
		sc.Sealed[e.ID] = e.Digests
	}
	return nil
}

// writeErasure applies a decided erasure of x.
func writeErasure(ctx context.Context, tx pgx.Tx, x string, plan *ledger.ErasurePlan) error {
	e := &plan.Erasure
	p := e.Pseudonym
	digests := make([]byte, 0, len(e.Digests)*ledger.HashSize)
	for _, d := range e.Digests {
		digests = append(digests, d[:]...)
	}
	exec := func(q string, args ...any) error {
		_, err := tx.Exec(ctx, q, args...)
		return err
	}
	if err := exec(`INSERT INTO erasures (id, pseudonym, identity, actor, created_at, digests) VALUES ($1, $2, $3, $4, $5, $6)`,
		e.ID, p, e.Identity, e.By, e.At, digests); err != nil {
		return err
	}
	if err := exec(`INSERT INTO agents (id, created_at, head_seq, head_hash, terminal_seq)
	    SELECT $1, created_at, $2, $3, terminal_seq FROM agents WHERE id = $4`, p, plan.Head.Seq, plan.Head.Hash[:], x); err != nil {
		return err
	}
	// The trigger lets a record's agent and seal change, nothing else.
	if err := exec(`UPDATE ledger_records SET agent_id = $1, sealed_by = $2 WHERE agent_id = $3`, p, e.ID, x); err != nil {
		return err
	}
	var agents []string
	var seqs []int64
	for _, r := range plan.Sealed {
		if r.AgentID != p {
			agents, seqs = append(agents, r.AgentID), append(seqs, r.Seq)
		}
	}
	if err := exec(`UPDATE ledger_records r SET sealed_by = $1 FROM unnest($2::text[], $3::bigint[]) AS w(agent_id, seq)
	    WHERE r.agent_id = w.agent_id AND r.seq = w.seq`, e.ID, agents, seqs); err != nil {
		return err
	}
	if err := exec(`INSERT INTO ledger_records (agent_id, seq, event_type, event_id, status, hash) VALUES ($1, $2, $3, $4, '', $5)`,
		p, plan.Record.Seq, string(ledger.ErasureType), e.ID, plan.Record.Hash[:]); err != nil {
		return err
	}
	for _, q := range []string{
		`UPDATE conduit_sessions SET agent_id = $1 WHERE agent_id = $2`,
		`UPDATE conduit_sessions SET buyer_id = $1 WHERE buyer_id = $2`,
		`UPDATE conduit_sessions SET reported_agent_id = $1 WHERE reported_agent_id = $2`,
		`UPDATE ap2_transactions SET provider_id = $1 WHERE provider_id = $2`,
		`UPDATE ap2_transactions SET buyer_id = $1 WHERE buyer_id = $2`,
		`UPDATE ap2_transactions SET reported_agent_id = $1 WHERE reported_agent_id = $2`,
		`UPDATE task_offers SET agent_id = $1 WHERE agent_id = $2`,
		`UPDATE task_offers SET buyer_id = $1 WHERE buyer_id = $2`,
		`UPDATE task_offers SET reported_agent_id = $1 WHERE reported_agent_id = $2`,
		`UPDATE corrections SET from_agent = $1 WHERE from_agent = $2`,
		`UPDATE corrections SET to_agent = $1 WHERE to_agent = $2`,
		`UPDATE passports SET agent_id = $1, document = '', signature = '', revoked_at = coalesce(revoked_at, $3) WHERE agent_id = $2`,
		`UPDATE api_tokens SET agent_id = $1, revoked_at = coalesce(revoked_at, $3) WHERE agent_id = $2`,
		`UPDATE consent SET agent_id = $1 WHERE agent_id = $2`,
		`UPDATE appeals SET agent_id = $1 WHERE agent_id = $2`,
		`UPDATE chain_breaks SET agent_id = $1 WHERE agent_id = $2`,
		`UPDATE chain_anchors SET agent_id = $1 WHERE agent_id = $2`,
		`UPDATE ledger_summaries SET agent_id = $1 WHERE agent_id = $2`,
		`UPDATE ledger_summary_rows SET agent_id = $1 WHERE agent_id = $2`,
	} {
		args := []any{p, x}
		if strings.Contains(q, "$3") {
			args = append(args, e.At)
		}
		if err := exec(q, args...); err != nil {
			return err
		}
	}
	if err := exec(`DELETE FROM swarmscore_cache WHERE agent_id = $1`, x); err != nil {
		return err
	}
	if err := exec(`INSERT INTO consent (agent_id, visibility, consented_at) VALUES ($1, 'unlisted', $2)
	    ON CONFLICT (agent_id) DO UPDATE SET visibility = 'unlisted'`, p, e.At); err != nil {
		return err
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
	rows, err := tx.Query(ctx, `SELECT number, seq, hash FROM checkpoint_leaves WHERE agent_id = $1`, x)
	if err != nil {
		return err
	}
	var (
		numbers, lseqs []int64
		hashes         [][]byte
		number, seq    int64
		hash           []byte
	)
	if _, err := pgx.ForEachRow(rows, []any{&number, &seq, &hash}, func() error {
		l := checkpoint.Leaf{AgentID: x, Seq: seq}
		copy(l.Hash[:], hash)
		h, err := l.MerkleHash()
		if err != nil {
			return err
		}
		numbers, lseqs, hashes = append(numbers, number), append(lseqs, seq), append(hashes, h[:])
		return nil
	}); err != nil {
		return err
	}
	if err := exec(`UPDATE checkpoint_leaves l SET agent_id = $1, erased_hash = w.h FROM unnest($2::bigint[], $3::bytea[]) AS w(number, h)
	    WHERE l.number = w.number AND l.agent_id = $4`, p, numbers, hashes, x); err != nil {
		return err
	}
	return exec(`DELETE FROM agents WHERE id = $1`, x)
}

// renameText replaces x by p, as a whole identifier (ledger.ReplaceID), in
// the free-text columns text of table, row by row.
func renameText(ctx context.Context, tx pgx.Tx, table string, key, text []string, x, p string) error {
	var where []string
	for _, c := range text {
		where = append(where, "strpos(coalesce("+c+", ''), $1) > 0")
	}
	var keyCols []string
	for _, k := range key {
		keyCols = append(keyCols, k+"::text")
	}
	cols := append(keyCols, text...)
	rows, err := tx.Query(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM `+table+` WHERE `+strings.Join(where, " OR "), x)
	if err != nil {
		return err
	}
	var updates [][]any
	for rows.Next() {
		vals := make([]*string, len(cols))
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
			if v != nil {
				if r := ledger.ReplaceID(*v, x, p); r != *v {
					v, changed = &r, true
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
	for i, c := range text {
		set = append(set, fmt.Sprintf("%s = $%d", c, i+1))
	}
	for i, c := range key {
		match = append(match, fmt.Sprintf("%s::text = $%d", c, len(text)+i+1))
	}
	for _, args := range updates {
		if _, err := tx.Exec(ctx, `UPDATE `+table+` SET `+strings.Join(set, ", ")+` WHERE `+strings.Join(match, " AND "), args...); err != nil {
			return err
		}
	}
	return nil
}
