package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// server answers each "METHOD path" with a canned status and body and
// records the request, so the tests check both what the client sends and
// how it reads the answer.
type server struct {
	t       *testing.T
	replies map[string]reply
	got     *http.Request
	gotBody string
}

type reply struct {
	status int
	body   string
	header http.Header
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.got, s.gotBody = r, string(b)
	rep, ok := s.replies[r.Method+" "+r.URL.EscapedPath()]
	if !ok {
		s.t.Errorf("unexpected request %s %s", r.Method, r.URL.EscapedPath())
		w.WriteHeader(500)
		return
	}
	for k, v := range rep.header {
		w.Header()[k] = v
	}
	if rep.status >= 400 {
		w.Header().Set("Content-Type", "application/problem+json")
	}
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
}

func newTest(t *testing.T, replies map[string]reply) (*Client, *server) {
	s := &server{t: t, replies: replies}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	c, err := New(ts.URL+"/", WithToken("sst_secret"))
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

func TestNew(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://x", "http://"} {
		if _, err := New(u); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}

func TestProblems(t *testing.T) {
	ctx := context.Background()
	c, _ := newTest(t, map[string]reply{
		"GET /swarmscore/ghost/certificate": {404, `{"type":"https://swarmscore.dev/problems/not-found","title":"Not found","status":404,"detail":"not found: agent \"ghost\"","request_id":"r1"}`, nil},
		"GET /swarmscore/busy":              {429, `{"type":"https://swarmscore.dev/problems/rate-limited","title":"Too many requests","status":429,"detail":"slow down"}`, http.Header{"Retry-After": {"3"}}},
		"GET /readyz":                       {502, `<html>bad gateway</html>`, nil},
	})
	_, err := c.Certificate(ctx, "ghost")
	var p *Problem
	if !errors.As(err, &p) || p.Type != ProblemNotFound || p.Status != 404 || p.Title != "Not found" || p.RequestID != "r1" || !strings.Contains(p.Detail, "ghost") {
		t.Fatalf("err %#v", err)
	}
	if !IsProblem(err, ProblemNotFound) || IsProblem(err, ProblemConflict) {
		t.Fatal("IsProblem")
	}
	if !strings.Contains(err.Error(), "404 Not found") {
		t.Fatalf("Error() %q", err)
	}
	_, err = c.Score(ctx, "busy")
	if !errors.As(err, &p) || p.RetryAfter != 3*time.Second || p.Type != ProblemRateLimited {
		t.Fatalf("err %#v", err)
	}
	err = c.Ready(ctx)
	if !errors.As(err, &p) || p.Status != 502 || p.Type != "about:blank" || !strings.Contains(p.Detail, "bad gateway") {
		t.Fatalf("non-problem error %#v", err)
	}
}

func TestRequests(t *testing.T) {
	ctx := context.Background()
	c, s := newTest(t, map[string]reply{
		"GET /swarmscore/a:1/certificate": {200, `{"agent_id":"a:1", "x":1}`, http.Header{"Etag": {`"e1"`}}},
		"POST /swarmscore/verify":         {200, `{"valid":false,"signature_valid":false,"score_valid":true,"expires_at":"2026-03-24T14:30:00Z","detected_tampering":true,"errors":[{"code":"signature_mismatch","message":"m"}],"warnings":[{"code":"unknown_field","message":"w"}],"checks":{"signature":"failed","consistency":"ok","expiry":"ok","ledger":"not_applicable","agent":"ok"}}`, nil},
		"GET /swarmscore/a:1":             {200, `{"agent_id":"a:1","computed_at":"2026-03-17T14:30:00Z","expires_at":"2026-03-24T14:30:00Z","formula_version":"1.0","score":760,"tier":"STANDARD","escrow_modifier":0.392,"conduit":{"total":80,"success":76,"rate":0.95,"volume_factor":0.8,"contribution":304,"max_contribution":400},"ap2":{"total":40,"success":38,"rate":0.95,"volume_factor":0.8,"contribution":456,"max_contribution":600},"qualification_gaps":[{"tier":"ELITE","requirement":"score","required":850,"actual":760},{"tier":"ELITE","requirement":"conduit_sessions_90d","required":100,"actual":80},{"tier":"ELITE","requirement":"ap2_sessions_90d","required":50,"actual":40}]}`, nil},
		"POST /swarmscore/events":         {200, `{"accepted":1,"duplicates":0,"superseded":2,"rejected":[{"index":1,"id":"t1","reason":"conflict"}]}`, nil},
		"POST /swarmscore/a:1/escrow":     {200, `{"score":760,"escrow_modifier":0.392,"hold_cents":39200,"released_cents":60800}`, nil},
		"GET /swarmscore/agents":          {200, `{"agents":[{"agent_id":"a:1","score":760,"tier":"STANDARD","escrow_modifier":0.392,"conduit_sessions_90d":80,"ap2_sessions_90d":40,"computed_at":"2026-03-17T14:30:00Z","expires_at":"2026-03-24T14:30:00Z"}],"next_cursor":"abc"}`, nil},
	})
	cert, err := c.Certificate(ctx, "a:1")
	if err != nil || string(cert.Raw) != `{"agent_id":"a:1", "x":1}` || cert.ETag != `"e1"` {
		t.Fatalf("certificate %+v %v", cert, err)
	}
	if s.got.Header.Get("Authorization") != "" {
		t.Fatal("the token was sent to a public route")
	}
	v, err := c.Verify(ctx, cert.Raw, "a:1")
	if err != nil || !v.DetectedTampering || v.Valid || v.ExpiresAt == nil || len(v.Errors) != 1 || len(v.Warnings) != 1 ||
		v.Checks.Result(CheckSignature) != CheckFailed || v.Checks.Result(CheckLedger) != CheckNotApplicable || v.Checks.Result(CheckAgent) != CheckOK {
		t.Fatalf("verify %+v %v", v, err)
	}
	if s.gotBody != `{"certificate":{"agent_id":"a:1", "x":1},"agent_id":"a:1"}` {
		t.Fatalf("verify sent %s (the certificate must go as received)", s.gotBody)
	}
	// Without an agent: the passport's own.
	if _, err := c.Verify(ctx, cert.Raw, ""); err != nil || s.gotBody != `{"certificate":{"agent_id":"a:1", "x":1}}` {
		t.Fatalf("verify without an agent sent %s: %v", s.gotBody, err)
	}
	if _, err := c.Verify(ctx, []byte("{"), "a"); err == nil {
		t.Fatal("invalid JSON certificate accepted")
	}
	sc, err := c.Score(ctx, "a:1")
	if err != nil || sc.Score != 760 || sc.Escrow.String() != "0.392" || sc.AP2().Contribution != 456 || len(sc.Gaps()) != 3 {
		t.Fatalf("score %+v %v", sc, err)
	}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	res, err := c.IngestEvents(ctx, []Event{
		ConduitSession("s1", "a:1", "VERIFIED", t0, t0.Add(time.Hour)),
		AP2Transaction("t1", "a:1", "buyer", "HELD", 100, t0, time.Time{}),
	})
	if err != nil || res.Accepted != 1 || res.Superseded != 2 || len(res.Rejected) != 1 || res.Rejected[0].ID != "t1" {
		t.Fatalf("ingest %+v %v", res, err)
	}
	want := `[{"type":"conduit_session","id":"s1","agent_id":"a:1","status":"VERIFIED","started_at":"2026-03-01T00:00:00Z","completed_at":"2026-03-01T01:00:00Z"},` +
		`{"type":"ap2_transaction","id":"t1","provider_id":"a:1","buyer_id":"buyer","status":"HELD","escrow_amount_cents":100,"started_at":"2026-03-01T00:00:00Z"}]`
	if s.gotBody != want || s.got.Header.Get("Authorization") != "Bearer sst_secret" {
		t.Fatalf("ingest sent %s with %q", s.gotBody, s.got.Header.Get("Authorization"))
	}
	if _, err := c.IngestNDJSON(ctx, strings.NewReader("{}\n")); err != nil || s.got.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("ndjson: %v", err)
	}
	e, err := c.Escrow(ctx, "a:1", 100000)
	if err != nil || e.HoldCents != 39200 || e.EscrowModifier.String() != "0.392" || s.gotBody != `{"amount_cents":100000}` {
		t.Fatalf("escrow %+v %v %s", e, err, s.gotBody)
	}
	page, err := c.Agents(ctx, AgentsQuery{Tier: "STANDARD", MinScore: 700, Limit: 10, Cursor: "xyz"})
	if err != nil || page.NextCursor == nil || *page.NextCursor != "abc" || len(page.Agents) != 1 || page.Agents[0].ConduitTotal != 80 {
		t.Fatalf("agents %+v %v", page, err)
	}
	if q := s.got.URL.Query(); q.Get("tier") != "STANDARD" || q.Get("min_score") != "700" || q.Get("limit") != "10" || q.Get("cursor") != "xyz" {
		t.Fatalf("query %v", q)
	}
}

// TestEventTimes: the builders take time.Now() as it is: any zone,
// nanoseconds, a monotonic reading.
func TestEventTimes(t *testing.T) {
	zone := time.FixedZone("X", -5*3600)
	start := time.Date(2026, 3, 1, 7, 0, 0, 123456789, zone)
	e := ConduitSession("s", "a", "VERIFIED", start, time.Now())
	if !e.StartedAt.Equal(time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)) || e.StartedAt.Location() != time.UTC {
		t.Fatalf("started_at %v", e.StartedAt)
	}
	if e.CompletedAt.Nanosecond()%1000 != 0 || e.CompletedAt.Location() != time.UTC {
		t.Fatalf("completed_at %v", e.CompletedAt)
	}
	b, _ := json.Marshal(e)
	if !strings.Contains(string(b), `"started_at":"2026-03-01T12:00:00.123456Z"`) {
		t.Fatalf("JSON %s", b)
	}
	a := AP2Transaction("t", "a", "b", "SETTLED", 1, start, start.Add(time.Nanosecond))
	if !a.SettledAt.Equal(a.StartedAt) || a.SettledAt.Location() != time.UTC {
		t.Fatalf("settled_at %v", a.SettledAt)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"": 0, "3": 3 * time.Second, "-1": 0, "soon": 0,
		"Sun, 01 Mar 2026 00:00:10 GMT": 10 * time.Second,
		"Sat, 28 Feb 2026 23:59:00 GMT": 0,
	} {
		if got := retryAfter(h, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", h, got, want)
		}
	}
}

// TestDotSegments: "." and ".." are sent as segments, escaped, so that the
// server refuses them as ids rather than a URL resolving them away.
func TestDotSegments(t *testing.T) {
	invalid := reply{400, `{"type":"https://swarmscore.dev/problems/invalid-request","title":"Invalid request","status":400,"detail":"path segment agent_id: \"..\" is not an id"}`, nil}
	c, _ := newTest(t, map[string]reply{
		"GET /swarmscore/%2E%2E":          invalid,
		"GET /swarmscore/%2E/certificate": invalid,
		"POST /swarmscore/%2E%2E/escrow":  invalid,
		"GET /swarmscore/...":             {404, `{"type":"https://swarmscore.dev/problems/not-found","title":"Not found","status":404}`, nil},
	})
	ctx := context.Background()
	var p *Problem
	if _, err := c.Score(ctx, ".."); !errors.As(err, &p) || p.Status != 400 {
		t.Errorf("Score(..): %v", err)
	}
	if _, err := c.Certificate(ctx, "."); !errors.As(err, &p) || p.Status != 400 {
		t.Errorf("Certificate(.): %v", err)
	}
	if _, err := c.Escrow(ctx, "..", 100); !errors.As(err, &p) || p.Status != 400 {
		t.Errorf("Escrow(..): %v", err)
	}
	if _, err := c.Score(ctx, "..."); !errors.As(err, &p) || p.Status != 404 {
		t.Errorf("Score(...): %v", err)
	}
}
