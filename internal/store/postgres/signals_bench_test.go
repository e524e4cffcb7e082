package postgres

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/signal"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
)

// BenchmarkFlaggedAgents compares the set-based query behind GET
// /swarmscore/signals?flagged=true (SignalFigures over every agent, then
// signal.Evaluate) with a bare GROUP BY of the same event rows: the
// window's counted Conduit sessions and AP2 transactions by agent and
// buyer, and its decided task offers by agent. For docs/BENCHMARKS.md:
//
//	SWARMSCORE_BIG_BENCH=1 go test -run '^$' -bench FlaggedAgents -benchtime 3x -count 3 -timeout 2h ./internal/store/postgres/
//
// It is skipped without SWARMSCORE_BIG_BENCH=1: the setup writes
// 100,000 agents and 10,000,000 events (60% Conduit sessions, 30% AP2
// transactions, 10% task offers, each with its chain record) in SQL,
// minutes of work. SWARMSCORE_BENCH_EVENTS=N loads N events over N/100
// agents instead; SWARMSCORE_BENCH_EXPLAIN=1 logs the query's plan with
// EXPLAIN (ANALYZE, BUFFERS) first.
func BenchmarkFlaggedAgents(b *testing.B) {
	if os.Getenv("SWARMSCORE_BIG_BENCH") != "1" {
		b.Skip("set SWARMSCORE_BIG_BENCH=1 to load 100,000 agents and 10,000,000 events")
	}
	events := 10_000_000
	if n, err := strconv.Atoi(os.Getenv("SWARMSCORE_BENCH_EVENTS")); err == nil && n >= 100 {
		events = n
	}
	agents := events / 100
	ctx := context.Background()
	dsn, drop, err := pgtest.Create(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := drop(); err != nil {
			b.Error(err)
		}
	})
	s, err := Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	generateSignalEvents(ctx, b, s, agents, events)
	b.Logf("generated %d agents and %d events in SQL in %v", agents, events, time.Since(t0).Round(time.Second))

	lo, hi := ledger.Bounds(benchAsOf)
	if os.Getenv("SWARMSCORE_BENCH_EXPLAIN") == "1" {
		rows, err := s.pool.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+signalQuery, lo, hi, "", signal.Defaults.BurstInterval.Microseconds())
		if err != nil {
			b.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				b.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		b.Logf("plan of the signal query:\n%s", strings.Join(plan, "\n"))
	}
	b.Run("bare-groupby", func(b *testing.B) {
		for range b.N {
			n := 0
			for _, q := range []string{
				`SELECT agent_id, buyer_id, count(*) FROM conduit_sessions
				 WHERE status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at BETWEEN $1 AND $2 GROUP BY 1, 2`,
				`SELECT provider_id, buyer_id, count(*) FROM ap2_transactions
				 WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at BETWEEN $1 AND $2 GROUP BY 1, 2`,
				`SELECT agent_id, count(*), count(*) FILTER (WHERE status = 'ACCEPTED') FROM task_offers
				 WHERE status IN ('ACCEPTED', 'DECLINED') AND voided_at IS NULL AND decided_at BETWEEN $1 AND $2 GROUP BY 1`,
			} {
				rows, err := s.pool.Query(ctx, q, lo, hi)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
					n++
				}
				if err := rows.Err(); err != nil {
					b.Fatal(err)
				}
			}
			if n == 0 {
				b.Fatal("no groups")
			}
		}
	})
	b.Run("flagged", func(b *testing.B) {
		for range b.N {
			fs, err := s.SignalFigures(ctx, benchAsOf, "", signal.Defaults.BurstInterval)
			if err != nil {
				b.Fatal(err)
			}
			flagged := 0
			for _, f := range fs {
				if signal.Flagged(signal.Evaluate(f, signal.Defaults)) {
					flagged++
				}
			}
			if len(fs) != agents {
				b.Fatalf("figures of %d agents, want %d", len(fs), agents)
			}
			b.ReportMetric(float64(flagged), "flagged")
		}
	})
}

// generateSignalEvents writes agents agents and events events straight
// into the schema with INSERT … SELECT over generate_series: event i
// belongs to agent i mod agents, as its chain record seq i/agents+1, so
// each agent has a hundred events whose type cycles with seq (60% Conduit,
// 30% AP2, 10% task offers). Buyers are one of 5,000 buyers, or for one
// event in ten another agent (so the reciprocal test has pairs to look
// at); 5% of sessions have none. Ends fall over the 89 days before
// benchAsOf, reports arrive within the hour, and one in 10,000 two days
// late. Foreign keys are not checked (session_replication_role), as
// every row names a registered agent; VACUUM ANALYZE then does what
// autovacuum would on a live database.
func generateSignalEvents(ctx context.Context, tb testing.TB, s *Store, agents, events int) {
	tb.Helper()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Release()
	for _, q := range []string{
		`SET session_replication_role = replica`,
		`SET synchronous_commit = off`,
		`SET maintenance_work_mem = '512MB'`,
		`SELECT setseed(0.42)`,
		`INSERT INTO operators (id) VALUES ('op-bench')`,
		`INSERT INTO agents (id, head_seq) SELECT 'agent-' || g, $2::bigint / $1 FROM generate_series(0, $1 - 1) g`,
		`CREATE UNLOGGED TABLE gen AS
		 SELECT i, 'agent-' || (i % $1) AS agent, i / $1 + 1 AS seq, (i / $1) % 10 AS kind, 'e' || i AS id,
		   CASE WHEN random() < 0.1 THEN 'agent-' || floor(random() * $1)::int ELSE 'buyer-' || floor(random() * 5000)::int END AS buyer,
		   $3::timestamptz - random() * interval '89 days' AS ended, random() AS r
		 FROM generate_series(0, $2::bigint - 1) i`,
		`INSERT INTO conduit_sessions (id, agent_id, buyer_id, operator_id, started_at, completed_at, status, seq)
		 SELECT id, agent, CASE WHEN r < 0.05 THEN NULL ELSE buyer END, 'op-bench', ended - interval '10 minutes', ended,
		   CASE WHEN r < 0.6 THEN 'VERIFIED' WHEN r < 0.8 THEN 'FAILED' ELSE 'ERROR' END, seq
		 FROM gen WHERE kind < 6`,
		`INSERT INTO ap2_transactions (id, provider_id, buyer_id, operator_id, status, escrow_amount_cents, started_at, settled_at, seq)
		 SELECT id, agent, buyer, 'op-bench', CASE WHEN r < 0.7 THEN 'SETTLED' WHEN r < 0.8 THEN 'DISPUTED' WHEN r < 0.9 THEN 'REFUNDED' ELSE 'CANCELLED' END,
		   100 + floor(r * 1000000)::bigint, ended - interval '1 hour', ended, seq
		 FROM gen WHERE kind BETWEEN 6 AND 8`,
		`INSERT INTO task_offers (id, agent_id, buyer_id, operator_id, status, started_at, decided_at, seq)
		 SELECT id, agent, buyer, 'op-bench', CASE WHEN r < 0.5 THEN 'ACCEPTED' ELSE 'DECLINED' END, ended - interval '1 minute', ended, seq
		 FROM gen WHERE kind = 9`,
		`INSERT INTO ledger_records (agent_id, seq, event_type, event_id, status, hash, received_at)
		 SELECT agent, seq, CASE WHEN kind < 6 THEN 'conduit_session' WHEN kind < 9 THEN 'ap2_transaction' ELSE 'task_offer' END, id, '',
		   sha256(convert_to(id, 'UTF8')), ended + CASE WHEN i % 10000 = 0 THEN interval '2 days' ELSE r * interval '1 hour' END
		 FROM gen`,
		`DROP TABLE gen`,
		`RESET session_replication_role`,
		`VACUUM ANALYZE`,
	} {
		var args []any
		switch n := countParams(q); n {
		case 1:
			args = []any{agents}
		case 2:
			args = []any{agents, events}
		case 3:
			args = []any{agents, events, benchAsOf}
		}
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			tb.Fatalf("%.60s: %v", q, err)
		}
	}
}

// countParams is the highest $n in q.
func countParams(q string) int {
	n := 0
	for i := 0; i+1 < len(q); i++ {
		if q[i] == '$' && q[i+1] >= '1' && q[i+1] <= '9' {
			n = max(n, int(q[i+1]-'0'))
		}
	}
	return n
}
