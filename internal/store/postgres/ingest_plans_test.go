package postgres

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
)

// TestIngestFindsRowsByKeyWithoutStatistics ingests into a fresh database
// whose ledger tables have no statistics (analysed only while empty, by
// Migrate) and checks that no statement of the ingest transactions read a
// ledger table sequentially: the lookups and the UPDATE … FROM unnest joins
// probed the keys. Before keyPlans, every batch of 1000 ids scanned the
// event tables whole (issue 25). The store has one connection, so its
// plans are cached as in a long ingest, starting from tiny first batches
// (one event, then its transition), and the counters read are its own.
// The tables have three partitions, as after two rotations.
func TestIngestFindsRowsByKeyWithoutStatistics(t *testing.T) {
	ctx := t.Context()
	dsn := pgtest.NewDatabase(t)
	if u, err := url.Parse(dsn); err == nil && strings.HasPrefix(u.Scheme, "postgres") {
		q := u.Query()
		q.Set("pool_max_conns", "1")
		u.RawQuery = q.Encode()
		dsn = u.String()
	} else {
		dsn += " pool_max_conns=1"
	}
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	ingest := func(evs []ledger.Event) {
		t.Helper()
		out, err := s.Ingest(ctx, ledger.Batch{Operator: "op", Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range out {
			if o.Status != ledger.OutcomeAccepted {
				t.Fatalf("event %d (%s): %v %v", i, evs[i].ID, o.Status, o.Err)
			}
		}
	}
	// open is e as first reported: in progress.
	open := func(e ledger.Event) ledger.Event {
		e.Status, e.EndedAt = ledger.Running, time.Time{}
		if e.Type == ledger.AP2Transaction {
			e.Status = ledger.Held
		}
		return e
	}
	first := benchEvents("one-", 2, 1, 3)
	ingest([]ledger.Event{open(first[0])})
	ingest([]ledger.Event{first[0]})
	ingest(first[1:])
	// Two more partitions (migration 00020): each id is looked up in
	// three partitions' keys, and the bulk below lands in the third.
	for range 2 {
		if _, err := s.RotatePartitions(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
	}

	seqRead := func() (scans, rows int64) {
		t.Helper()
		// This connection's counters reach the shared ones when it next
		// goes idle, forced by pg_stat_force_next_flush.
		if _, err := s.pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(seq_scan), 0), coalesce(sum(seq_tup_read), 0) FROM pg_stat_user_tables
			WHERE relname ~ '^(conduit_sessions|ap2_transactions|task_offers|ledger_records)_p[0-9]+$' OR relname IN ('agents', 'swarmscore_cache')`).
			Scan(&scans, &rows)
		if err != nil {
			t.Fatal(err)
		}
		return scans, rows
	}
	scans0, rows0 := seqRead()
	// 24 batches of 1000 over 300 agents: each batch reports 500 new
	// events in progress and completes the 500 of the batch before, so
	// every batch looks events up, inserts, updates events and agents.
	const batches, half = 24, 500
	evs := benchEvents("bulk-", batches*half, 300, 4)
	for b := 0; b <= batches; b++ {
		var batch []ledger.Event
		if b > 0 {
			batch = append(batch, evs[(b-1)*half:b*half]...)
		}
		if b < batches {
			for _, e := range evs[b*half : (b+1)*half] {
				batch = append(batch, open(e))
			}
		}
		ingest(batch)
	}
	scans, rows := seqRead()
	if scans != scans0 || rows != rows0 {
		t.Errorf("ingest scanned ledger tables sequentially: %d scans, %d rows read", scans-scans0, rows-rows0)
	}
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM conduit_sessions WHERE seq > 0 AND completed_at IS NOT NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, e := range append(first, evs...) {
		if e.Type == ledger.ConduitSession {
			want++
		}
	}
	if n != want {
		t.Errorf("%d completed sessions, want %d", n, want)
	}
	rep, err := s.VerifyLedger(ctx)
	if err != nil || len(rep.Broken) != 0 || rep.Events != int64(len(evs)+len(first)) {
		t.Fatalf("VerifyLedger: %+v %v", rep, err)
	}
}

// TestAnalyze checks that Migrate leaves the tables analysed (statistics
// of empty tables: reltuples 0, not -1 for never) and that Analyze gives
// the partitioned event tables statistics of their ids.
func TestAnalyze(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	var never int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname IN ('agents', 'conduit_sessions_p1', 'ap2_transactions_p1', 'ledger_records_p1') AND reltuples < 0`).Scan(&never); err != nil {
		t.Fatal(err)
	}
	if never != 0 {
		t.Errorf("%d ledger tables never analysed after Migrate", never)
	}
	if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op", Events: benchEvents("a-", 300, 20, 5)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Analyze(ctx); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"conduit_sessions", "ap2_transactions", "ledger_records"} {
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stats WHERE tablename = $1 AND inherited`, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("%s: no statistics after Analyze", table)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Analyze(cctx); err == nil {
		t.Error("Analyze with a cancelled context succeeded")
	}
}
