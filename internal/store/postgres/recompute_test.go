package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
	"github.com/swarmscore/swarmscore/score"
)

// lockGuard bounds waits that only a lock held by another transaction could
// make long: when it expires the test fails as blocked instead of hanging.
// It is a deadlock detector, not a performance assertion.
const lockGuard = 30 * time.Second

// TestRecomputeAllDoesNotBlockIngest interleaves deterministically: a
// RecomputeAll takes its snapshot and is then held (a test transaction
// locks one cache row it must write); while it is held, batches with
// terminal reports for that agent and another commit; then it is released
// and writes the counts it read before them. Ingest must complete while the
// recompute is held, and neither agent's entry may be served until it is
// refreshed.
func TestRecomputeAllDoesNotBlockIngest(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	start, end := benchAsOf.Add(-2*time.Hour), benchAsOf.Add(-time.Hour)
	var evs []ledger.Event
	for i := range 50 {
		evs = append(evs, ledger.Event{Type: ledger.ConduitSession, ID: "c" + strconv.Itoa(i), AgentID: "agent-" + strconv.Itoa(i),
			Status: ledger.Verified, StartedAt: start, EndedAt: end})
	}
	if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op", Events: evs}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecomputeAll(ctx, benchAsOf, false); err != nil {
		t.Fatal(err)
	}

	// Hold agent-7's cache row.
	blocker, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(context.Background())
	if _, err := blocker.Exec(ctx, `SELECT 1 FROM swarmscore_cache WHERE agent_id = 'agent-7' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := s.RecomputeAll(ctx, benchAsOf, false)
		done <- result{n, err}
	}()
	// Once the statement waits for the row lock its snapshot is taken.
	waitUntil(t, "RecomputeAll to wait for the held row", func() bool {
		var waiting int
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO swarmscore_cache%'`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		return waiting == 1
	})

	ictx, cancel := context.WithTimeout(ctx, lockGuard)
	defer cancel()
	late := []ledger.Event{
		{Type: ledger.ConduitSession, ID: "late-7", AgentID: "agent-7", Status: ledger.Failed, StartedAt: start, EndedAt: end},
		{Type: ledger.AP2Transaction, ID: "late-30", AgentID: "agent-30", BuyerID: "b", EscrowAmountCents: 100,
			Status: ledger.Settled, StartedAt: start, EndedAt: end},
		{Type: ledger.ConduitSession, ID: "new-agent", AgentID: "agent-new", Status: ledger.Verified, StartedAt: start, EndedAt: end},
	}
	for _, e := range late { // one batch per event: three commits
		out, err := s.Ingest(ictx, ledger.Batch{Operator: "op", Events: []ledger.Event{e}})
		if err != nil {
			t.Fatalf("Ingest while RecomputeAll runs: %v (blocked by it?)", err)
		}
		if out[0].Status != ledger.OutcomeAccepted {
			t.Fatalf("Ingest %s: %v %v", e.ID, out[0].Status, out[0].Err)
		}
	}
	select {
	case r := <-done:
		t.Fatalf("RecomputeAll finished (%d, %v) while a row it writes was locked", r.n, r.err)
	default:
	}
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(lockGuard):
		t.Fatal("RecomputeAll still blocked after the row was released")
	}
	if r.err != nil || r.n != 50 {
		t.Fatalf("RecomputeAll = %d, %v; want the 50 agents of its snapshot", r.n, r.err)
	}
	// The held recompute wrote pre-batch counts for agent-7 (and, before or
	// after the batch, for agent-30): they must not be served.
	var stale int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM swarmscore_cache c JOIN agents a ON a.id = c.agent_id
		WHERE c.agent_id = 'agent-7' AND c.ledger_seq <> a.terminal_seq AND c.valid_until > c.computed_at`).Scan(&stale); err != nil {
		t.Fatal(err)
	}
	if stale != 1 {
		t.Errorf("agent-7's entry: %d rows with an old version and a live valid_until, want 1 (the race this test stages did not happen)", stale)
	}
	for _, agent := range []string{"agent-7", "agent-30"} {
		if e, ok, err := s.CachedScore(ctx, agent, benchAsOf); err != nil || ok {
			t.Errorf("%s: served %+v (%v) computed before its terminal report", agent, e.Result.Counts, err)
		}
	}
	if _, ok, err := s.CachedScore(ctx, "agent-8", benchAsOf); err != nil || !ok {
		t.Errorf("agent-8 (no new report): hit %v, %v", ok, err)
	}
	checkServedEqualsLedger(t, s, benchAsOf)
	if n, err := s.RecomputeAll(ctx, benchAsOf, true); err != nil || n != 3 {
		t.Errorf("RecomputeAll(onlyStale) = %d, %v; want agent-7, agent-30 and agent-new", n, err)
	}
	if served := checkServedEqualsLedger(t, s, benchAsOf); served != 51 {
		t.Errorf("%d entries served after RecomputeAll(onlyStale), want 51", served)
	}
}

// TestRefreshScoreDoesNotBlockIngest: a batch for the agent commits while
// RefreshScore is between its counts and its write (inside IssueFunc).
// The batch must not wait for the refresh, and the refresh's entry, older
// than the batch, must not be served.
func TestRefreshScoreDoesNotBlockIngest(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	start, end := benchAsOf.Add(-2*time.Hour), benchAsOf.Add(-time.Hour)
	if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op", Events: []ledger.Event{{Type: ledger.ConduitSession, ID: "c1", AgentID: "a",
		Status: ledger.Verified, StartedAt: start, EndedAt: end}}}); err != nil {
		t.Fatal(err)
	}
	entry, err := s.RefreshScore(ctx, "a", benchAsOf, func(e *ledger.ScoreEntry) ([]byte, string, error) {
		ictx, cancel := context.WithTimeout(ctx, lockGuard)
		defer cancel()
		out, err := s.Ingest(ictx, ledger.Batch{Operator: "op", Events: []ledger.Event{{Type: ledger.ConduitSession, ID: "c2", AgentID: "a",
			Status: ledger.Failed, StartedAt: start, EndedAt: end}}})
		if err != nil {
			return nil, "", fmt.Errorf("Ingest during RefreshScore: %w (blocked by it?)", err)
		}
		if out[0].Status != ledger.OutcomeAccepted {
			return nil, "", fmt.Errorf("Ingest during RefreshScore: %v %v", out[0].Status, out[0].Err)
		}
		return []byte(`{}`), "sig", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if entry.Result.Counts.ConduitTotal != 1 {
		t.Fatalf("refresh counted %+v, want the one event before the batch", entry.Result.Counts)
	}
	if e, ok, err := s.CachedScore(ctx, "a", benchAsOf); err != nil || ok {
		t.Errorf("served %+v (%v), computed before a terminal report", e.Result.Counts, err)
	}
	e, err := s.RefreshScore(ctx, "a", benchAsOf, nil)
	if err != nil || e.Result.Counts.ConduitTotal != 2 {
		t.Fatalf("second refresh: %+v %v", e.Result.Counts, err)
	}
	if _, ok, err := s.CachedScore(ctx, "a", benchAsOf); err != nil || !ok {
		t.Errorf("current entry not served: %v %v", ok, err)
	}
}

// TestRecomputeAllConcurrentWithIngest runs RecomputeAll and RefreshScore in
// loops while several goroutines ingest batches with terminal reports, then
// checks that every entry CachedScore serves equals a fresh count. It logs
// ingest batch latency with and without a concurrent recompute; the numbers
// are informational (the CPU is shared), not asserted.
func TestRecomputeAllConcurrentWithIngest(t *testing.T) {
	if testing.Short() {
		t.Log("short mode: a smaller ledger")
	}
	s := openTest(t)
	ctx := t.Context()
	agents, background := 2_000, 200_000
	if testing.Short() {
		background = 20_000
	}
	// Background ledger, loaded raw so the recompute has work to do.
	registerAgents(ctx, t, s, "op", agents)
	if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		copyEvents(ctx, t, tx, "op", benchEvents("bg-", background, agents, 1))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := s.RecomputeAll(ctx, benchAsOf, false); err != nil {
		t.Fatal(err)
	}
	t.Logf("RecomputeAll over %d agents / %d events: %s", agents, background, time.Since(t0).Round(time.Millisecond))

	const writers, batch = 3, 50
	var seq atomic.Int64
	phase := func(name string, d time.Duration, withRecompute bool) {
		var (
			mu         sync.Mutex
			latencies  []time.Duration
			recomputes []time.Duration
			refreshes  int
		)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(w), uint64(seq.Load())))
				for {
					select {
					case <-stop:
						return
					default:
					}
					evs := benchEvents(fmt.Sprintf("%s-%d-%d-", name, w, seq.Add(1)), batch, agents, r.Uint64())
					t0 := time.Now()
					out, err := s.Ingest(ctx, ledger.Batch{Operator: "op", Events: evs})
					lat := time.Since(t0)
					if err != nil {
						t.Error(err)
						return
					}
					for _, o := range out {
						if o.Status != ledger.OutcomeAccepted {
							t.Errorf("outcome %v %v", o.Status, o.Err)
							return
						}
					}
					mu.Lock()
					latencies = append(latencies, lat)
					mu.Unlock()
				}
			})
		}
		if withRecompute {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					t0 := time.Now()
					if _, err := s.RecomputeAll(ctx, benchAsOf, false); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					recomputes = append(recomputes, time.Since(t0))
					mu.Unlock()
				}
			})
			wg.Go(func() {
				r := rand.New(rand.NewPCG(9, 9))
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := s.RefreshScore(ctx, "agent-"+strconv.Itoa(r.IntN(agents)), benchAsOf, nil); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					refreshes++
					mu.Unlock()
				}
			})
		}
		time.Sleep(d)
		close(stop)
		wg.Wait()
		slices.Sort(latencies)
		if len(latencies) == 0 {
			t.Fatalf("%s: no batch completed", name)
		}
		q := func(p float64) time.Duration {
			return latencies[int(p*float64(len(latencies)-1))].Round(100 * time.Microsecond)
		}
		slices.Sort(recomputes)
		var slowest time.Duration
		if len(recomputes) > 0 {
			slowest = recomputes[len(recomputes)-1].Round(time.Millisecond)
		}
		t.Logf("%s: %d ingest batches of %d: p50 %s p99 %s max %s; %d RecomputeAll (slowest %s), %d RefreshScore",
			name, len(latencies), batch, q(0.5), q(0.99), q(1), len(recomputes), slowest, refreshes)
	}
	phase("ingest-alone", 2*time.Second, false)
	phase("with-recompute", 4*time.Second, true)

	// Entries the version check alone withholds: a recompute or refresh
	// wrote them over a concurrent batch's invalidation.
	var withheld int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM swarmscore_cache c JOIN agents a ON a.id = c.agent_id
		WHERE c.ledger_seq <> a.terminal_seq AND c.valid_until > c.computed_at`).Scan(&withheld); err != nil {
		t.Fatal(err)
	}
	served := checkServedEqualsLedger(t, s, benchAsOf)
	t.Logf("after the run: %d entries served (checked against fresh counts); %d stale entries withheld by the version check alone", served, withheld)
	if _, err := s.RecomputeAll(ctx, benchAsOf, true); err != nil {
		t.Fatal(err)
	}
	if served := checkServedEqualsLedger(t, s, benchAsOf); served != agents {
		t.Errorf("after RecomputeAll(onlyStale): %d entries served, want %d", served, agents)
	}
}

// checkServedEqualsLedger checks every entry CachedScore serves as of asOf
// against the ledger's counts and returns how many were served. The store
// must be quiescent.
func checkServedEqualsLedger(t *testing.T, s *Store, asOf time.Time) int {
	t.Helper()
	ctx := t.Context()
	rows, err := s.pool.Query(ctx, `SELECT id FROM agents ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	for _, id := range ids {
		e, ok, err := s.CachedScore(ctx, id, asOf)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		served++
		c, err := s.Counts(ctx, id, asOf)
		if err != nil {
			t.Fatal(err)
		}
		want, err := score.Compute(c)
		if err != nil {
			t.Fatal(err)
		}
		if e.Result != want {
			t.Errorf("%s: served a stale entry %+v, ledger counts %+v", id, e.Result.Counts, c)
		}
	}
	return served
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(lockGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMigration00002Backfill upgrades a database holding cache entries made
// before entries were versioned: a live entry keeps being served (it was
// computed while Ingest was locked out and no terminal report has
// invalidated it since), an invalidated one stays unserved, and the first
// terminal report afterwards retires the live one.
func TestMigration00002Backfill(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ctx := t.Context()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, db, err := newMigrator(s.pool)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := p.UpTo(ctx, 1); err != nil {
		t.Fatal(err)
	}
	computed := benchAsOf.Add(-time.Hour)
	for _, q := range []string{
		`INSERT INTO agents (id, head_seq) VALUES ('live', 3), ('invalidated', 2)`,
		`INSERT INTO swarmscore_cache (agent_id, score, tier, escrow_modifier_bp, computed_at, expires_at, valid_until)
			VALUES ('live', 0, 'NONE', 10000, $1::timestamptz, $1::timestamptz + interval '7 days', $1::timestamptz + interval '7 days'),
				('invalidated', 0, 'NONE', 10000, $1::timestamptz, $1::timestamptz + interval '7 days', $1::timestamptz)`,
	} {
		args := []any{computed}
		if !strings.Contains(q, "$1") {
			args = nil
		}
		if _, err := s.pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.CachedScore(ctx, "live", benchAsOf); err != nil || !ok {
		t.Errorf("live entry after the upgrade: hit %v, %v", ok, err)
	}
	if _, ok, err := s.CachedScore(ctx, "invalidated", benchAsOf); err != nil || ok {
		t.Errorf("invalidated entry after the upgrade: hit %v, %v", ok, err)
	}
	var terminal, version int64
	if err := s.pool.QueryRow(ctx, `SELECT a.terminal_seq, c.ledger_seq FROM agents a JOIN swarmscore_cache c ON c.agent_id = a.id
		WHERE a.id = 'invalidated'`).Scan(&terminal, &version); err != nil || terminal != 2 || version != -1 {
		t.Errorf("invalidated: terminal_seq %d ledger_seq %d (%v), want 2 and -1", terminal, version, err)
	}
	// The chain of "live" is not real (no records), but Ingest only needs
	// its head to append: seq 4, terminal.
	if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op", Events: []ledger.Event{{Type: ledger.ConduitSession, ID: "c1", AgentID: "live",
		Status: ledger.Failed, StartedAt: computed.Add(-time.Hour), EndedAt: computed.Add(-time.Minute)}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.pool.QueryRow(ctx, `SELECT terminal_seq FROM agents WHERE id = 'live'`).Scan(&terminal); err != nil || terminal != 4 {
		t.Errorf("live: terminal_seq %d (%v) after a terminal report at seq 4", terminal, err)
	}
	if _, ok, err := s.CachedScore(ctx, "live", benchAsOf); err != nil || ok {
		t.Errorf("live entry after a terminal report: hit %v, %v", ok, err)
	}
}
