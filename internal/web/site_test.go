package web

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/httpapi"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/internal/web/webtest"
	"github.com/swarmscore/swarmscore/passport"
)

// The tests run the real handlers (httpapi's server with these pages
// mounted) over the real use cases and an SQLite store holding seeded
// events, at a fixed instant.

const (
	testKey   = "0123456789abcdef0123456789abcdef-web-test-key"
	testToken = "web-test-admin-token-0123456789abcdef"
)

var testNow = time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)

// clock is the tests' settable clock, shared by the use cases, the API
// and the pages.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type site struct {
	t       testing.TB
	u       *service.UseCases
	cfg     service.Config
	store   service.Backend
	api     *httpapi.Server
	pages   *Pages
	clock   *clock
	logs    *syncBuffer
	handler http.Handler
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newSite opens a fresh store, seeds it (seed) as of now and mounts the
// pages on the API server. setup, if any, changes the use cases'
// configuration (and the clock it gives them) before they are made.
func newSite(t testing.TB, now time.Time, opt httpapi.Options, setup ...func(service.Backend, *service.Config, *clock)) *site {
	t.Helper()
	st, err := sqlite.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "web.db"))
	if err != nil {
		t.Fatal(err)
	}
	return newSiteOn(t, st, now, opt, setup...)
}

// newSitePostgres is newSite on a scratch PostgreSQL database (pgtest:
// under CI=true an unreachable server fails the test).
func newSitePostgres(t testing.TB, now time.Time, opt httpapi.Options, setup ...func(service.Backend, *service.Config, *clock)) *site {
	t.Helper()
	st, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	return newSiteOn(t, st, now, opt, setup...)
}

// onBothBackEnds runs f on a site over SQLite, then over PostgreSQL.
func onBothBackEnds(t *testing.T, f func(t *testing.T, s *site)) {
	t.Run("sqlite", func(t *testing.T) { f(t, newSite(t, testNow, httpapi.Options{})) })
	t.Run("postgres", func(t *testing.T) { f(t, newSitePostgres(t, testNow, httpapi.Options{})) })
}

// newSiteOn is newSite over st, which it closes at the end of the test.
func newSiteOn(t testing.TB, st service.Backend, now time.Time, opt httpapi.Options, setup ...func(service.Backend, *service.Config, *clock)) *site {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key, err := passport.NewKey([]byte(testKey))
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: now}
	cfg := service.Config{Key: key, Platform: "test.example", Now: c.now}
	for _, f := range setup {
		f(st, &cfg, c)
	}
	u := service.New(st, cfg)
	if _, err := u.Tokens.BootstrapAdminToken(ctx, testToken); err != nil {
		t.Fatal(err)
	}
	seed(t, u, now)
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	opt.Logger, opt.Now = log, c.now
	api := httpapi.New(httpapi.ServicesOf(u), opt)
	pages := Mount(api, ServicesOf(u), Options{Logger: log, Now: c.now})
	return &site{t: t, u: u, cfg: cfg, store: st, api: api, pages: pages, clock: c, logs: logs, handler: api}
}

// seed records webtest's agents and a batch of two rejected events.
func seed(t testing.TB, u *service.UseCases, now time.Time) {
	t.Helper()
	ctx := context.Background()
	if err := webtest.Seed(ctx, u, now); err != nil {
		t.Fatal(err)
	}
	if rep, err := u.Ingest.IngestEvents(ctx, webtest.Operator, strings.NewReader(webtest.Rejected(now))); err != nil || len(rep.Rejected) != 2 {
		t.Fatalf("seed rejections: %+v %v", rep, err)
	}
}

type response struct {
	code   int
	header http.Header
	body   string
}

// do serves one request. hdr is name, value pairs of headers, or
// "RemoteAddr" (the client's address) and "TLS" (any value: the request
// came over TLS).
func (s *site) do(method, target string, body io.Reader, hdr ...string) response {
	s.t.Helper()
	req := httptest.NewRequest(method, target, body)
	for i := 0; i+1 < len(hdr); i += 2 {
		switch hdr[i] {
		case "RemoteAddr":
			req.RemoteAddr = hdr[i+1]
		case "TLS":
			req.TLS = &tls.ConnectionState{}
		default:
			req.Header.Add(hdr[i], hdr[i+1])
		}
	}
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, req)
	return response{rec.Code, rec.Header(), rec.Body.String()}
}

func (s *site) get(target string, hdr ...string) response {
	s.t.Helper()
	return s.do("GET", target, nil, hdr...)
}

func (s *site) postForm(target string, form url.Values, hdr ...string) response {
	s.t.Helper()
	return s.do("POST", target, strings.NewReader(form.Encode()), append([]string{"Content-Type", "application/x-www-form-urlencoded"}, hdr...)...)
}
