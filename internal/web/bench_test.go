package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/httpapi"
	"github.com/swarmscore/swarmscore/internal/service"
)

// BenchmarkAgentPageVsCertificate serves agent-7's page and its
// certificate route alternately, in process, through the whole server
// (access log off, no rate limit) over the seeded SQLite ledger with the
// store's cache watch started as serve starts it, and reports each route's
// rate. Both run warm: the certificate from memory, the page's history
// from its memo.
func BenchmarkAgentPageVsCertificate(b *testing.B) {
	// The real clock, as in production.
	s := newSite(b, time.Now().UTC().Truncate(time.Second), httpapi.Options{}, func(_ service.Backend, cfg *service.Config, _ *clock) { cfg.Now = nil })
	s.clock = nil
	s.u.Certificates.StartCacheWatch()
	serve := func(path string) time.Duration {
		start := time.Now()
		rec := httptest.NewRecorder()
		s.handler.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		d := time.Since(start)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d", path, rec.Code)
		}
		return d
	}
	serve("/agents/agent-7")
	serve("/swarmscore/agent-7/certificate")
	var page, cert time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		page += serve("/agents/agent-7")
		cert += serve("/swarmscore/agent-7/certificate")
	}
	n := float64(b.N)
	b.ReportMetric(n/page.Seconds(), "pages/s")
	b.ReportMetric(n/cert.Seconds(), "certs/s")
	b.ReportMetric(float64(page.Nanoseconds())/n, "ns/page")
	b.ReportMetric(float64(cert.Nanoseconds())/n, "ns/cert")
}

// BenchmarkHistoryFirstView is an agent page's history the first time a
// process shows it (or after a new report for the agent): the past 89
// days counted from the ledger, one window count each.
func BenchmarkHistoryFirstView(b *testing.B) {
	s := newSite(b, time.Now().UTC().Truncate(time.Second), httpapi.Options{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		u := service.New(s.store, s.cfg)
		if _, err := u.Certificates.PublicProfile(ctx, "agent-7", true); err != nil {
			b.Fatal(err)
		}
	}
}
