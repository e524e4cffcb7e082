package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// The multi-process test re-executes this test binary as worker processes;
// TestMain runs the worker instead of the tests when these are set.
const (
	envWorkerDSN  = "SWARMSCORE_PG_WORKER_DSN"
	envWorkerID   = "SWARMSCORE_PG_WORKER_ID"
	envWorkerOut  = "SWARMSCORE_PG_WORKER_OUT"
	envWorkerSeed = "SWARMSCORE_PG_WORKER_SEED"
)

func TestMain(m *testing.M) {
	if dsn := os.Getenv(envWorkerDSN); dsn != "" {
		if err := runWorker(dsn); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if bigDB.store != nil {
		bigDB.store.Close()
	}
	if bigDB.drop != nil {
		if err := bigDB.drop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// Shape of the shared workload.
const (
	mpProcesses   = 3  // worker OS processes
	mpConnections = 4  // concurrent writers (goroutines, each its own pooled connection) per process
	mpAgents      = 24 // agents the events are spread over
	mpEvents      = 900
	mpOperator    = "op-mp"
)

// mpAsOf is the instant the final counts are checked at; event end times
// straddle both ends of its window.
var mpAsOf = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// universeEvent is one event of the workload with its whole lifecycle: every
// report of it, by any writer, is one of these statuses, so its final state
// is the last one whatever the order the reports arrive in.
type universeEvent struct {
	base ledger.Event // immutable fields
	path []ledger.Status
	end  time.Time // end time of the terminal status, if the path ends in one
}

func (u *universeEvent) report(k int) ledger.Event {
	e := u.base
	e.Status = u.path[k]
	if e.Status.Terminal() {
		e.EndedAt = u.end
	}
	return e
}

// universe derives the workload from seed, identically in every process.
func universe(seed uint64) []universeEvent {
	r := rand.New(rand.NewPCG(seed, 1))
	conduitPaths := [][]ledger.Status{
		{ledger.Pending, ledger.Running, ledger.Verified},
		{ledger.Pending, ledger.Running, ledger.Failed},
		{ledger.Running, ledger.Verified},
		{ledger.Pending, ledger.Error},
		{ledger.Pending, ledger.Running, ledger.Timeout},
		{ledger.Pending, ledger.Running}, // still running
	}
	ap2Paths := [][]ledger.Status{
		{ledger.Negotiating, ledger.Held, ledger.Executing, ledger.Delivered, ledger.Settled},
		{ledger.Held, ledger.Delivered, ledger.Settled},
		{ledger.Negotiating, ledger.Held, ledger.Executing, ledger.Delivered, ledger.Disputed},
		{ledger.Held, ledger.Executing, ledger.Refunded},
		{ledger.Negotiating, ledger.Cancelled},
		{ledger.Negotiating, ledger.Held},
	}
	out := make([]universeEvent, mpEvents)
	for i := range out {
		started := mpAsOf.Add(-time.Duration(r.Int64N(int64(100 * 24 * time.Hour))))
		// End times from 15 days before the window to a day after as_of,
		// some exactly on its boundaries.
		end := started.Add(time.Duration(r.Int64N(int64(12 * time.Hour)))).Truncate(time.Microsecond)
		switch i % 50 {
		case 0:
			end = ledger.WindowStart(mpAsOf)
		case 1:
			end = mpAsOf
		case 2:
			end = mpAsOf.Add(time.Microsecond)
		}
		if end.Before(started) {
			started = end
		}
		u := universeEvent{end: end}
		u.base = ledger.Event{
			ID: fmt.Sprintf("ev-%04d", i), AgentID: fmt.Sprintf("agent-%02d", r.IntN(mpAgents)), BuyerID: "buyer-" + strconv.Itoa(r.IntN(5)),
			StartedAt: started.Truncate(time.Microsecond),
		}
		if r.IntN(3) == 0 {
			u.base.Type, u.base.EscrowAmountCents = ledger.AP2Transaction, 100+r.Int64N(1_000_000)
			u.path = ap2Paths[r.IntN(len(ap2Paths))]
		} else {
			u.base.Type = ledger.ConduitSession
			u.path = conduitPaths[r.IntN(len(conduitPaths))]
		}
		out[i] = u
	}
	return out
}

// streams deals the reports to the writers: each writer gets a random
// subset of each event's statuses (duplicates included), the final status of
// every event goes to at least two writers, and each writer shuffles its
// reports, so the same ids arrive with the same, later and earlier statuses
// in different orders.
func streams(seed uint64, u []universeEvent, writers int) [][]ledger.Event {
	r := rand.New(rand.NewPCG(seed, 2))
	out := make([][]ledger.Event, writers)
	for i := range u {
		last := len(u[i].path) - 1
		a, b := r.IntN(writers), r.IntN(writers)
		for b == a {
			b = r.IntN(writers)
		}
		out[a] = append(out[a], u[i].report(last))
		out[b] = append(out[b], u[i].report(last))
		for w := range writers {
			for k := range u[i].path {
				if r.IntN(3) == 0 {
					out[w] = append(out[w], u[i].report(k))
				}
			}
		}
	}
	for w := range out {
		r.Shuffle(len(out[w]), func(i, j int) { out[w][i], out[w][j] = out[w][j], out[w][i] })
	}
	return out
}

// workerResult is what a worker process reports: how many reports of each
// event it saw accepted.
type workerResult struct {
	Accepted map[string]int `json:"accepted"` // "type/id" -> accepted reports
	Reports  int            `json:"reports"`
}

func eventKeyString(e *ledger.Event) string { return string(e.Type) + "/" + e.ID }

// runWorker is a worker process: mpConnections goroutines ingest their
// streams in randomly sized batches while one of them also refreshes scores
// and recomputes all of them now and then, as a serving replica would.
func runWorker(dsn string) error {
	id, err := strconv.Atoi(os.Getenv(envWorkerID))
	if err != nil {
		return err
	}
	seed, err := strconv.ParseUint(os.Getenv(envWorkerSeed), 10, 64)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer s.Close()
	all := streams(seed, universe(seed), mpProcesses*mpConnections)
	var (
		mu  sync.Mutex
		res = workerResult{Accepted: map[string]int{}}
		wg  sync.WaitGroup
	)
	errs := make(chan error, mpConnections)
	for c := range mpConnections {
		w := id*mpConnections + c
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(100+w)))
			evs := all[w]
			for len(evs) > 0 {
				n := min(len(evs), 1+r.IntN(60))
				out, err := s.Ingest(ctx, ledger.Batch{Operator: mpOperator, Events: evs[:n]})
				if err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				mu.Lock()
				for k, o := range out {
					res.Reports++
					switch o.Status {
					case ledger.OutcomeAccepted:
						res.Accepted[eventKeyString(&evs[k])]++
					case ledger.OutcomeRejected:
						if o.Err == nil {
							mu.Unlock()
							errs <- fmt.Errorf("writer %d: rejected without a reason", w)
							return
						}
					}
				}
				mu.Unlock()
				evs = evs[n:]
				if c == 0 && r.IntN(4) == 0 {
					agent := fmt.Sprintf("agent-%02d", r.IntN(mpAgents))
					if _, err := s.RefreshScore(ctx, agent, mpAsOf, nil); err != nil && !isNotFound(err) {
						errs <- fmt.Errorf("writer %d: refresh: %w", w, err)
						return
					}
				}
				if c == 1 && r.IntN(15) == 0 {
					if _, err := s.RecomputeAll(ctx, mpAsOf, r.IntN(2) == 0); err != nil {
						errs <- fmt.Errorf("writer %d: recompute: %w", w, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(os.Getenv(envWorkerOut), b, 0o600)
}

// TestMultiProcessOverlappingIngest runs mpProcesses OS processes with
// mpConnections writers each, all ingesting overlapping report streams of
// the same events (same ids, same, later and earlier statuses, different
// orders and batch splits) into one database, while scores are refreshed and
// recomputed. Afterwards every id is stored once in its final state, each
// event has exactly as many chain records as reports accepted for it, every
// chain verifies, the counts equal a brute-force count, and no cache entry
// that answers as_of disagrees with them.
func TestMultiProcessOverlappingIngest(t *testing.T) {
	s := openTest(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	dsn := s.pool.Config().ConnString()
	dir := t.TempDir()

	cmds := make([]*exec.Cmd, mpProcesses)
	for p := range cmds {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(),
			envWorkerDSN+"="+dsn, envWorkerID+"="+strconv.Itoa(p),
			envWorkerSeed+"="+strconv.FormatUint(seed, 10),
			envWorkerOut+"="+filepath.Join(dir, fmt.Sprintf("worker-%d.json", p)))
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatalf("start worker %d: %v", p, err)
		}
		cmds[p] = cmd
	}
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v", p, err)
		}
	}

	accepted := map[string]int{}
	reports := 0
	for p := range mpProcesses {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("worker-%d.json", p)))
		if err != nil {
			t.Fatal(err)
		}
		var res workerResult
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		reports += res.Reports
		for k, n := range res.Accepted {
			accepted[k] += n
		}
	}
	u := universe(seed)
	t.Logf("%d reports of %d events from %d writers in %d processes", reports, len(u), mpProcesses*mpConnections, mpProcesses)

	ctx := t.Context()
	// Every id once, in its final state; records per event = accepted reports.
	type row struct {
		status  string
		records int
	}
	stored := map[string]row{}
	rows, err := s.pool.Query(ctx, `
		SELECT 'conduit_session/' || e.id, e.status, (SELECT count(*) FROM ledger_records r WHERE r.event_type = 'conduit_session' AND r.event_id = e.id)
		FROM conduit_sessions e
		UNION ALL
		SELECT 'ap2_transaction/' || e.id, e.status, (SELECT count(*) FROM ledger_records r WHERE r.event_type = 'ap2_transaction' AND r.event_id = e.id)
		FROM ap2_transactions e`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		var r row
		if err := rows.Scan(&k, &r.status, &r.records); err != nil {
			t.Fatal(err)
		}
		if _, dup := stored[k]; dup {
			t.Fatalf("event %s stored twice", k)
		}
		stored[k] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(u) {
		t.Errorf("%d events stored, want %d", len(stored), len(u))
	}
	var totalRecords int
	for i := range u {
		e := u[i].base
		k := eventKeyString(&e)
		got, want := stored[k], u[i].path[len(u[i].path)-1]
		if got.status != string(want) {
			t.Errorf("event %s is %q, want %q", k, got.status, want)
		}
		if got.records != accepted[k] {
			t.Errorf("event %s has %d chain records but %d reports were accepted", k, got.records, accepted[k])
		}
		if accepted[k] < 1 || accepted[k] > len(u[i].path) {
			t.Errorf("event %s: %d reports accepted for a %d-status lifecycle", k, accepted[k], len(u[i].path))
		}
		totalRecords += got.records
	}

	rep, err := s.VerifyLedger(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Broken) != 0 {
		t.Fatalf("VerifyLedger: %v", rep.Broken)
	}
	if rep.Records != int64(totalRecords) || rep.Events != int64(len(u)) {
		t.Errorf("VerifyLedger checked %d records and %d events, want %d and %d", rep.Records, rep.Events, totalRecords, len(u))
	}

	// Exact counts against brute force, and no stale cache entry.
	want := map[string]*score.Counts{}
	for i := range u {
		e := u[i].report(len(u[i].path) - 1)
		c := want[e.AgentID]
		if c == nil {
			c = &score.Counts{}
			want[e.AgentID] = c
		}
		if !e.Status.CountsTotal() || !ledger.InWindow(e.EndedAt, mpAsOf) {
			continue
		}
		if e.Type == ledger.ConduitSession {
			c.ConduitTotal++
			if e.Status.CountsSuccess() {
				c.ConduitSuccess++
			}
		} else {
			c.AP2Total++
			if e.Status.CountsSuccess() {
				c.AP2Success++
			}
		}
	}
	for agent, w := range want {
		got, err := s.Counts(ctx, agent, mpAsOf)
		if err != nil {
			t.Fatal(err)
		}
		if got != *w {
			t.Errorf("agent %s: counts %+v, want %+v", agent, got, *w)
		}
		if e, ok, err := s.CachedScore(ctx, agent, mpAsOf); err != nil {
			t.Fatal(err)
		} else if ok && e.Result.Counts != *w {
			t.Errorf("agent %s: a stale cache entry answers as_of: %+v, want %+v", agent, e.Result.Counts, *w)
		}
	}
	if _, err := s.RecomputeAll(ctx, mpAsOf, false); err != nil {
		t.Fatal(err)
	}
	for agent, w := range want {
		e, ok, err := s.CachedScore(ctx, agent, mpAsOf)
		if err != nil || !ok {
			t.Fatalf("agent %s: no cache entry after RecomputeAll (%v)", agent, err)
		}
		r, _ := score.Compute(*w)
		if e.Result != r {
			t.Errorf("agent %s: recomputed %+v, want %+v", agent, e.Result, r)
		}
	}
}

func isNotFound(err error) bool { return errors.Is(err, errkind.ErrNotFound) }
