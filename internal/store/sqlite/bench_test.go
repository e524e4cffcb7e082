package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/internal/store/storetest"
)

var benchBase = storetest.BenchBase

// benchEvents is storetest.BenchEvents.
var benchEvents = storetest.BenchEvents

func openBench(b *testing.B) (*sqlite.Store, string) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.db")
	s, err := sqlite.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s, path
}

func ingestAll(b *testing.B, s service.Backend, evs []ledger.Event, batch int) {
	b.Helper()
	storetest.BenchIngest(b, s, evs, batch)
}

// BenchmarkIngest is the ledger's ingest rate: validation, duplicate and
// transition checks, the hash chain and cache invalidation, in batches of
// 1000 (the CLI default) and 10000 (the maximum); ns/op is per event.
func BenchmarkIngest(b *testing.B) {
	for _, batch := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s, _ := openBench(b)
			evs := benchEvents("i", b.N, 1000)
			b.ResetTimer()
			cpu := cpuTime()
			ingestAll(b, s, evs, batch)
			b.StopTimer()
			reportRates(b, cpu)
		})
	}
}

// BenchmarkRawLoad loads the same event rows with SQLite's raw bulk path:
// one prepared INSERT per table in one transaction, no checks, no chain.
// "events" writes the event rows (and agents, operators) only; "events+chain"
// also writes a chain record per event with its precomputed hash, i.e.
// every row the ledger writes.
func BenchmarkRawLoad(b *testing.B) {
	for _, chain := range []bool{false, true} {
		name := "events"
		if chain {
			name = "events+chain"
		}
		b.Run(name, func(b *testing.B) {
			_, path := openBench(b)
			evs := benchEvents("r", b.N, 1000)
			// Hashes are computed outside the timer: the raw path stores bytes.
			var hashes []ledger.Hash
			if chain {
				heads := map[string]ledger.Hash{}
				seqs := map[string]int64{}
				for _, e := range evs {
					seqs[e.AgentID]++
					h := ledger.Link(heads[e.AgentID], (&ledger.Record{Event: e, Operator: "op-bench", Seq: seqs[e.AgentID]}).Canonical())
					heads[e.AgentID] = h
					hashes = append(hashes, h)
				}
			}
			db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)&_pragma=journal_mode(WAL)&_pragma=cache_size(-65536)")
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			b.ResetTimer()
			cpu := cpuTime()
			rawLoad(b, db, evs, hashes)
			b.StopTimer()
			reportRates(b, cpu)
		})
	}
}

// cpuTime is the process's user+system CPU time. The machine is shared, so
// wall time per event is inflated by other processes; CPU time per event is
// reported beside it as the steadier figure for ratios.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportRates(b *testing.B, cpuStart time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64((cpuTime()-cpuStart).Nanoseconds())/float64(b.N), "cpu-ns/event")
}

func rawLoad(b *testing.B, db *sql.DB, evs []ledger.Event, hashes []ledger.Hash) {
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	must := func(_ sql.Result, err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	prep := func(q string) *sql.Stmt {
		st, err := tx.PrepareContext(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	now := time.Now().UnixMicro()
	must(tx.ExecContext(ctx, "INSERT INTO operators (id, created_at) VALUES ('op-bench', ?)", now))
	agent := prep("INSERT INTO agents (id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING")
	conduit := prep(`INSERT INTO conduit_sessions (id, agent_id, buyer_id, operator_id, started_at, completed_at, status, seq, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	ap2 := prep(`INSERT INTO ap2_transactions (id, provider_id, buyer_id, operator_id, status, escrow_amount_cents, started_at, settled_at, seq, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	record := prep(`INSERT INTO ledger_records (agent_id, seq, event_type, event_id, status, hash) VALUES (?, ?, ?, ?, ?, ?)`)
	seen := map[string]bool{}
	for i, e := range evs {
		if !seen[e.AgentID] {
			seen[e.AgentID] = true
			must(agent.ExecContext(ctx, e.AgentID, now))
		}
		seq := int64(i/1000 + 1) // any value: the raw path does not chain
		if e.Type == ledger.ConduitSession {
			must(conduit.ExecContext(ctx, e.ID, e.AgentID, e.BuyerID, "op-bench", e.StartedAt.UnixMicro(), e.EndedAt.UnixMicro(), string(e.Status), seq, now, now))
		} else {
			must(ap2.ExecContext(ctx, e.ID, e.AgentID, e.BuyerID, "op-bench", string(e.Status), e.EscrowAmountCents, e.StartedAt.UnixMicro(), e.EndedAt.UnixMicro(), seq, now, now))
		}
		if hashes != nil {
			must(record.ExecContext(ctx, e.AgentID, int64(i+1), string(e.Type), e.ID, string(e.Status), hashes[i][:]))
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkScoreLookup measures one agent's score lookup in a ledger of
// 100,000 events (about 210 of them the agent's, both types): "cached" is a CachedScore hit,
// "uncached" a RefreshScore (count the window from the ledger, compute,
// write the cache entry in a write transaction). It reports p50 and p99.
func BenchmarkScoreLookup(b *testing.B) {
	s, _ := openBench(b)
	ingestAll(b, s, benchEvents("l", 100000, 477), 5000)
	ctx := context.Background()
	agent := "agent-000007"
	if _, err := s.RefreshScore(ctx, agent, benchBase, nil); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, f func() error) {
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for b.Loop() {
			t := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t))
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
	}
	b.Run("cached", func(b *testing.B) {
		run(b, func() error {
			e, ok, err := s.CachedScore(ctx, agent, benchBase.Add(time.Minute))
			if err == nil && (!ok || e.Result.Counts.ConduitTotal == 0 || e.Result.Counts.AP2Total == 0) {
				err = fmt.Errorf("no cache hit")
			}
			return err
		})
	})
	b.Run("uncached", func(b *testing.B) {
		run(b, func() error {
			_, err := s.RefreshScore(ctx, agent, benchBase.Add(time.Minute), nil)
			return err
		})
	})
}

// BenchmarkVerify is `ledger verify` over 100,000 events (1000 agents):
// every record's content rebuilt and hashed, every event row checked.
func BenchmarkVerify(b *testing.B) {
	s, _ := openBench(b)
	ingestAll(b, s, benchEvents("v", 100000, 1000), 5000)
	b.ResetTimer()
	for b.Loop() {
		r, err := s.VerifyLedger(context.Background())
		if err != nil || len(r.Broken) != 0 || r.Records != 100000 {
			b.Fatal(r, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100000, "ns/record")
}

// BenchmarkRecomputeAll refreshes 1,000 agents over 100,000 events in one
// statement; "bare" is the plain GROUP BY count over the same rows.
func BenchmarkRecomputeAll(b *testing.B) {
	s, path := openBench(b)
	ingestAll(b, s, benchEvents("a", 100000, 1000), 5000)
	ctx := context.Background()
	b.Run("recompute", func(b *testing.B) {
		for b.Loop() {
			if n, err := s.RecomputeAll(ctx, benchBase, false); err != nil || n != 1000 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		start, end := ledger.WindowStart(benchBase).UnixMicro(), benchBase.UnixMicro()
		for b.Loop() {
			rows, err := db.QueryContext(ctx, `SELECT a, SUM(t), SUM(s) FROM (
			  SELECT agent_id a, 1 t, status = 'VERIFIED' s FROM conduit_sessions WHERE status IN ('VERIFIED','FAILED') AND completed_at BETWEEN ?1 AND ?2
			  UNION ALL SELECT provider_id, 1, status = 'SETTLED' FROM ap2_transactions WHERE status IN ('SETTLED','DISPUTED','REFUNDED') AND settled_at BETWEEN ?1 AND ?2)
			  GROUP BY a`, start, end)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			rows.Close()
			if n != 1000 {
				b.Fatal(n)
			}
		}
	})
}

// BenchmarkSize ingests 200,000 events and reports the database's bytes
// per event against the events' NDJSON size and the raw-loaded event rows.
func BenchmarkSize(b *testing.B) {
	const n = 200000
	for b.Loop() {
		evs := benchEvents("s", n, 2000)
		var ndjson int64
		for _, e := range evs {
			j, _ := json.Marshal(e)
			ndjson += int64(len(j)) + 1
		}
		s, path := openBench(b)
		ingestAll(b, s, evs, 5000)
		ledgerSize := checkpointSize(b, s.Close, path)

		_, rawPath := openBench(b)
		db, err := sql.Open("sqlite", rawPath+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
		if err != nil {
			b.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		rawLoad(b, db, evs, nil)
		rawSize := checkpointSize(b, db.Close, rawPath)
		b.ReportMetric(float64(ledgerSize)/n, "db-bytes/event")
		b.ReportMetric(float64(rawSize)/n, "raw-db-bytes/event")
		b.ReportMetric(float64(ndjson)/n, "ndjson-bytes/event")
	}
}

// checkpointSize closes the database (which checkpoints the WAL into the
// main file) and returns the file's size.
func checkpointSize(b *testing.B, close func() error, path string) int64 {
	if err := close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
		b.Fatalf("WAL not checkpointed: %d bytes", wal.Size())
	}
	return fi.Size()
}

// BenchmarkIngestResend is a re-sent export: every event stored (half
// Conduit RUNNING → VERIFIED/FAILED, half AP2 HELD → SETTLED/DISPUTED),
// then sent again. "export" re-sends each event's history (the earlier
// report superseded, the final one a duplicate); "duplicates" sends each
// final report twice, the same number of reports. ns/op is per report, in
// batches of 1000.
func BenchmarkIngestResend(b *testing.B) {
	for _, name := range []string{"export", "duplicates"} {
		b.Run(name, func(b *testing.B) {
			s, _ := openBench(b)
			final := benchEvents("e", (b.N+1)/2, 1000)
			history, resend := storetest.ResendHistory(final, name == "export")
			ingestAll(b, s, history, 1000)
			resend = resend[:b.N]
			b.ResetTimer()
			cpu := cpuTime()
			for len(resend) > 0 {
				n := min(1000, len(resend))
				out, err := s.Ingest(context.Background(), ledger.Batch{Operator: "op-bench", Events: resend[:n]})
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range out {
					if o.Status != ledger.OutcomeDuplicate && o.Status != ledger.OutcomeSuperseded {
						b.Fatalf("%v: %v", o.Status, o.Err)
					}
				}
				resend = resend[n:]
			}
			b.StopTimer()
			reportRates(b, cpu)
		})
	}
}

// BenchmarkPrune is storetest.BenchPrune (docs/BENCHMARKS.md,
// "Retention").
func BenchmarkPrune(b *testing.B) { storetest.BenchPrune(b, openBenchStore) }

// BenchmarkErase is storetest.BenchErase.
func BenchmarkErase(b *testing.B) { storetest.BenchErase(b, openBenchStore) }

func openBenchStore(b *testing.B) service.Backend {
	s, _ := openBench(b)
	return s
}
