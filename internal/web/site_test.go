package web

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
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
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
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
	store   *sqlite.Store
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
// pages on the API server.
func newSite(t testing.TB, now time.Time, opt httpapi.Options) *site {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "web.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key, err := passport.NewKey([]byte(testKey))
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: now}
	u := &service.UseCases{Store: st, Key: key, Platform: "test.example", Now: c.now}
	if _, err := u.BootstrapAdminToken(ctx, testToken); err != nil {
		t.Fatal(err)
	}
	seed(t, u, st, now)
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	opt.Logger, opt.Now = log, c.now
	api := httpapi.New(u, opt)
	pages := Mount(api, u, Options{Logger: log, Now: c.now})
	return &site{t: t, u: u, store: st, api: api, pages: pages, clock: c, logs: logs, handler: api}
}

// seed records, relative to now:
//
//   - agent-7: 80 Conduit sessions (76 verified) and 40 AP2 transactions
//     (38 settled) spread over the last 83 days, so its score climbs to
//     760 STANDARD today (the README's example);
//   - elite-1: 120/118 and 60/59, 983 ELITE;
//   - newbie: 3/2 and 1/1, NONE;
//   - shy-agent: 100/100 and 50/50, but unlisted: never shown publicly;
//   - fill-00 … fill-27: small scores, so the leaderboard has two pages;
//   - one batch with two bad lines, so the console has rejections.
func seed(t testing.TB, u *service.UseCases, st *sqlite.Store, now time.Time) {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	ev := func(kind, id, agent, status string, end time.Time) {
		start := end.Add(-time.Hour).Format(time.RFC3339)
		switch kind {
		case "c":
			fmt.Fprintf(&b, `{"type":"conduit_session","id":%q,"agent_id":%q,"status":%q,"started_at":%q,"completed_at":%q}`+"\n",
				id, agent, status, start, end.Format(time.RFC3339))
		case "t":
			fmt.Fprintf(&b, `{"type":"ap2_transaction","id":%q,"provider_id":%q,"buyer_id":"buyer-1","status":%q,"escrow_amount_cents":125000,"started_at":%q,"settled_at":%q}`+"\n",
				id, agent, status, start, end.Format(time.RFC3339))
		}
	}
	// spread marks n of total positions, evenly: exactly n are marked.
	spread := func(i, n, total int) bool { return (i+1)*n/total != i*n/total }
	dims := func(agent string, ct, cs, at, as int, span time.Duration) {
		for i := range ct {
			st := "VERIFIED"
			if spread(i, ct-cs, ct) {
				st = "FAILED"
			}
			ev("c", fmt.Sprintf("%s-c%d", agent, i), agent, st, now.Add(-span*time.Duration(i)/time.Duration(ct)))
		}
		for i := range at {
			st := "SETTLED"
			if spread(i, at-as, at) {
				st = "DISPUTED"
			}
			ev("t", fmt.Sprintf("%s-t%d", agent, i), agent, st, now.Add(-span*time.Duration(i)/time.Duration(at)).Add(-time.Minute))
		}
	}
	dims("agent-7", 80, 76, 40, 38, 83*24*time.Hour)
	dims("elite-1", 120, 118, 60, 59, 60*24*time.Hour)
	dims("newbie", 3, 2, 1, 1, 2*24*time.Hour)
	dims("shy-agent", 100, 100, 50, 50, 30*24*time.Hour)
	for i := range 28 {
		dims(fmt.Sprintf("fill-%02d", i), 10+i, 9+i/2, 2, 2, 20*24*time.Hour)
	}
	rep, err := u.IngestEvents(ctx, "market-1", strings.NewReader(b.String()))
	if err != nil || len(rep.Rejected) != 0 {
		t.Fatalf("seed: %+v %v", rep, err)
	}
	bad := `{"type":"conduit_session","id":"s-bad","agent_id":"agent-7","status":"DONE","started_at":"2026-06-14T10:00:00Z"}` + "\n" +
		`{"type":"ap2_transaction","id":"t-bad","provider_id":"agent-7","buyer_id":"buyer-1","status":"SETTLED","escrow_amount_cents":99.5,"started_at":"2026-06-14T08:00:00Z","settled_at":"2026-06-14T09:00:00Z"}` + "\n"
	if rep, err := u.IngestEvents(ctx, "market-1", strings.NewReader(bad)); err != nil || len(rep.Rejected) != 2 {
		t.Fatalf("seed rejections: %+v %v", rep, err)
	}
	if err := st.SetVisibility(ctx, "shy-agent", ledger.VisibilityUnlisted, now); err != nil {
		t.Fatal(err)
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
