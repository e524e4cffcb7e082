package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
	"github.com/swarmscore/swarmscore/internal/store/storetest"
)

// Benchmarks for docs/BENCHMARKS.md. Run with
//
//	go test -run '^$' -bench . -count 5 ./internal/store/postgres/
//
// and SWARMSCORE_BIG_BENCH=1 for the 100,000-agent / 10,000,000-event
// recompute and the size per million events (minutes of COPY setup).

var benchAsOf = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// benchEvents returns n new terminal events (two thirds Conduit, one third
// AP2) spread over agents agents, with ids unique to prefix, ending inside
// the window before benchAsOf.
func benchEvents(prefix string, n, agents int, seed uint64) []ledger.Event {
	r := rand.New(rand.NewPCG(seed, 7))
	evs := make([]ledger.Event, n)
	for i := range evs {
		end := benchAsOf.Add(-time.Duration(r.Int64N(int64(89 * 24 * time.Hour)))).Truncate(time.Microsecond)
		e := ledger.Event{
			ID: prefix + strconv.Itoa(i), AgentID: "agent-" + strconv.Itoa(r.IntN(agents)), BuyerID: "buyer-" + strconv.Itoa(r.IntN(100)),
			StartedAt: end.Add(-time.Duration(r.Int64N(int64(time.Hour)))).Truncate(time.Microsecond), EndedAt: end,
		}
		if i%3 == 2 {
			e.Type, e.EscrowAmountCents = ledger.AP2Transaction, 100+r.Int64N(10_000_000)
			e.Status = []ledger.Status{ledger.Settled, ledger.Settled, ledger.Settled, ledger.Disputed, ledger.Refunded}[r.IntN(5)]
		} else {
			e.Type = ledger.ConduitSession
			e.Status = []ledger.Status{ledger.Verified, ledger.Verified, ledger.Verified, ledger.Failed, ledger.Error}[r.IntN(5)]
		}
		evs[i] = e
	}
	return evs
}

// copyEvents loads events with COPY, exactly as the event tables hold them,
// with seq 1 each (the raw bulk path the Store is compared against).
func copyEvents(ctx context.Context, tb testing.TB, db interface {
	CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error)
}, operator string, evs []ledger.Event) {
	tb.Helper()
	var c, a [][]any
	for i := range evs {
		e := &evs[i]
		var buyer, end any
		if e.BuyerID != "" {
			buyer = e.BuyerID
		}
		if !e.EndedAt.IsZero() {
			end = e.EndedAt
		}
		if e.Type == ledger.ConduitSession {
			c = append(c, []any{e.ID, e.AgentID, buyer, operator, string(e.Status), e.StartedAt, end, int64(1)})
		} else {
			a = append(a, []any{e.ID, e.AgentID, buyer, operator, string(e.Status), e.EscrowAmountCents, e.StartedAt, end, int64(1)})
		}
	}
	if _, err := db.CopyFrom(ctx, pgx.Identifier{"conduit_sessions"},
		[]string{"id", "agent_id", "buyer_id", "operator_id", "status", "started_at", "completed_at", "seq"}, pgx.CopyFromRows(c)); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.CopyFrom(ctx, pgx.Identifier{"ap2_transactions"},
		[]string{"id", "provider_id", "buyer_id", "operator_id", "status", "escrow_amount_cents", "started_at", "settled_at", "seq"}, pgx.CopyFromRows(a)); err != nil {
		tb.Fatal(err)
	}
}

// registerAgents creates the operator and agents rows COPY needs for its
// foreign keys.
func registerAgents(ctx context.Context, tb testing.TB, s *Store, operator string, agents int) {
	tb.Helper()
	if _, err := s.pool.Exec(ctx, `INSERT INTO operators (id) VALUES ($1) ON CONFLICT DO NOTHING`, operator); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO agents (id) SELECT 'agent-' || g FROM generate_series(0, $1 - 1) g ON CONFLICT DO NOTHING`, agents); err != nil {
		tb.Fatal(err)
	}
}

const (
	ingestEventsPerOp = 20_000
	ingestAgents      = 1_000
)

// BenchmarkIngest compares Store.Ingest (validation, lifecycle and
// idempotency checks, hash chain, cache invalidation) with loading the same
// event rows by COPY. One op is ingestEventsPerOp new events; compare the
// events/s metrics.
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	for _, batch := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("store/batch=%d", batch), func(b *testing.B) {
			s := openTest(b)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				evs := benchEvents(fmt.Sprintf("s%d-", i), ingestEventsPerOp, ingestAgents, uint64(i))
				b.StartTimer()
				for len(evs) > 0 {
					n := min(batch, len(evs))
					out, err := s.Ingest(ctx, ledger.Batch{Operator: "op-bench", Events: evs[:n]})
					if err != nil {
						b.Fatal(err)
					}
					if out[0].Status != ledger.OutcomeAccepted {
						b.Fatalf("outcome %v", out[0])
					}
					evs = evs[n:]
				}
			}
			b.ReportMetric(float64(ingestEventsPerOp*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
	// Interleaved: each op ingests through the Store and COPYs the same
	// number of fresh rows right after, so CPU contention from other
	// processes hits both sides alike; ratio = store rate / COPY rate.
	b.Run("ratio/batch=10000", func(b *testing.B) {
		s, raw := openTest(b), openTest(b)
		registerAgents(ctx, b, raw, "op-bench", ingestAgents)
		var storeDur, copyDur time.Duration
		for i := range b.N {
			evs := benchEvents(fmt.Sprintf("r%d-", i), ingestEventsPerOp, ingestAgents, uint64(i))
			t0 := time.Now()
			for rest := evs; len(rest) > 0; {
				n := min(10_000, len(rest))
				if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op-bench", Events: rest[:n]}); err != nil {
					b.Fatal(err)
				}
				rest = rest[n:]
			}
			t1 := time.Now()
			err := pgx.BeginFunc(ctx, raw.pool, func(tx pgx.Tx) error {
				copyEvents(ctx, b, tx, "op-bench", evs)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			storeDur, copyDur = storeDur+t1.Sub(t0), copyDur+time.Since(t1)
		}
		n := float64(ingestEventsPerOp * b.N)
		b.ReportMetric(n/storeDur.Seconds(), "store-events/s")
		b.ReportMetric(n/copyDur.Seconds(), "copy-events/s")
		b.ReportMetric(copyDur.Seconds()/storeDur.Seconds(), "ratio")
	})
	b.Run("copy", func(b *testing.B) {
		s := openTest(b)
		registerAgents(ctx, b, s, "op-bench", ingestAgents)
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			evs := benchEvents(fmt.Sprintf("c%d-", i), ingestEventsPerOp, ingestAgents, uint64(i))
			b.StartTimer()
			err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
				copyEvents(ctx, b, tx, "op-bench", evs)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(ingestEventsPerOp*b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// BenchmarkScoreLookup measures one agent's score lookup: cached (the entry
// answers as_of) and uncached (RefreshScore: count the window from the
// ledger and write the entry), for an agent with 200 events in a ledger of
// 100,000. It reports p50 and p99 latencies.
func BenchmarkScoreLookup(b *testing.B) {
	ctx := context.Background()
	s := openTest(b)
	evs := benchEvents("e", 100_000, 500, 1)
	for len(evs) > 0 {
		n := min(10_000, len(evs))
		if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op-bench", Events: evs[:n]}); err != nil {
			b.Fatal(err)
		}
		evs = evs[n:]
	}
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}
	const agent = "agent-7"
	if _, err := s.RefreshScore(ctx, agent, benchAsOf, nil); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, op func() error) {
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			t0 := time.Now()
			if err := op(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
	}
	b.Run("cached", func(b *testing.B) {
		run(b, func() error {
			_, ok, err := s.CachedScore(ctx, agent, benchAsOf.Add(time.Hour))
			if err == nil && !ok {
				err = fmt.Errorf("cache miss")
			}
			return err
		})
	})
	b.Run("uncached", func(b *testing.B) {
		run(b, func() error {
			_, err := s.RefreshScore(ctx, agent, benchAsOf.Add(time.Hour), nil)
			return err
		})
	})
}

// bigDB is the large database shared by every run of BenchmarkRecomputeAll
// in this process (the benchmark function is called once per b.N probe and
// per -count); TestMain's caller cannot clean it per test, so it is dropped
// by dropBigDB.
var bigDB struct {
	once    sync.Once
	store   *Store
	drop    func() error
	agents  int
	events  int
	loadDur time.Duration
	err     error
}

// BenchmarkRecomputeAll compares RecomputeAll (one INSERT … SELECT … GROUP
// BY … ON CONFLICT DO UPDATE over every agent) with the bare GROUP BY count
// query over the same rows. Default: 2,000 agents and 200,000 events; with
// SWARMSCORE_BIG_BENCH=1, 100,000 agents and 10,000,000 events.
func BenchmarkRecomputeAll(b *testing.B) {
	s := loadBig(b)
	ctx := context.Background()
	lo, hi := ledger.Bounds(benchAsOf)
	if os.Getenv("SWARMSCORE_BENCH_EXPLAIN") == "1" {
		explainRecompute(b, s)
	}
	b.Run("bare-groupby", func(b *testing.B) {
		for range b.N {
			n := 0
			for _, q := range []string{
				`SELECT agent_id, count(*) FILTER (WHERE status IN ('VERIFIED', 'FAILED') AND completed_at BETWEEN $1 AND $2),
					count(*) FILTER (WHERE status = 'VERIFIED' AND completed_at BETWEEN $1 AND $2)
				FROM conduit_sessions GROUP BY agent_id`,
				`SELECT provider_id, count(*) FILTER (WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND settled_at BETWEEN $1 AND $2),
					count(*) FILTER (WHERE status = 'SETTLED' AND settled_at BETWEEN $1 AND $2)
				FROM ap2_transactions GROUP BY provider_id`,
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
	b.Run("store", func(b *testing.B) {
		for range b.N {
			n, err := s.RecomputeAll(ctx, benchAsOf, false)
			if err != nil {
				b.Fatal(err)
			}
			if n != int64(bigDB.agents) {
				b.Fatalf("recomputed %d agents, want %d", n, bigDB.agents)
			}
		}
	})
}

func bigScale() (agents, events int) {
	if os.Getenv("SWARMSCORE_BIG_BENCH") == "1" {
		return 100_000, 10_000_000
	}
	return 2_000, 200_000
}

// loadBig creates and fills the shared database once per process, by COPY
// in chunks, then builds statistics and the visibility map (as autovacuum
// would on a live database) so index-only scans are possible.
func loadBig(b *testing.B) *Store {
	bigDB.once.Do(func() {
		agents, events := bigScale()
		bigDB.agents, bigDB.events = agents, events
		ctx := context.Background()
		dsn, drop, err := pgtest.Create(ctx)
		if err != nil {
			bigDB.err = err
			return
		}
		bigDB.drop = drop
		s, err := Open(ctx, dsn)
		if err == nil {
			_, err = s.Migrate(ctx)
		}
		if err != nil {
			bigDB.err = err
			return
		}
		bigDB.store = s
		t0 := time.Now()
		registerAgents(ctx, b, s, "op-bench", agents)
		const chunk = 500_000
		for i := 0; i < events; i += chunk {
			evs := benchEvents(fmt.Sprintf("b%d-", i/chunk), min(chunk, events-i), agents, uint64(i))
			err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
				// The generated rows reference only the agents registered
				// above; skipping the per-row foreign-key triggers makes the
				// setup minutes shorter and changes nothing measured.
				if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
					return err
				}
				copyEvents(ctx, b, tx, "op-bench", evs)
				return nil
			})
			if err != nil {
				bigDB.err = err
				return
			}
		}
		if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
			bigDB.err = err
			return
		}
		bigDB.loadDur = time.Since(t0)
		b.Logf("loaded %d agents and %d events by COPY in %v", agents, events, bigDB.loadDur.Round(time.Second))
	})
	var unreachable *pgtest.UnreachableError
	if errors.As(bigDB.err, &unreachable) {
		pgtest.Unreachable(b, unreachable.Err)
	}
	if bigDB.err != nil {
		b.Fatal(bigDB.err)
	}
	return bigDB.store
}

// sizeReport is the size of a database per million events.
type sizeReport struct {
	Events                              int64
	NDJSONBytes                         int64
	ConduitBytes, AP2Bytes, LedgerBytes int64 // pg_total_relation_size (heap, TOAST, indexes)
	IndexBytes                          int64 // of which indexes on the two event tables and ledger_records
	OtherBytes                          int64 // agents, operators, cache
}

// BenchmarkSizePerMillion ingests events through the Store and reports the
// database size per million events against the NDJSON input's size and
// the size of the same rows loaded by COPY without a chain. Default 200,000
// events; 1,000,000 with SWARMSCORE_BIG_BENCH=1. Sizes are per million
// events (MB = 10^6 bytes).
func BenchmarkSizePerMillion(b *testing.B) {
	n := 200_000
	if os.Getenv("SWARMSCORE_BIG_BENCH") == "1" {
		n = 1_000_000
	}
	ctx := context.Background()
	for range b.N {
		evs := benchEvents("z", n, 10_000, 3)
		var ndjson int64
		for i := range evs {
			line, err := json.Marshal(evs[i])
			if err != nil {
				b.Fatal(err)
			}
			ndjson += int64(len(line)) + 1
		}
		s := openTest(b)
		for rest := evs; len(rest) > 0; {
			k := min(10_000, len(rest))
			if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op-bench", Events: rest[:k]}); err != nil {
				b.Fatal(err)
			}
			rest = rest[k:]
		}
		raw := openTest(b)
		registerAgents(ctx, b, raw, "op-bench", 10_000)
		copyEvents(ctx, b, raw.pool, "op-bench", evs)
		per := func(v int64) float64 { return float64(v) / float64(n) } // bytes per event = MB per million
		st, rw := measureSize(ctx, b, s), measureSize(ctx, b, raw)
		logRelationSizes(ctx, b, s, n)
		b.ReportMetric(per(ndjson), "ndjson-MB/Mevents")
		b.ReportMetric(per(st.ConduitBytes+st.AP2Bytes+st.LedgerBytes+st.OtherBytes), "store-MB/Mevents")
		b.ReportMetric(per(st.LedgerBytes), "chain-MB/Mevents")
		b.ReportMetric(per(st.IndexBytes), "index-MB/Mevents")
		b.ReportMetric(per(rw.ConduitBytes+rw.AP2Bytes), "copy-MB/Mevents")
	}
}

func measureSize(ctx context.Context, tb testing.TB, s *Store) sizeReport {
	tb.Helper()
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		tb.Fatal(err)
	}
	var r sizeReport
	err := s.pool.QueryRow(ctx, `SELECT
		pg_total_relation_size('conduit_sessions'), pg_total_relation_size('ap2_transactions'),
		pg_total_relation_size('ledger_records'),
		pg_indexes_size('conduit_sessions') + pg_indexes_size('ap2_transactions') + pg_indexes_size('ledger_records'),
		pg_total_relation_size('agents') + pg_total_relation_size('operators') + pg_total_relation_size('swarmscore_cache')`).
		Scan(&r.ConduitBytes, &r.AP2Bytes, &r.LedgerBytes, &r.IndexBytes, &r.OtherBytes)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// explainRecompute logs the plans (with timings) of the recompute statement
// and the bare GROUP BY, inside a transaction that is rolled back.
func explainRecompute(b *testing.B, s *Store) {
	ctx := context.Background()
	lo, hi := ledger.Bounds(benchAsOf)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback(ctx)
	computed := benchAsOf
	for name, q := range map[string][]any{
		"recompute": {recomputeSQL(false), lo, hi, computed, computed.Add(ledger.CacheLifetime), ledger.Window + ledger.Resolution},
		"bare conduit": {`SELECT agent_id, count(*) FILTER (WHERE status IN ('VERIFIED', 'FAILED') AND completed_at BETWEEN $1 AND $2),
			count(*) FILTER (WHERE status = 'VERIFIED' AND completed_at BETWEEN $1 AND $2) FROM conduit_sessions GROUP BY agent_id`, lo, hi},
	} {
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+q[0].(string), q[1:]...)
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
		b.Logf("%s:\n%s", name, strings.Join(plan, "\n"))
	}
}

// logRelationSizes logs every table and index of the store's schema with its
// size per million events.
func logRelationSizes(ctx context.Context, b *testing.B, s *Store, events int) {
	rows, err := s.pool.Query(ctx, `SELECT c.relname, c.relkind::text, pg_relation_size(c.oid)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i') ORDER BY pg_relation_size(c.oid) DESC`)
	if err != nil {
		b.Fatal(err)
	}
	var lines []string
	var name, kind string
	var size int64
	if _, err := pgx.ForEachRow(rows, []any{&name, &kind, &size}, func() error {
		lines = append(lines, fmt.Sprintf("%-40s %s %8.1f MB/Mevents", name, kind, float64(size)/float64(events)))
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.Logf("relation sizes (r = table heap, i = index), %d events:\n%s", events, strings.Join(lines, "\n"))
}

// BenchmarkIngestResend is a re-sent export: every event stored (RUNNING
// or HELD, then final), then sent again. "export" re-sends each event's
// history (the earlier report superseded, the final one a duplicate);
// "duplicates" sends each final report twice, the same number of reports.
// ns/op is per report, in batches of 1000.
func BenchmarkIngestResend(b *testing.B) {
	ctx := context.Background()
	for _, name := range []string{"export", "duplicates"} {
		b.Run(name, func(b *testing.B) {
			s := openTest(b)
			final := benchEvents("e", (b.N+1)/2, ingestAgents, 1)
			history, resend := storetest.ResendHistory(final, name == "export")
			send := func(evs []ledger.Event, want ...ledger.OutcomeStatus) {
				for len(evs) > 0 {
					n := min(1000, len(evs))
					out, err := s.Ingest(ctx, ledger.Batch{Operator: "op-bench", Events: evs[:n]})
					if err != nil {
						b.Fatal(err)
					}
					for _, o := range out {
						if !slices.Contains(want, o.Status) {
							b.Fatalf("%v: %v", o.Status, o.Err)
						}
					}
					evs = evs[n:]
				}
			}
			send(history, ledger.OutcomeAccepted)
			b.ResetTimer()
			send(resend[:b.N], ledger.OutcomeDuplicate, ledger.OutcomeSuperseded)
		})
	}
}

// BenchmarkPrune is storetest.BenchPrune (docs/BENCHMARKS.md,
// "Retention").
func BenchmarkPrune(b *testing.B) {
	storetest.BenchPrune(b, func(b *testing.B) service.Backend { return openTest(b) })
}

// BenchmarkErase is storetest.BenchErase.
func BenchmarkErase(b *testing.B) {
	storetest.BenchErase(b, func(b *testing.B) service.Backend { return openTest(b) })
}
