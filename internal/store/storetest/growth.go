package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/signal"
)

// GrowthAsOf is the instant the growth measurements count windows at; the
// generated events end in the 89 days before it.
var GrowthAsOf = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// GrowthEventsPerAgent is how many events each generated agent has.
const GrowthEventsPerAgent = 100

// GrowthIngest is how many events the ingest measurement adds.
const GrowthIngest = 20_000

// GrowthBackend is a back end holding n generated events of n /
// GrowthEventsPerAgent agents named "agent-0", "agent-1", …, each agent's
// head_seq at its last record, and the baselines its figures are compared
// with, over the same rows.
type GrowthBackend struct {
	Store  service.Backend
	Agents int
	// RawInsert writes evs (new events of existing agents) by the back
	// end's raw bulk path: COPY, or one transaction of prepared INSERTs.
	RawInsert func(b *testing.B, evs []ledger.Event)
	// BareRecompute is the bare GROUP BY count of the window's counted
	// events per agent; BareSignals the bare GROUP BY of the signals'
	// (agent, buyer) pairs. Each returns its number of rows.
	BareRecompute, BareSignals func(b *testing.B) int
	// BareLookup reads an agent's cache row by its primary key.
	BareLookup func(b *testing.B, agent string) error
}

// GrowthSizes are the event counts SWARMSCORE_GROWTH lists (comma
// separated, e.g. 100000,1000000,10000000); 100,000 without it.
func GrowthSizes(b *testing.B) []int {
	env := os.Getenv("SWARMSCORE_GROWTH")
	if env == "" {
		return []int{100_000}
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 10*GrowthEventsPerAgent {
			b.Fatalf("SWARMSCORE_GROWTH: %q is not an event count of at least %d", f, 10*GrowthEventsPerAgent)
		}
		out = append(out, n)
	}
	return out
}

// Growth measures, for each size, on a back end load returns holding that
// many events: ingest (GrowthIngest new events of existing agents through
// Store.Ingest, in batches of service.DefaultBatchSize; events/s) against
// RawInsert of as many other events; RecomputeAll against BareRecompute;
// SignalFigures of every agent against BareSignals; and a cached score
// lookup (CachedScore of 2,000 random agents after the recompute;
// µs/lookup) against BareLookup. Run with -benchtime 1x; the sub-benchmark
// names carry the size, for docs/growth (scripts/growthplot).
func Growth(b *testing.B, load func(b *testing.B, n int) *GrowthBackend) {
	ctx := context.Background()
	for _, n := range GrowthSizes(b) {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			t0 := time.Now()
			g := load(b, n)
			b.Logf("generated %d events of %d agents in %s", n, g.Agents, time.Since(t0).Round(time.Second))
			newEvents := func(prefix string) []ledger.Event {
				r := rand.New(rand.NewPCG(uint64(n), 11))
				evs := make([]ledger.Event, GrowthIngest)
				for i := range evs {
					end := GrowthAsOf.Add(-time.Duration(r.Int64N(int64(89 * 24 * time.Hour)))).Truncate(time.Second)
					e := ledger.Event{ID: fmt.Sprintf("%s-%d", prefix, i), AgentID: "agent-" + strconv.Itoa(r.IntN(g.Agents)),
						BuyerID: "buyer-" + strconv.Itoa(r.IntN(5000)), StartedAt: end.Add(-time.Minute), EndedAt: end}
					if i%2 == 0 {
						e.Type, e.Status = ledger.ConduitSession, ledger.Verified
					} else {
						e.Type, e.Status, e.EscrowAmountCents = ledger.AP2Transaction, ledger.Settled, 12_345
					}
					evs[i] = e
				}
				return evs
			}
			rate := func(b *testing.B) {
				b.ReportMetric(float64(b.N*GrowthIngest)/b.Elapsed().Seconds(), "events/s")
			}
			b.Run("ingest", func(b *testing.B) {
				for i := range b.N {
					evs := newEvents(fmt.Sprintf("gi%d", i))
					b.ResetTimer()
					for len(evs) > 0 {
						k := min(service.DefaultBatchSize, len(evs))
						if _, err := g.Store.Ingest(ctx, ledger.Batch{Operator: "op-bench", Events: evs[:k]}); err != nil {
							b.Fatal(err)
						}
						evs = evs[k:]
					}
				}
				rate(b)
			})
			b.Run("ingest-raw", func(b *testing.B) {
				for i := range b.N {
					evs := newEvents(fmt.Sprintf("gr%d", i))
					b.ResetTimer()
					g.RawInsert(b, evs)
				}
				rate(b)
			})
			b.Run("recompute", func(b *testing.B) {
				for range b.N {
					if k, err := g.Store.RecomputeAll(ctx, GrowthAsOf, false); err != nil || k < int64(g.Agents) {
						b.Fatalf("recomputed %d agents, want %d: %v", k, g.Agents, err)
					}
				}
			})
			b.Run("recompute-groupby", func(b *testing.B) {
				for range b.N {
					if k := g.BareRecompute(b); k == 0 {
						b.Fatal("no groups")
					}
				}
			})
			b.Run("signals", func(b *testing.B) {
				for range b.N {
					fs, err := g.Store.SignalFigures(ctx, GrowthAsOf, "", signal.Defaults.BurstInterval)
					if err != nil || len(fs) == 0 {
						b.Fatalf("%d figures: %v", len(fs), err)
					}
				}
			})
			b.Run("signals-groupby", func(b *testing.B) {
				for range b.N {
					if k := g.BareSignals(b); k == 0 {
						b.Fatal("no groups")
					}
				}
			})
			const lookups = 2000
			lookup := func(b *testing.B, f func(agent string) error) {
				r := rand.New(rand.NewPCG(7, 7))
				for range b.N {
					for range lookups {
						if err := f("agent-" + strconv.Itoa(r.IntN(g.Agents))); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*lookups), "µs/lookup")
			}
			b.Run("lookup", func(b *testing.B) {
				lookup(b, func(agent string) error {
					_, ok, err := g.Store.CachedScore(ctx, agent, GrowthAsOf)
					if err == nil && !ok {
						err = fmt.Errorf("%s: no cache entry", agent)
					}
					return err
				})
			})
			b.Run("lookup-pk", func(b *testing.B) {
				lookup(b, func(agent string) error { return g.BareLookup(b, agent) })
			})
		})
	}
}
