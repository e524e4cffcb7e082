package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
)

const (
	pruneBenchEvents = 100_000
	pruneBenchAgents = 1_000
)

// pruneLedger ingests pruneBenchEvents events of pruneBenchAgents agents,
// every one ended 200 days before now, into a new database (through
// Store.Ingest: real chains) and returns its DSN, closed, to be copied.
// With closed, the partition they went to is then closed as of 150 days
// ago, before the retention cutoff of now: a prune may drop it.
func pruneLedger(b *testing.B, closed bool) (dsn string, now time.Time) {
	b.Helper()
	ctx := context.Background()
	dsn = pgtest.NewDatabase(b)
	s, err := Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	now = time.Now().UTC().Truncate(time.Second)
	old := now.Add(-200 * 24 * time.Hour)
	evs := benchEvents("p", pruneBenchEvents, pruneBenchAgents, 3)
	for i := range evs {
		evs[i].StartedAt, evs[i].EndedAt = old.Add(-time.Hour).Add(time.Duration(i)*time.Microsecond), old.Add(time.Duration(i)*time.Microsecond)
	}
	for i := 0; i < len(evs); i += 10_000 {
		if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op-1", Events: evs[i:min(i+10_000, len(evs))]}); err != nil {
			b.Fatal(err)
		}
	}
	if closed {
		if _, err := s.RotatePartitions(ctx, now.Add(-150*24*time.Hour)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	return dsn, now
}

// BenchmarkPrunePartitions prunes 100,000 events of 1,000 agents, every one past the
// cutoff, on a fresh copy of the same ledger for each run (the copy is
// outside the timer): rows, with the events in the current partition, so
// that their rows are deleted one chain at a time (what every prune did
// before partitions); partition, with the events in a partition closed
// before the cutoff, so that each chain's anchor and summary are written
// and the partition is dropped whole. walk is the full `ledger verify`
// walk of the same ledger, for scale. Run with -count to alternate.
func BenchmarkPrunePartitions(b *testing.B) {
	ctx := context.Background()
	if testing.Short() {
		b.Skip("builds a 100,000-event ledger")
	}
	rowsDSN, now := pruneLedger(b, false)
	partDSN, _ := pruneLedger(b, true)
	cutoff, err := ledger.RetentionCutoff(now, ledger.Window)
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, template string, do func(*Store) (int64, error)) {
		for range b.N {
			b.StopTimer()
			s, err := Open(ctx, pgtest.CopyDatabase(b, template))
			if err != nil {
				b.Fatal(err)
			}
			if err := s.pool.Ping(ctx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			n, err := do(s)
			b.StopTimer()
			s.Close()
			if err != nil {
				b.Fatal(err)
			}
			if n != pruneBenchEvents {
				b.Fatalf("%d events, want %d", n, pruneBenchEvents)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*pruneBenchEvents), "µs/event")
	}
	prune := func(s *Store) (int64, error) {
		rep, err := s.Prune(ctx, cutoff, now)
		return rep.Events, err
	}
	b.Run("rows", func(b *testing.B) { run(b, rowsDSN, prune) })
	b.Run("partition", func(b *testing.B) { run(b, partDSN, prune) })
	b.Run("walk", func(b *testing.B) {
		run(b, rowsDSN, func(s *Store) (int64, error) {
			rep, err := s.VerifyLedger(ctx)
			if err == nil && len(rep.Broken) != 0 {
				b.Fatalf("broken: %v", rep.Broken[:1])
			}
			return int64(rep.Records), err
		})
	})
}

// BenchmarkIngestPartitions ingests 20,000 new events (new ids, for existing
// agents; batches of service.DefaultBatchSize) into a copy of a 100,000-event
// ledger held in one partition, and into a copy of the same ledger spread
// over five (rotated every 20,000 events): every event id is then looked up
// in five partitions' keys instead of one. Run with -count to alternate.
func BenchmarkIngestPartitions(b *testing.B) {
	ctx := context.Background()
	if testing.Short() {
		b.Skip("builds two 100,000-event ledgers")
	}
	build := func(parts int) string {
		dsn := pgtest.NewDatabase(b)
		s, err := Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		evs := benchEvents("base", pruneBenchEvents, pruneBenchAgents, 5)
		per := len(evs) / parts
		for p := range parts {
			chunk := evs[p*per : (p+1)*per]
			for i := 0; i < len(chunk); i += 10_000 {
				if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op-1", Events: chunk[i:min(i+10_000, len(chunk))]}); err != nil {
					b.Fatal(err)
				}
			}
			if p < parts-1 {
				if _, err := s.RotatePartitions(ctx, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, err := s.pool.Exec(ctx, `ANALYZE`); err != nil {
			b.Fatal(err)
		}
		return dsn
	}
	templates := map[int]string{1: build(1), 5: build(5)}
	for _, parts := range []int{1, 5} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				s, err := Open(ctx, pgtest.CopyDatabase(b, templates[parts]))
				if err != nil {
					b.Fatal(err)
				}
				evs := benchEvents("new", 20_000, pruneBenchAgents, 6)
				b.StartTimer()
				for i := 0; i < len(evs); i += service.DefaultBatchSize {
					if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op-1", Events: evs[i:min(i+service.DefaultBatchSize, len(evs))]}); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				s.Close()
			}
			b.ReportMetric(float64(b.N*20_000)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
