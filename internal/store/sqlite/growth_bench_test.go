package sqlite_test

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store/storetest"
)

// BenchmarkGrowth is storetest.Growth on SQLite: ingest, recompute-all,
// signals and lookup at each size of SWARMSCORE_GROWTH (docs/growth.md).
// The events are generated straight into the schema, in transactions of
// prepared INSERTs, as storetest.GrowthBackend describes.
func BenchmarkGrowth(b *testing.B) {
	storetest.Growth(b, func(b *testing.B, n int) *storetest.GrowthBackend {
		s, path := openBench(b)
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		agents := n / storetest.GrowthEventsPerAgent
		generateGrowth(b, db, agents, n)
		ctx := context.Background()
		start, end := ledger.WindowStart(storetest.GrowthAsOf).UnixMicro(), storetest.GrowthAsOf.UnixMicro()
		count := func(b *testing.B, q string, args ...any) int {
			rows, err := db.QueryContext(ctx, q, args...)
			if err != nil {
				b.Fatal(err)
			}
			defer rows.Close()
			k := 0
			for rows.Next() {
				k++
			}
			if err := rows.Err(); err != nil {
				b.Fatal(err)
			}
			return k
		}
		return &storetest.GrowthBackend{
			Store: s, Agents: agents,
			RawInsert: func(b *testing.B, evs []ledger.Event) { rawInsertGrowth(b, db, evs) },
			BareRecompute: func(b *testing.B) int {
				return count(b, `SELECT a, SUM(t), SUM(s) FROM (
				  SELECT agent_id a, 1 t, status = 'VERIFIED' s FROM conduit_sessions WHERE status IN ('VERIFIED','FAILED') AND completed_at BETWEEN ?1 AND ?2
				  UNION ALL SELECT provider_id, 1, status = 'SETTLED' FROM ap2_transactions WHERE status IN ('SETTLED','DISPUTED','REFUNDED') AND settled_at BETWEEN ?1 AND ?2)
				  GROUP BY a`, start, end)
			},
			BareSignals: func(b *testing.B) int {
				return count(b, `SELECT agent_id, buyer_id, count(*) FROM conduit_sessions
				  WHERE status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at BETWEEN ?1 AND ?2 GROUP BY 1, 2`, start, end) +
					count(b, `SELECT provider_id, buyer_id, count(*) FROM ap2_transactions
				  WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at BETWEEN ?1 AND ?2 GROUP BY 1, 2`, start, end) +
					count(b, `SELECT agent_id, count(*), sum(status = 'ACCEPTED') FROM task_offers
				  WHERE status IN ('ACCEPTED', 'DECLINED') AND voided_at IS NULL AND decided_at BETWEEN ?1 AND ?2 GROUP BY 1`, start, end)
			},
			BareLookup: func(b *testing.B, agent string) error {
				var score int
				return db.QueryRowContext(ctx, `SELECT score FROM swarmscore_cache WHERE agent_id = ?`, agent).Scan(&score)
			},
		}
	})
}

// generateGrowth writes agents agents and events events as the PostgreSQL
// benchmarks' generateSignalEvents does: event i belongs to agent i mod
// agents with seq i/agents+1, its type cycling with seq (60% Conduit, 30%
// AP2, 10% task offers), buyers one of 5,000 or, one event in ten, another
// agent, ends over the 89 days before storetest.GrowthAsOf.
func generateGrowth(b *testing.B, db *sql.DB, agents, events int) {
	ctx := context.Background()
	now := time.Now().UnixMicro()
	exec := func(tx *sql.Tx, q string, args ...any) {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			b.Fatalf("%.60s: %v", q, err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	exec(tx, `INSERT INTO operators (id, created_at) VALUES ('op-bench', ?)`, now)
	for a := range agents {
		exec(tx, `INSERT INTO agents (id, created_at, head_seq) VALUES (?, ?, ?)`, "agent-"+strconv.Itoa(a), now, events/agents)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(42, 42))
	asOf := storetest.GrowthAsOf.UnixMicro()
	const chunk = 200_000
	for lo := 0; lo < events; lo += chunk {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		prep := func(q string) *sql.Stmt {
			st, err := tx.PrepareContext(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			return st
		}
		conduit := prep(`INSERT INTO conduit_sessions (id, agent_id, buyer_id, operator_id, started_at, completed_at, status, seq, created_at, updated_at) VALUES (?, ?, ?, 'op-bench', ?, ?, ?, ?, ?, ?)`)
		ap2 := prep(`INSERT INTO ap2_transactions (id, provider_id, buyer_id, operator_id, status, escrow_amount_cents, started_at, settled_at, seq, created_at, updated_at) VALUES (?, ?, ?, 'op-bench', ?, ?, ?, ?, ?, ?, ?)`)
		offer := prep(`INSERT INTO task_offers (id, agent_id, buyer_id, operator_id, status, started_at, decided_at, seq, created_at, updated_at) VALUES (?, ?, ?, 'op-bench', ?, ?, ?, ?, ?, ?)`)
		record := prep(`INSERT INTO ledger_records (agent_id, seq, event_type, event_id, status, hash, received_at) VALUES (?, ?, ?, ?, '', ?, ?)`)
		var hash [32]byte
		for i := lo; i < min(lo+chunk, events); i++ {
			agent, seq, kind, id := "agent-"+strconv.Itoa(i%agents), int64(i/agents+1), (i/agents)%10, "e"+strconv.Itoa(i)
			buyer := "buyer-" + strconv.Itoa(r.IntN(5000))
			if r.IntN(10) == 0 {
				buyer = "agent-" + strconv.Itoa(r.IntN(agents))
			}
			ended := asOf - r.Int64N(89*24*3600*1_000_000)
			x := r.Float64()
			var typ string
			var err error
			switch {
			case kind < 6:
				typ = "conduit_session"
				st := "ERROR"
				if x < 0.6 {
					st = "VERIFIED"
				} else if x < 0.8 {
					st = "FAILED"
				}
				var by any = buyer
				if x < 0.05 {
					by = nil
				}
				_, err = conduit.ExecContext(ctx, id, agent, by, ended-600_000_000, ended, st, seq, now, now)
			case kind < 9:
				typ = "ap2_transaction"
				st := "CANCELLED"
				switch {
				case x < 0.7:
					st = "SETTLED"
				case x < 0.8:
					st = "DISPUTED"
				case x < 0.9:
					st = "REFUNDED"
				}
				_, err = ap2.ExecContext(ctx, id, agent, buyer, st, 100+int64(x*1_000_000), ended-3600_000_000, ended, seq, now, now)
			default:
				typ = "task_offer"
				st := "DECLINED"
				if x < 0.5 {
					st = "ACCEPTED"
				}
				_, err = offer.ExecContext(ctx, id, agent, buyer, st, ended-60_000_000, ended, seq, now, now)
			}
			if err != nil {
				b.Fatal(err)
			}
			hash[0], hash[1], hash[2], hash[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
			if _, err := record.ExecContext(ctx, agent, seq, typ, id, hash[:], ended+int64(x*3600_000_000)); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
}

// rawInsertGrowth writes evs (Conduit sessions and AP2 transactions of
// existing agents) and a chain record each in one transaction of prepared
// INSERTs: SQLite's raw bulk path.
func rawInsertGrowth(b *testing.B, db *sql.DB, evs []ledger.Event) {
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	prep := func(q string) *sql.Stmt {
		st, err := tx.PrepareContext(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	now := time.Now().UnixMicro()
	conduit := prep(`INSERT INTO conduit_sessions (id, agent_id, buyer_id, operator_id, started_at, completed_at, status, seq, created_at, updated_at) VALUES (?, ?, ?, 'op-bench', ?, ?, ?, ?, ?, ?)`)
	ap2 := prep(`INSERT INTO ap2_transactions (id, provider_id, buyer_id, operator_id, status, escrow_amount_cents, started_at, settled_at, seq, created_at, updated_at) VALUES (?, ?, ?, 'op-bench', ?, ?, ?, ?, ?, ?, ?)`)
	record := prep(`INSERT INTO ledger_records (agent_id, seq, event_type, event_id, status, hash) VALUES (?, ?, ?, ?, ?, ?)`)
	var hash [32]byte
	for i, e := range evs {
		seq := int64(1_000_000_000 + i) // past every generated chain; the raw path does not chain
		if e.Type == ledger.ConduitSession {
			_, err = conduit.ExecContext(ctx, e.ID, e.AgentID, e.BuyerID, e.StartedAt.UnixMicro(), e.EndedAt.UnixMicro(), string(e.Status), seq, now, now)
		} else {
			_, err = ap2.ExecContext(ctx, e.ID, e.AgentID, e.BuyerID, string(e.Status), e.EscrowAmountCents, e.StartedAt.UnixMicro(), e.EndedAt.UnixMicro(), seq, now, now)
		}
		if err == nil {
			_, err = record.ExecContext(ctx, e.AgentID, seq, string(e.Type), e.ID, string(e.Status), hash[:])
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
