package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/passport"
)

const benchToken = "bench-admin-token-0123456789abcdefghijkl"

// benchHoldServer is the real stack over the back end ("sqlite" or
// "postgres") with one agent of score 760 and an admin token: what the
// quote route and the hold route are measured against (docs/BENCHMARKS.md).
func benchHoldServer(b *testing.B, backend string) *Server {
	ctx := context.Background()
	var st service.Backend
	var err error
	if backend == "postgres" {
		st, err = postgres.Open(ctx, pgtest.NewDatabase(b))
	} else {
		st, err = sqlite.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "bench.db"))
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	key, _ := passport.NewKey([]byte("bench-signing-key-0123456789abcdefghij"))
	u := service.New(st, service.Config{Key: key, Platform: "bench", PlatformFeeBPS: 250})
	u.Certificates.StartCacheWatch()
	if _, err := u.Tokens.BootstrapAdminToken(ctx, benchToken); err != nil {
		b.Fatal(err)
	}
	end := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)
	var evs []ledger.Event
	for i := range 80 {
		evs = append(evs, ledger.Event{Type: ledger.ConduitSession, ID: fmt.Sprint("c", i), AgentID: "agent-1", Status: ledger.Verified, StartedAt: end, EndedAt: end})
	}
	for i := range 40 {
		evs = append(evs, ledger.Event{Type: ledger.AP2Transaction, ID: fmt.Sprint("t", i), AgentID: "agent-1", BuyerID: "b", Status: ledger.Settled, EscrowAmountCents: 1000, StartedAt: end, EndedAt: end})
	}
	if _, err := u.Ingest.Ingest(ctx, "op", evs); err != nil {
		b.Fatal(err)
	}
	return New(ServicesOf(u), Options{})
}

func benchPost(b *testing.B, s *Server, path, body string, want int) {
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+benchToken)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != want {
		b.Fatal(rec.Code, rec.Body.String())
	}
}

// BenchmarkEscrowQuote is POST /swarmscore/{agent_id}/escrow: the hold
// computed, nothing stored.
func BenchmarkEscrowQuote(b *testing.B) {
	for _, be := range []string{"sqlite", "postgres"} {
		b.Run(be, func(b *testing.B) {
			s := benchHoldServer(b, be)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					benchPost(b, s, "/swarmscore/agent-1/escrow", `{"amount_cents":100000}`, http.StatusOK)
				}
			})
		})
	}
}

// BenchmarkHoldCreate is POST /swarmscore/escrow/holds, a new transaction
// each time: the hold priced, stored with its first step, and its HELD
// event recorded in the provider's chain, in one transaction.
func BenchmarkHoldCreate(b *testing.B) {
	for _, be := range []string{"sqlite", "postgres"} {
		b.Run(be, func(b *testing.B) {
			s := benchHoldServer(b, be)
			var n atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := n.Add(1)
					benchPost(b, s, "/swarmscore/escrow/holds",
						fmt.Sprintf(`{"transaction_id":"bench-%d","provider_id":"agent-1","buyer_id":"buyer-%d","amount_cents":100000,"currency":"USD"}`, id, id%50),
						http.StatusCreated)
				}
			})
		})
	}
}
