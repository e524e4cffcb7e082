package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/client"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
)

// TestSoak runs mixed load against the real server for SWARMSCORE_SOAK
// (a duration, e.g. 2m; the test is skipped without it), on SQLite, or on
// PostgreSQL with SWARMSCORE_SOAK_DB=postgres, sampling the server's
// goroutines and heap every few seconds: after a warm-up, neither may
// trend upwards. .ci/run runs it for 30 s; docs/RELIABILITY.md has the
// figures of longer runs.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("SWARMSCORE_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set SWARMSCORE_SOAK to a duration (e.g. 2m) to run the soak test")
	}
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "swarmscore.db")
	if os.Getenv("SWARMSCORE_SOAK_DB") == "postgres" {
		dsn = pgtest.NewDatabase(t)
	}
	s := startArgs(t, dsn, []string{"--log-level", "warn"}, serverEnv...)
	op := s.client(adminToken)
	pub := s.client("")
	const agents = 50
	var certs [agents][]byte
	for a := range agents {
		if _, err := op.IngestEvents(ctx, history(fmt.Sprintf("soak-%d", a))); err != nil {
			t.Fatal(err)
		}
		c, err := pub.Certificate(ctx, fmt.Sprintf("soak-%d", a))
		if err != nil {
			t.Fatal(err)
		}
		certs[a] = c.Raw
	}

	type sample struct {
		at               time.Duration
		goroutines, heap float64
		rss              float64
	}
	var samples []sample
	every := max(d/40, time.Second)
	var requests, failures atomic.Int64
	var mu sync.Mutex
	latencies := map[string][]time.Duration{}
	stop := time.Now().Add(d)
	var seq atomic.Int64
	var wg sync.WaitGroup
	for w := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			own := map[string][]time.Duration{}
			for time.Now().Before(stop) {
				a := rng.IntN(agents)
				agent := fmt.Sprintf("soak-%d", a)
				var err error
				var kind string
				start := time.Now()
				switch p := rng.IntN(100); {
				case p < 35:
					kind = "certificate"
					_, err = pub.Certificate(ctx, agent)
				case p < 55:
					kind = "score"
					_, err = pub.Score(ctx, agent)
				case p < 70:
					kind = "verify"
					var v *client.Verification
					v, err = pub.Verify(ctx, certs[a], agent)
					if err == nil && !v.SignatureValid {
						err = fmt.Errorf("a genuine passport failed its signature: %+v", v)
					}
				case p < 82:
					kind = "events"
					n := seq.Add(1)
					end := time.Now().UTC().Add(-time.Second).Truncate(time.Second)
					st := "VERIFIED"
					if n%4 == 0 {
						st = "FAILED"
					}
					_, err = op.IngestEvents(ctx, []client.Event{client.ConduitSession(fmt.Sprintf("soak-e%d", n), agent, st, end.Add(-time.Minute), end)})
				case p < 88:
					kind = "escrow"
					_, err = op.Escrow(ctx, agent, int64(1000+rng.IntN(100000)))
				case p < 92:
					kind = "agents"
					_, err = op.Agents(ctx, client.AgentsQuery{Limit: 20})
				case p < 96:
					kind = "unknown agent"
					if _, e := pub.Score(ctx, fmt.Sprintf("ghost-%d", rng.IntN(1000))); !client.IsProblem(e, client.ProblemNotFound) {
						err = fmt.Errorf("unknown agent: %v", e)
					}
				default:
					kind = "readyz"
					err = pub.Ready(ctx)
				}
				own[kind] = append(own[kind], time.Since(start))
				requests.Add(1)
				if err != nil {
					failures.Add(1)
					t.Errorf("%s: %v", kind, err)
				}
			}
			mu.Lock()
			for k, v := range own {
				latencies[k] = append(latencies[k], v...)
			}
			mu.Unlock()
		}()
	}
	began := time.Now()
	for time.Now().Before(stop) {
		time.Sleep(every)
		m, err := pub.Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, sample{time.Since(began), metric(t, m, "go_goroutines"), metric(t, m, "go_memstats_heap_inuse_bytes"),
			metric(t, m, "process_resident_memory_bytes")})
	}
	wg.Wait()
	if failures.Load() > 0 {
		t.Fatalf("%d of %d requests failed", failures.Load(), requests.Load())
	}

	// The first quarter warms caches and pools; over the rest, compare the
	// last third with the first third of the samples.
	rest := samples[len(samples)/4:]
	third := max(1, len(rest)/3)
	mean := func(ss []sample, f func(sample) float64) float64 {
		sum := 0.0
		for _, s := range ss {
			sum += f(s)
		}
		return sum / float64(len(ss))
	}
	goroutines := func(s sample) float64 { return s.goroutines }
	heap := func(s sample) float64 { return s.heap }
	rss := func(s sample) float64 { return s.rss }
	g0, g1 := mean(rest[:third], goroutines), mean(rest[len(rest)-third:], goroutines)
	h0, h1 := mean(rest[:third], heap), mean(rest[len(rest)-third:], heap)
	r0, r1 := mean(rest[:third], rss), mean(rest[len(rest)-third:], rss)
	var lat string
	kinds := make([]string, 0, len(latencies))
	for k := range latencies {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		l := latencies[k]
		slices.Sort(l)
		lat += fmt.Sprintf(" %s p50 %s p99 %s;", k, l[len(l)/2].Round(10*time.Microsecond), l[len(l)*99/100].Round(10*time.Microsecond))
	}
	t.Logf("soak %s (%s): %d requests (%.0f/s), none failed; %d samples; goroutines %.0f → %.0f, heap in use %.1f → %.1f MiB, RSS %.1f → %.1f MiB (first → last third after warm-up);%s",
		d, dsnKind(dsn), requests.Load(), float64(requests.Load())/d.Seconds(), len(samples), g0, g1, h0/(1<<20), h1/(1<<20), r0/(1<<20), r1/(1<<20), lat)
	if g1 > g0+5 {
		t.Errorf("goroutines grew from %.0f to %.0f", g0, g1)
	}
	if h1 > h0*1.25+4<<20 {
		t.Errorf("the heap grew from %.1f to %.1f MiB", h0/(1<<20), h1/(1<<20))
	}
	s.stop()
}

func dsnKind(dsn string) string {
	if len(dsn) > 7 && dsn[:7] == "sqlite:" {
		return "SQLite"
	}
	return "PostgreSQL"
}

// metric reads one unlabelled metric from a Prometheus exposition.
func metric(t *testing.T, exposition, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)`).FindStringSubmatch(exposition)
	if m == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
