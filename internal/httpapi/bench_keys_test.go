package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/passport"
)

// benchAgents is how many agents benchKeyServer gives a passport: the
// issuing benchmark signs for each in turn before their passports are
// dropped again.
const benchAgents = 500

// benchKeyServer is the real stack over SQLite with a keyring in the
// database whose active key is alg, as `serve` runs it, and benchAgents
// agents of score 760 (agent-0 … agent-499).
func benchKeyServer(b *testing.B, alg string) (*Server, *service.UseCases) {
	ctx := context.Background()
	db := filepath.Join(b.TempDir(), "bench.db")
	st, err := sqlite.Open(ctx, "sqlite:"+db)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	keys, err := service.OpenKeyring(ctx, st, service.KeyConfig{DBFile: db, Alg: alg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	api := service.New(st, service.Config{Keys: keys, Platform: "bench"})
	end := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)
	var evs []ledger.Event
	for a := range benchAgents {
		agent := fmt.Sprint("agent-", a)
		for i := range 80 {
			st := ledger.Verified
			if i >= 76 {
				st = ledger.Failed
			}
			evs = append(evs, ledger.Event{Type: ledger.ConduitSession, ID: fmt.Sprint(agent, "-c", i), AgentID: agent, Status: st, StartedAt: end, EndedAt: end})
		}
		for i := range 40 {
			st := ledger.Settled
			if i >= 38 {
				st = ledger.Disputed
			}
			evs = append(evs, ledger.Event{Type: ledger.AP2Transaction, ID: fmt.Sprint(agent, "-t", i), AgentID: agent, BuyerID: "b", Status: st, EscrowAmountCents: 1000, StartedAt: end, EndedAt: end})
		}
		if len(evs) >= 5000 || a == benchAgents-1 {
			if _, err := api.Ingest.Ingest(ctx, "op", evs); err != nil {
				b.Fatal(err)
			}
			evs = evs[:0]
		}
	}
	return New(ServicesOf(api), Options{}), api
}

// BenchmarkCertificateCachedKeys is BenchmarkCertificateCached with the
// keyring `serve` uses: a remembered passport is served only while its key
// is the active one.
func BenchmarkCertificateCachedKeys(b *testing.B) {
	for _, alg := range []string{passport.AlgHS256, passport.AlgEdDSA} {
		b.Run(alg, func(b *testing.B) {
			s, _ := benchKeyServer(b, alg)
			get := func() *httptest.ResponseRecorder {
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, httptest.NewRequest("GET", "/swarmscore/agent-1/certificate", nil))
				return rec
			}
			if rec := get(); rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"alg":"`+alg+`"`)) {
				b.Fatal(rec.Code, rec.Body.String())
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if rec := get(); rec.Code != http.StatusOK {
						b.Fatal(rec.Code)
					}
				}
			})
		})
	}
}

// BenchmarkCertificateIssue is the certificate route when it signs: every
// request is for an agent whose stored passport was dropped (by a
// recompute, outside the timer), so the route reads the stamp, recounts the
// window, signs, stores and serves a new passport. HS256 and EdDSA differ
// only in the signature.
func BenchmarkCertificateIssue(b *testing.B) {
	for _, alg := range []string{passport.AlgHS256, passport.AlgEdDSA} {
		b.Run(alg, func(b *testing.B) {
			s, api := benchKeyServer(b, alg)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if i%benchAgents == 0 {
					b.StopTimer()
					if _, err := api.Certificates.RecomputeAll(ctx, false); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, httptest.NewRequest("GET", fmt.Sprint("/swarmscore/agent-", i%benchAgents, "/certificate"), nil))
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code, rec.Body.String())
				}
			}
		})
	}
}
