package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
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

// benchServer is the real stack (handlers, service, SQLite store) with one
// agent of score 760, in process: the wrk benchmarks measure the same over
// loopback (testdata/bench.sh); these locate where the time goes.
func benchServer(b *testing.B) (*Server, []byte) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	key, _ := passport.NewKey([]byte("bench-signing-key-0123456789abcdefghij"))
	api := service.New(st, service.Config{Key: key, Platform: "bench"})
	end := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)
	var evs []ledger.Event
	for i := 0; i < 80; i++ {
		st := ledger.Verified
		if i >= 76 {
			st = ledger.Failed
		}
		evs = append(evs, ledger.Event{Type: ledger.ConduitSession, ID: fmt.Sprint("c", i), AgentID: "agent-1", Status: st, StartedAt: end, EndedAt: end})
	}
	for i := 0; i < 40; i++ {
		st := ledger.Settled
		if i >= 38 {
			st = ledger.Disputed
		}
		evs = append(evs, ledger.Event{Type: ledger.AP2Transaction, ID: fmt.Sprint("t", i), AgentID: "agent-1", BuyerID: "b", Status: st, EscrowAmountCents: 1000, StartedAt: end, EndedAt: end})
	}
	if _, err := api.Ingest.Ingest(ctx, "op", evs); err != nil {
		b.Fatal(err)
	}
	c, err := api.Certificates.Certificate(ctx, "agent-1")
	if err != nil {
		b.Fatal(err)
	}
	return New(ServicesOf(api), Options{}), c.Passport
}

func BenchmarkCertificateCached(b *testing.B) {
	s, _ := benchServer(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("GET", "/swarmscore/agent-1/certificate", nil))
			if rec.Code != http.StatusOK {
				b.Fatal(rec.Code)
			}
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	s, cert := benchServer(b)
	body := []byte(`{"certificate":` + string(cert) + `,"agent_id":"agent-1"}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("POST", "/swarmscore/verify", bytes.NewReader(body)))
			if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"valid":true`)) {
				b.Fatal(rec.Code, rec.Body.String())
			}
		}
	})
}

func BenchmarkScore(b *testing.B) {
	s, _ := benchServer(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("GET", "/swarmscore/agent-1", nil))
			if rec.Code != http.StatusOK {
				b.Fatal(rec.Code)
			}
		}
	})
}

// BenchmarkAccessLog is a cached certificate with the access log on, as
// serve writes it when stderr is not a terminal: through slog's JSON
// handler, and appended by hand (Options.AccessLog). The sub-benchmarks
// alternate with -count.
func BenchmarkAccessLog(b *testing.B) {
	for _, hand := range []bool{false, true} {
		name := "slog"
		if hand {
			name = "hand"
		}
		b.Run(name, func(b *testing.B) {
			s, _ := benchServer(b)
			opt := Options{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}
			if hand {
				opt.AccessLog = io.Discard
			}
			s = New(s.svc, opt)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, httptest.NewRequest("GET", "/swarmscore/agent-1/certificate", nil))
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}
