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
	"github.com/swarmscore/swarmscore/internal/store"
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
		e.SetDigests(digests)
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

// erasureLocked are the tables an erasure locks against writers besides
// agents. A row that names an agent through a foreign key to agents waits
// for the erasure's lock on agents (the key check locks the agent's row),
// and then fails if the agent is gone; every other table whose columns
// name agents (ledger.Catalogue) is here, so that a row written while the
// erasure runs is renamed by it or waits for its end
// (TestErasureLocksEveryAgentTable). The chain tables are here because
// the erasure appends to and seals chains. A writer that took its table's
// lock before the agents row it refers to can deadlock with an erasure;
// PostgreSQL aborts one of the two, and both retry (inTx).
var erasureLocked = []string{"conduit_sessions", "ap2_transactions", "task_offers", "corrections",
	"ledger_records", "checkpoints", "checkpoint_leaves", "appeals", "appeal_actions", "api_tokens",
	"consent", "chain_breaks", "ledger_summaries", "ledger_summary_rows", "operator_actions", "webhook_messages", "webhook_scores",
	"escrow_holds", "escrow_hold_steps"}

// erasureScope is store.ErasureScope over this back end's chain walk.
var erasureScope = store.ErasureScope(dialect, chainSelect)

// Erase implements service.ErasureStore. It locks agents against new row
// locks first (ingest and corrections lock agents' rows before writing),
// then the tables it renames in, so that no report naming the agent lands
// while it runs.
func (s *Store) Erase(ctx context.Context, req ledger.ErasureRequest) (ledger.Erasure, error) {
	var plan ledger.ErasurePlan
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE agents IN EXCLUSIVE MODE;
		    LOCK TABLE `+strings.Join(erasureLocked, ", ")+` IN SHARE ROW EXCLUSIVE MODE`); err != nil {
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
			sc.Consider(x, r, ss[x])
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

// erasureSQL is what the catalogue makes an erasure run (store.NewErasureSQL).
var erasureSQL = store.NewErasureSQL(dialect)

// writeErasure applies a decided erasure of x: the plan's rows, then the
// renames the catalogue generates, then the checkpoint leaves, and x's
// agent row last.
func writeErasure(ctx context.Context, tx pgx.Tx, x string, plan *ledger.ErasurePlan) error {
	e := &plan.Erasure
	if err := writeErasurePlan(ctx, tx, x, plan); err != nil {
		return err
	}
	if err := erasureSQL.Write(txOf(ctx, tx), x, e.Pseudonym, e.At, e.ID); err != nil {
		return err
	}
	if err := renameLeaves(ctx, tx, x, e.Pseudonym); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM agents WHERE id = $1`, x)
	return err
}

// writeErasurePlan stores the erasure, the pseudonym's agent row with its
// new head, the seals of other chains' records and the erasure's record.
func writeErasurePlan(ctx context.Context, tx pgx.Tx, x string, plan *ledger.ErasurePlan) error {
	e := &plan.Erasure
	p := e.Pseudonym
	exec := func(q string, args ...any) error {
		_, err := tx.Exec(ctx, q, args...)
		return err
	}
	if err := exec(`INSERT INTO erasures (id, pseudonym, identity, actor, created_at, digests) VALUES ($1, $2, $3, $4, $5, $6)`,
		e.ID, p, e.Identity, e.By, e.At, e.DigestBytes()); err != nil {
		return err
	}
	if err := exec(`INSERT INTO agents (id, created_at, head_seq, head_hash, terminal_seq)
	    SELECT $1, created_at, $2, $3, terminal_seq FROM agents WHERE id = $4`, p, plan.Head.Seq, plan.Head.Hash[:], x); err != nil {
		return err
	}
	// x's own records are sealed as they are renamed (erasureSQL).
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
	return exec(appendRecordsSQL, appendRecordsArgs([]ledger.ChainRecord{{AgentID: p, Seq: plan.Record.Seq, Type: ledger.ErasureType,
		EventID: e.ID, Hash: plan.Record.Hash}})...)
}

// renameLeaves renames x to p in the checkpoint leaves, each keeping the
// leaf hash it was signed with (ledger.LeafHash).
func renameLeaves(ctx context.Context, tx pgx.Tx, x, p string) error {
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
	_, err = tx.Exec(ctx, `UPDATE checkpoint_leaves l SET agent_id = $1, erased_hash = w.h FROM unnest($2::bigint[], $3::bytea[]) AS w(number, h)
	    WHERE l.number = w.number AND l.agent_id = $4`, p, numbers, hashes, x)
	return err
}
