package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/swarmscore/swarmscore/api"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authz "github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

const goodToken = "sst_test-token-for-operator-acme-000000000"

var now = time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)

// fake implements Service with canned answers and records what it was
// asked, so each test states the use case's behaviour it relies on.
type fake struct {
	// CorrectionsService and CheckpointService answer the routes of
	// corrections.go; nil (any call panics) in tests of the other routes.
	CorrectionsService
	CheckpointService
	// LogService answers the log's routes; nil in the tests of others.
	LogService

	mu        sync.Mutex
	cert      service.Certificate
	verifyRes service.Verification
	entry     ledger.ScoreEntry
	escrowRes service.Escrow
	page      service.RankingPage
	err       error // returned by every use case when set
	readyErr  error
	panicMsg  string

	gotAgent    string
	gotDoc      []byte
	gotOperator string
	gotEvents   []ledger.Event
	gotAmount   int64
	gotQuery    service.RankingQuery
	calls       int
	outcomes    func([]ledger.Event) []ledger.Outcome
	certStats   service.CertificateStats
	keySet      passport.JWKSet
	keyHistory  passport.KeyHistory
	keyStats    service.KeyringStats
	// RightsService and SignalService are nil: rights_test.go gives the
	// fake the methods the certificate, score and metrics routes call; the
	// others would panic.
	RightsService
	SignalService
	// ErasureService is nil (erasure_test.go uses real use cases).
	ErasureService
	// WebhookService is nil (webhooks_test.go uses real use cases).
	WebhookService
}

// everyService is a fake of every group of use cases.
type everyService interface {
	CertificateService
	VerifyService
	IngestService
	TokenService
	ReadinessService
	KeyService
	CorrectionsService
	CheckpointService
	LogService
	AuditService
	RightsService
	ErasureService
	SignalService
	ConsoleService
	WebhookService
}

// every gives v every group of use cases.
func every(v everyService) Services {
	s := Services{Certificates: v, Verifier: v, Ingest: v, Tokens: v, Schema: v, Keys: v, Corrections: v, Checkpoints: v,
		Audit: v, Rights: v, Erasure: v, Signals: v, Console: v, Webhooks: v, Log: v}
	if c, ok := v.(CredentialService); ok {
		s.Credentials = c
	}
	if h, ok := v.(HoldService); ok {
		s.Holds = h
	}
	if p, ok := v.(ProofService); ok {
		s.Proofs = p
	}
	return s
}

func (f *fake) Credential(ctx context.Context, c service.Caller, agentID string) (service.CredentialSource, error) {
	return service.CredentialSource{}, errors.Join(f.enter(agentID), fmt.Errorf("%w: no credentials in this fake", errkind.ErrNotFound))
}
func (f *fake) StatusList(ctx context.Context, list int64) (service.StatusList, error) {
	return service.StatusList{}, fmt.Errorf("%w: no status lists in this fake", errkind.ErrNotFound)
}
func (f *fake) VerificationKeys(ctx context.Context) []service.VerificationKey { return nil }

func (f *fake) enter(agent string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.gotAgent = agent
	if f.panicMsg != "" {
		panic(f.panicMsg)
	}
	return f.err
}

func (f *fake) Certificate(ctx context.Context, agentID string) (service.Certificate, error) {
	return f.cert, f.enter(agentID)
}
func (f *fake) Verify(ctx context.Context, doc []byte, agentID string) (service.Verification, error) {
	f.gotDoc = append([]byte(nil), doc...)
	return f.verifyRes, f.enter(agentID)
}
func (f *fake) Score(ctx context.Context, agentID string) (ledger.ScoreEntry, error) {
	return f.entry, f.enter(agentID)
}

// IngestEvents runs the real ingest pipeline over a store whose Ingest is
// the fake's, so the handler is tested with what the server runs.
func (f *fake) IngestEvents(ctx context.Context, operator string, body io.Reader) (service.IngestReport, error) {
	u := service.New(ingestOnly{f: f}, service.Config{})
	return u.Ingest.IngestEvents(ctx, operator, body)
}

// ingestOnly is a back end that only ingests (the other ports are nil and
// panic if used).
type ingestOnly struct {
	service.Backend
	f *fake
}

// AppendAction drops the action log's entries.
func (ingestOnly) AppendAction(context.Context, authz.Action) (int64, error) { return 0, nil }

func (s ingestOnly) Ingest(ctx context.Context, b ledger.Batch) ([]ledger.Outcome, error) {
	f := s.f
	if err := f.enter(""); err != nil {
		return nil, err
	}
	f.gotOperator, f.gotEvents = b.Operator, b.Events
	if f.outcomes != nil {
		return f.outcomes(b.Events), nil
	}
	out := make([]ledger.Outcome, len(b.Events))
	for i := range out {
		out[i].Status = ledger.OutcomeAccepted
	}
	return out, nil
}
func (f *fake) Escrow(ctx context.Context, agentID string, amountCents int64) (service.Escrow, error) {
	f.gotAmount = amountCents
	return f.escrowRes, f.enter(agentID)
}
func (f *fake) Ranking(ctx context.Context, q service.RankingQuery) (service.RankingPage, error) {
	f.gotQuery = q
	return f.page, f.enter("")
}
func (f *fake) Authenticate(ctx context.Context, token string) (service.Caller, error) {
	if token == goodToken {
		return service.Caller{Operator: "acme", TokenID: "tok-acme", Role: authz.Admin}, nil
	}
	return service.Caller{}, fmt.Errorf("%w: unknown token", errkind.ErrUnauthorized)
}
func (f *fake) Ready(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readyErr
}
func (f *fake) PublicKeys(ctx context.Context) passport.JWKSet {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keySet
}
func (f *fake) KeyHistory(ctx context.Context) passport.KeyHistory {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keyHistory
}

// Backlog is the one WebhookService method a scrape of /metrics calls.
func (f *fake) Backlog(context.Context) (int64, error) { return 0, nil }
func (f *fake) KeyringStats() service.KeyringStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keyStats
}
func (f *fake) CertificateStats() service.CertificateStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.certStats
}

func mustResult(t testing.TB, c score.Counts) score.Result {
	r, err := score.Compute(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type harness struct {
	t    testing.TB
	f    *fake
	st   service.Backend // the real store of a harness with real use cases
	s    *Server
	logs *syncLog // read while the server may write (a database probe)
}

func newHarness(t testing.TB, opt Options) *harness {
	logs := &syncLog{}
	opt.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opt.Now = func() time.Time { return now }
	if opt.MetricsAllow == nil {
		// httptest's requests come from 192.0.2.1.
		opt.MetricsAllow = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	}
	f := &fake{
		cert: service.Certificate{AgentID: "agent-1", Passport: []byte(`{"agent_id":"agent-1"}`),
			ComputedAt: now, ExpiresAt: now.Add(7 * 24 * time.Hour), Issued: true},
		entry: ledger.ScoreEntry{AgentID: "agent-1", Result: mustResult(t, score.Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38}),
			ComputedAt: now, ExpiresAt: now.Add(7 * 24 * time.Hour), ValidUntil: now.Add(time.Hour)},
	}
	s := New(every(f), opt)
	t.Cleanup(func() { s.Close() })
	return &harness{t: t, f: f, s: s, logs: logs}
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

func (h *harness) do(method, target string, body io.Reader, hdr ...string) response {
	h.t.Helper()
	req := httptest.NewRequest(method, target, body)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.s.ServeHTTP(rec, req)
	return response{rec.Code, rec.Header(), rec.Body.Bytes()}
}

func authHdr() []string { return []string{"Authorization", "Bearer " + goodToken} }

// ingestHdr is auth with the Content-Type POST /swarmscore/events requires.
func ingestHdr() []string { return append(authHdr(), "Content-Type", "application/json") }

// problem asserts r is a problem of the given type and status and returns
// it.
func (r response) problem(t *testing.T, slug string, status int) Problem {
	t.Helper()
	if r.code != status {
		t.Fatalf("status %d, want %d; body %s", r.code, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p Problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem body %s: %v", r.body, err)
	}
	if p.Type != ProblemBase+slug || p.Status != status || p.Title == "" || p.Detail == "" || p.RequestID == "" {
		t.Fatalf("problem %+v, want type %s status %d with title, detail and request id", p, slug, status)
	}
	if r.header.Get("X-Request-ID") != p.RequestID {
		t.Fatalf("X-Request-ID %q != problem request_id %q", r.header.Get("X-Request-ID"), p.RequestID)
	}
	return p
}

func (r response) ok(t *testing.T) map[string]any {
	t.Helper()
	if r.code != http.StatusOK {
		t.Fatalf("status %d, want 200; body %s", r.code, r.body)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	return m
}

func TestCertificate(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.do("GET", "/swarmscore/agent-1/certificate", nil)
	if r.code != 200 || string(r.body) != `{"agent_id":"agent-1"}` {
		t.Fatalf("got %d %s", r.code, r.body)
	}
	if h.f.gotAgent != "agent-1" {
		t.Fatalf("service asked for %q", h.f.gotAgent)
	}
	etag := r.header.Get("ETag")
	if len(etag) != 34 || etag[0] != '"' {
		t.Fatalf("ETag %q", etag)
	}
	// Caches revalidate every time, so a superseded passport is never
	// served from a cache (spec Pitfall 6).
	if cc := r.header.Get("Cache-Control"); cc != "no-cache" {
		t.Fatalf("Cache-Control %q, want no-cache", cc)
	}
	if r.header.Get("Expires") != "" {
		t.Fatalf("Expires %q beside no-cache", r.header.Get("Expires"))
	}
	h.f.cert.Issued = false // a cache hit
	r2 := h.do("GET", "/swarmscore/agent-1/certificate", nil, "If-None-Match", etag)
	if r2.code != http.StatusNotModified || len(r2.body) != 0 || r2.header.Get("ETag") != etag || r2.header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("If-None-Match: %d %s %v", r2.code, r2.body, r2.header)
	}
	// A different document has a different ETag.
	h.f.cert.Passport, h.f.cert.Issued = []byte(`{"agent_id":"agent-1","x":1}`), true
	if r3 := h.do("GET", "/swarmscore/agent-1/certificate", nil, "If-None-Match", etag); r3.code != 200 || r3.header.Get("ETag") == etag {
		t.Fatalf("new passport: %d, ETag %q", r3.code, r3.header.Get("ETag"))
	}
	m := h.do("GET", "/metrics", nil)
	if !bytes.Contains(m.body, []byte("swarmscore_passports_issued_total 2")) {
		t.Fatalf("metrics lack 2 issued passports:\n%s", grep(m.body, "passports"))
	}
}

func grep(b []byte, s string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestCertificateErrors(t *testing.T) {
	h := newHarness(t, Options{})
	h.do("GET", "/swarmscore/a%20b/certificate", nil).problem(t, "invalid-request", 400)
	if h.f.calls != 0 {
		t.Fatal("an invalid agent id reached the service")
	}
	// The use case's public detail, never the back end's layers.
	h.f.err = errkind.WithPublic(fmt.Errorf("postgres: cache stamp: %w: agent %q", errkind.ErrNotFound, "ghost"), `agent "ghost" is unknown`)
	p := h.do("GET", "/swarmscore/ghost/certificate", nil).problem(t, "not-found", 404)
	if p.Detail != `agent "ghost" is unknown` || p.Instance != "/swarmscore/ghost/certificate" {
		t.Fatalf("problem %+v", p)
	}
	h.f.err = fmt.Errorf("%w: database is down", errkind.ErrUnavailable)
	h.do("GET", "/swarmscore/a/certificate", nil).problem(t, "unavailable", 503)
}

// TestProblemsHideInternals: a database outage or a back end's "not found"
// tells the caller nothing about the database; the log has it, under the
// request id the problem carries.
func TestProblemsHideInternals(t *testing.T) {
	h := newHarness(t, Options{})
	h.f.err = fmt.Errorf("postgres: connect to postgres://dbuser:xxxxx@db.internal:5432/ledger: %w: FATAL: the database system is starting up (SQLSTATE 57P03)", errkind.ErrUnavailable)
	h.f.readyErr = h.f.err
	for _, target := range []string{"/swarmscore/agent-1", "/swarmscore/agent-1/certificate", "/readyz"} {
		r := h.do("GET", target, nil)
		p := r.problem(t, "unavailable", 503)
		for _, leak := range []string{"dbuser", "db.internal", "ledger", "5432", "SQLSTATE", "57P03", "postgres"} {
			if strings.Contains(string(r.body), leak) {
				t.Errorf("%s: the problem reveals %q: %s", target, leak, r.body)
			}
		}
		if !strings.Contains(h.logs.String(), `"request_id":"`+p.RequestID+`"`) || !strings.Contains(h.logs.String(), "SQLSTATE 57P03") {
			t.Errorf("%s: the log lacks the outage under request id %s:\n%s", target, p.RequestID, h.logs)
		}
	}
	h.f.err = fmt.Errorf("sqlite: cached score: %w: agent %q", errkind.ErrNotFound, "ghost")
	if p := h.do("GET", "/swarmscore/ghost", nil).problem(t, "not-found", 404); strings.Contains(p.Detail, "sqlite") || strings.Contains(p.Detail, ":") {
		t.Errorf("not found without a public detail: %q", p.Detail)
	}
}

func TestScore(t *testing.T) {
	h := newHarness(t, Options{})
	m := h.do("GET", "/swarmscore/agent-1", nil).ok(t)
	if m["agent_id"] != "agent-1" || m["computed_at"] != "2026-03-17T14:30:00Z" || m["expires_at"] != "2026-03-24T14:30:00Z" {
		t.Fatalf("envelope %v", m)
	}
	// The rest is exactly the CLI's --json object.
	want := map[string]any{}
	res := h.f.entry.Result
	if err := json.Unmarshal(res.AppendJSON(nil), &want); err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if fmt.Sprint(m[k]) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if len(m) != len(want)+3 {
		t.Errorf("got %d fields, want %d", len(m), len(want)+3)
	}
	if m["score"] != float64(760) || m["escrow_modifier"] != 0.392 {
		t.Fatalf("score %v modifier %v", m["score"], m["escrow_modifier"])
	}
	h.f.err = fmt.Errorf("%w: agent %q", errkind.ErrNotFound, "nobody")
	h.do("GET", "/swarmscore/nobody", nil).problem(t, "not-found", 404)
}

func TestVerify(t *testing.T) {
	h := newHarness(t, Options{})
	exp := now.Add(7 * 24 * time.Hour)
	h.f.verifyRes = service.Verification{Valid: true, SignatureValid: true, ScoreValid: true, ExpiresAt: exp}
	cert := `{"b":1, "a":[1,2]}`
	r := h.do("POST", "/swarmscore/verify", strings.NewReader(`{"certificate":`+cert+`,"agent_id":"agent-1"}`))
	m := r.ok(t)
	if string(h.f.gotDoc) != cert {
		t.Fatalf("service got %q, want the certificate as received %q", h.f.gotDoc, cert)
	}
	keys := slices.Sorted(mapsKeys(m))
	if !slices.Equal(keys, []string{"checks", "detected_tampering", "errors", "expires_at", "score_valid", "signature_valid", "valid", "warnings"}) {
		t.Fatalf("fields %v", keys)
	}
	if m["valid"] != true || m["expires_at"] != "2026-03-24T14:30:00Z" || m["detected_tampering"] != false || h.f.gotAgent != "agent-1" ||
		fmt.Sprint(m["warnings"]) != "[]" || fmt.Sprint(m["errors"]) != "[]" {
		t.Fatalf("body %s", r.body)
	}
	// The checks and warnings as the use case reports them, in order.
	h.f.verifyRes = service.Verification{Valid: true, SignatureValid: true, ScoreValid: true, ExpiresAt: exp,
		Warnings: []service.VerifyError{{Code: "unknown_field", Message: "m"}},
		Checks: service.Checks{{Name: "signature", Result: service.CheckOK}, {Name: "consistency", Result: service.CheckOK},
			{Name: "expiry", Result: service.CheckOK}, {Name: "ledger", Result: service.CheckNotApplicable}, {Name: "agent", Result: service.CheckNotApplicable}}}
	r = h.do("POST", "/swarmscore/verify", strings.NewReader(`{"certificate":`+cert+`}`))
	r.ok(t)
	if !bytes.Contains(r.body, []byte(`"warnings":[{"code":"unknown_field","message":"m"}],"checks":{"signature":"ok","consistency":"ok","expiry":"ok","ledger":"not_applicable","agent":"not_applicable"}}`)) {
		t.Fatalf("warnings and checks: %s", r.body)
	}
	if h.f.gotAgent != "" || string(h.f.gotDoc) != cert {
		t.Fatalf("no agent_id: the service got %q for %q", h.f.gotDoc, h.f.gotAgent)
	}
	// The bare passport, as served by the certificate route (with a
	// byte-order mark before it): the document whole, no agent asked.
	bare := `{"agent_id":"agent-1","swarmscore_version":"1.0","issuer":{"signature":"x"}}`
	h.do("POST", "/swarmscore/verify", strings.NewReader("\xef\xbb\xbf"+bare+"\n")).ok(t)
	if string(h.f.gotDoc) != bare || h.f.gotAgent != "" {
		t.Fatalf("bare passport: the service got %q for %q", h.f.gotDoc, h.f.gotAgent)
	}

	h.f.verifyRes = service.Verification{SignatureValid: false, DetectedTampering: true,
		Errors: []service.VerifyError{{Code: "signature_mismatch", Message: "x"}}}
	m = h.do("POST", "/swarmscore/verify", strings.NewReader(`{"certificate":{},"agent_id":"agent-1"}`)).ok(t)
	if m["valid"] != false || m["detected_tampering"] != true || m["expires_at"] != nil {
		t.Fatalf("tampered: %v", m)
	}
	met := h.do("GET", "/metrics", nil).body
	for _, want := range []string{`swarmscore_verifications_total{result="valid"} 3`, `swarmscore_verifications_total{result="tampered"} 1`, `swarmscore_verifications_total{result="invalid"} 0`} {
		if !bytes.Contains(met, []byte(want)) {
			t.Errorf("metrics lack %s:\n%s", want, grep(met, "verifications"))
		}
	}
}

func mapsKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestVerifyBadRequests(t *testing.T) {
	h := newHarness(t, Options{})
	cases := []struct {
		body, slug, detail string
		status             int
	}{
		{``, "malformed-json", `expected a passport, or {"certificate"`, 400},
		{`{"certificate":`, "malformed-json", "ends inside", 400},
		{`{"certificate":{}, "agent_id":"a"`, "malformed-json", "ends inside", 400},
		{`{"certificate":{} "agent_id":"a"}`, "malformed-json", "byte", 400},
		{`{"certificate":{},"agent_id":"a"} {}`, "malformed-json", "after", 400},
		{`[]`, "wrong-type", `must be a JSON object: a passport, or {"certificate": <passport>, "agent_id": "<optional agent id>"}; got a JSON array`, 400},
		{`"x"`, "wrong-type", "a passport, or", 400},
		{`{"certificate":"abc","agent_id":"a"}`, "wrong-type", "certificate", 400},
		{`{"certificate":[1],"agent_id":"a"}`, "wrong-type", "certificate", 400},
		{`{"certificate":{},"agent_id":7}`, "wrong-type", "agent_id", 400},
		{`{"agent_id":"a"}`, "invalid-request", `field certificate is required: expected a passport, or {"certificate"`, 400},
		{`{}`, "invalid-request", "field certificate is required", 400},
		{`{"certificate":null,"agent_id":"a"}`, "invalid-request", "certificate", 400},
		{`{"certificate":{},"agent_id":"a b"}`, "invalid-request", "agent_id", 400},
		{`{"certificate":{},"agent_id":"a","extra":1}`, "invalid-request", `unknown field "extra"; expected a passport, or`, 400},
		{`{"certificate":{},"score":1}`, "invalid-request", `unknown field "score"`, 400},
		{`{"hello":1}`, "invalid-request", `unknown field "hello"; expected a passport`, 400},
		{`{"issuer":{},"x":[}`, "malformed-json", "byte", 400},
		{`{"certificate":{"pad":"` + strings.Repeat("x", maxVerifyBody) + `"},"agent_id":"a"}`, "body-too-large", "bytes", 413},
	}
	for _, c := range cases {
		p := h.do("POST", "/swarmscore/verify", strings.NewReader(c.body)).problem(t, c.slug, c.status)
		if !strings.Contains(p.Detail, c.detail) {
			t.Errorf("body %.60q: detail %q lacks %q", c.body, p.Detail, c.detail)
		}
	}
	if h.f.calls != 0 {
		t.Fatalf("bad requests reached the service %d times", h.f.calls)
	}
	// A body whose length is unknown in advance is cut off while reading.
	req := httptest.NewRequest("POST", "/swarmscore/verify", io.MultiReader(strings.NewReader(`{"certificate":{"pad":"`), strings.NewReader(strings.Repeat("x", maxVerifyBody))))
	req.ContentLength = -1
	rec := httptest.NewRecorder()
	h.s.ServeHTTP(rec, req)
	response{rec.Code, rec.Header(), rec.Body.Bytes()}.problem(t, "body-too-large", 413)
}

func TestEvents(t *testing.T) {
	h := newHarness(t, Options{})
	good := `{"type":"conduit_session","id":"s1","agent_id":"agent-1","status":"VERIFIED","started_at":"2026-03-01T00:00:00Z","completed_at":"2026-03-01T01:00:00+01:00"}`
	bad := `{"type":"conduit_session","id":"s2","agent_id":"agent-1","status":"VERIFIED","started_at":"2026-03-01T00:00:00Z"}`
	good2 := strings.Replace(good, `"s1"`, `"s3"`, 1)
	h.f.outcomes = func(evs []ledger.Event) []ledger.Outcome {
		return []ledger.Outcome{{Status: ledger.OutcomeAccepted}, {Status: ledger.OutcomeRejected, Err: fmt.Errorf("%w: status VERIFIED -> FAILED is not allowed", errkind.ErrConflict)}}
	}
	m := h.do("POST", "/swarmscore/events", strings.NewReader("["+good+","+bad+","+good2+"]"), ingestHdr()...).ok(t)
	if h.f.gotOperator != "acme" || len(h.f.gotEvents) != 2 || h.f.gotEvents[1].ID != "s3" {
		t.Fatalf("service got operator %q events %+v", h.f.gotOperator, h.f.gotEvents)
	}
	if !h.f.gotEvents[0].EndedAt.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("completed_at %v", h.f.gotEvents[0].EndedAt)
	}
	rej := m["rejected"].([]any)
	if m["accepted"] != 1.0 || m["duplicates"] != 0.0 || len(rej) != 2 {
		t.Fatalf("response %v", m)
	}
	r0, r1 := rej[0].(map[string]any), rej[1].(map[string]any)
	if r0["index"] != 1.0 || !strings.Contains(r0["reason"].(string), "completed_at") ||
		r1["index"] != 2.0 || r1["id"] != "s3" || !strings.Contains(r1["reason"].(string), "not allowed") {
		t.Fatalf("rejections %v", rej)
	}

	// NDJSON, with a blank line and a malformed line: line numbers count.
	h.f.outcomes = func(evs []ledger.Event) []ledger.Outcome {
		return []ledger.Outcome{{Status: ledger.OutcomeDuplicate}, {Status: ledger.OutcomeAccepted}}
	}
	m = h.do("POST", "/swarmscore/events", strings.NewReader(good+"\n\n{nope\n"+good2+"\n"), ingestHdr()...).ok(t)
	rej = m["rejected"].([]any)
	if m["accepted"] != 1.0 || m["duplicates"] != 1.0 || len(rej) != 1 || rej[0].(map[string]any)["line"] != 3.0 || rej[0].(map[string]any)["index"] != 1.0 {
		t.Fatalf("ndjson response %v", m)
	}
	if m["superseded"] != 0.0 {
		t.Fatalf("superseded %v, want 0", m["superseded"])
	}
	// A report of an earlier status is counted on its own: a no-op, not
	// a rejection.
	h.f.outcomes = func(evs []ledger.Event) []ledger.Outcome {
		return []ledger.Outcome{{Status: ledger.OutcomeSuperseded}, {Status: ledger.OutcomeAccepted}}
	}
	m = h.do("POST", "/swarmscore/events", strings.NewReader("["+good+","+good2+"]"), ingestHdr()...).ok(t)
	if m["accepted"] != 1.0 || m["duplicates"] != 0.0 || m["superseded"] != 1.0 || len(m["rejected"].([]any)) != 0 {
		t.Fatalf("superseded response %v", m)
	}
	met := h.do("GET", "/metrics", nil).body
	for _, want := range []string{"swarmscore_events_accepted_total 3", "swarmscore_events_duplicate_total 1",
		"swarmscore_events_superseded_total 1", "swarmscore_events_rejected_total 3"} {
		if !bytes.Contains(met, []byte(want)) {
			t.Errorf("metrics lack %q:\n%s", want, grep(met, "events"))
		}
	}
}

// TestCertificateMetrics: /metrics exports the service's certificate
// counters at each scrape, and the cache listener's state only when the
// back end's watch reports one.
func TestCertificateMetrics(t *testing.T) {
	h := newHarness(t, Options{})
	h.f.certStats = service.CertificateStats{FromMemory: 7, StampReads: 3, PassportReads: 2}
	met := h.do("GET", "/metrics", nil).body
	for _, want := range []string{"swarmscore_certificates_from_memory_total 7", "swarmscore_certificate_stamp_reads_total 3",
		"swarmscore_certificate_passport_reads_total 2"} {
		if !bytes.Contains(met, []byte(want)) {
			t.Errorf("metrics lack %q:\n%s", want, grep(met, "certificate"))
		}
	}
	if bytes.Contains(met, []byte("swarmscore_cache_listener")) {
		t.Errorf("listener metrics without a listener:\n%s", grep(met, "listener"))
	}

	h.f.certStats = service.CertificateStats{FromMemory: 8, Watch: &ledger.WatchStats{Live: true, Connects: 2, Disconnects: 1, MissedHeartbeats: 4}}
	met = h.do("GET", "/metrics", nil).body
	for _, want := range []string{"swarmscore_certificates_from_memory_total 8", "swarmscore_cache_listener_live 1",
		"swarmscore_cache_listener_connects_total 2", "swarmscore_cache_listener_disconnects_total 1",
		"swarmscore_cache_listener_missed_heartbeats_total 4"} {
		if !bytes.Contains(met, []byte(want)) {
			t.Errorf("metrics lack %q:\n%s", want, grep(met, "swarmscore_c"))
		}
	}
	h.f.certStats.Watch.Live = false
	if met := h.do("GET", "/metrics", nil).body; !bytes.Contains(met, []byte("swarmscore_cache_listener_live 0")) {
		t.Errorf("listener down:\n%s", grep(met, "listener"))
	}
}

func TestEventsErrors(t *testing.T) {
	h := newHarness(t, Options{})
	ev := `{"type":"conduit_session","id":"s1","agent_id":"a","status":"RUNNING","started_at":"2026-03-01T00:00:00Z"}`
	p := h.do("POST", "/swarmscore/events", strings.NewReader("["+ev+"]")).problem(t, "unauthorized", 401)
	if !strings.Contains(p.Detail, "missing") {
		t.Errorf("detail %q", p.Detail)
	}
	r := h.do("POST", "/swarmscore/events", strings.NewReader("["+ev+"]"), "Authorization", "Bearer sst_wrong")
	r.problem(t, "unauthorized", 401)
	if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
	}
	h.do("POST", "/swarmscore/events", strings.NewReader("["+ev+"]"), "Authorization", "Basic "+goodToken).problem(t, "unauthorized", 401)
	h.do("POST", "/swarmscore/events", strings.NewReader("["+ev+"]"), "Authorization", "Bearer").problem(t, "unauthorized", 401)
	if h.f.calls != 0 {
		t.Fatal("unauthenticated requests reached the service")
	}

	h.do("POST", "/swarmscore/events", strings.NewReader(""), ingestHdr()...).problem(t, "invalid-request", 400)
	h.do("POST", "/swarmscore/events", strings.NewReader("["+ev+",{"), ingestHdr()...).problem(t, "malformed-json", 400)
	h.do("POST", "/swarmscore/events", strings.NewReader("["+ev+"] x"), ingestHdr()...).problem(t, "malformed-json", 400)
	h.do("POST", "/swarmscore/events", strings.NewReader("["+ev+" "+ev+"]"), ingestHdr()...).problem(t, "malformed-json", 400)
	many := "[" + strings.TrimSuffix(strings.Repeat(ev+",", api.MaxEvents+1), ",") + "]"
	p = h.do("POST", "/swarmscore/events", strings.NewReader(many), ingestHdr()...).problem(t, "body-too-large", 413)
	if !strings.Contains(p.Detail, "10000 events") {
		t.Errorf("detail %q", p.Detail)
	}
	manyND := strings.Repeat(ev+"\n", api.MaxEvents+1)
	h.do("POST", "/swarmscore/events", strings.NewReader(manyND), ingestHdr()...).problem(t, "body-too-large", 413)
	huge := strings.Repeat(" ", MaxEventsBody) + "[]"
	h.do("POST", "/swarmscore/events", strings.NewReader(huge), ingestHdr()...).problem(t, "body-too-large", 413)
	if h.f.calls != 0 {
		t.Fatalf("bad batches reached the service %d times", h.f.calls)
	}
	// Exactly api.MaxEvents is fine.
	okBatch := "[" + strings.TrimSuffix(strings.Repeat(ev+",", api.MaxEvents), ",") + "]"
	if m := h.do("POST", "/swarmscore/events", strings.NewReader(okBatch), ingestHdr()...).ok(t); m["accepted"] != float64(api.MaxEvents) {
		t.Fatalf("accepted %v", m["accepted"])
	}

	for _, c := range []struct {
		err    error
		slug   string
		status int
	}{
		{fmt.Errorf("%w: operator acme may not report for this agent", errkind.ErrForbidden), "forbidden", 403},
		{fmt.Errorf("%w: batch", errkind.ErrConflict), "conflict", 409},
		{fmt.Errorf("%w: database is down", errkind.ErrUnavailable), "unavailable", 503},
	} {
		h.f.err = c.err
		h.do("POST", "/swarmscore/events", strings.NewReader("["+ev+"]"), ingestHdr()...).problem(t, c.slug, c.status)
	}
}

func TestEscrow(t *testing.T) {
	h := newHarness(t, Options{})
	h.f.escrowRes = service.Escrow{Score: 760, Modifier: 3920, HoldCents: 39200, ReleasedCents: 60800}
	r := h.do("POST", "/swarmscore/agent-1/escrow", strings.NewReader(`{"amount_cents":100000}`), authHdr()...)
	if r.code != 200 || string(r.body) != `{"score":760,"escrow_modifier":0.392,"hold_cents":39200,"released_cents":60800}`+"\n" {
		t.Fatalf("%d %s", r.code, r.body)
	}
	if h.f.gotAmount != 100000 || h.f.gotAgent != "agent-1" {
		t.Fatalf("service got %d for %q", h.f.gotAmount, h.f.gotAgent)
	}
	h.f.calls = 0
	for _, c := range []struct{ body, slug, detail string }{
		{`{"amount_cents":"100"}`, "wrong-type", "amount_cents"},
		{`{"amount_cents":true}`, "wrong-type", "amount_cents"},
		{`{"amount_cents":1.5}`, "invalid-request", "whole number"},
		{`{"amount_cents":1e3}`, "invalid-request", "whole number"},
		{`{"amount_cents":-1}`, "invalid-request", "out of range"},
		{`{"amount_cents":9007199254740992}`, "invalid-request", "out of range"},
		{`{"amount_cents":99999999999999999999999}`, "invalid-request", "out of range"},
		{`{}`, "invalid-request", "amount_cents is required"},
		{`{"amount":5}`, "invalid-request", `"amount"`},
		{`{"amount_cents":5`, "malformed-json", "ends"},
	} {
		p := h.do("POST", "/swarmscore/agent-1/escrow", strings.NewReader(c.body), authHdr()...).problem(t, c.slug, 400)
		if !strings.Contains(p.Detail, c.detail) {
			t.Errorf("%s: detail %q lacks %q", c.body, p.Detail, c.detail)
		}
	}
	h.do("POST", "/swarmscore/agent-1/escrow", strings.NewReader(`{"amount_cents":1`+strings.Repeat(" ", maxSmallBody)+`}`), authHdr()...).problem(t, "body-too-large", 413)
	h.do("POST", "/swarmscore/agent-1/escrow", strings.NewReader(`{"amount_cents":1}`)).problem(t, "unauthorized", 401)
	if h.f.calls != 0 {
		t.Fatalf("bad requests reached the service %d times", h.f.calls)
	}
	h.f.err = fmt.Errorf("%w: agent %q", errkind.ErrNotFound, "x")
	h.do("POST", "/swarmscore/x/escrow", strings.NewReader(`{"amount_cents":1}`), authHdr()...).problem(t, "not-found", 404)
}

func TestAgents(t *testing.T) {
	h := newHarness(t, Options{})
	e := h.f.entry
	h.f.page = service.RankingPage{Agents: []ledger.ScoreEntry{e}, Next: &ledger.Cursor{Score: 760, AgentID: "agent-1"}}
	m := h.do("GET", "/swarmscore/agents?tier=STANDARD&min_score=700&limit=1", nil, authHdr()...).ok(t)
	if q := h.f.gotQuery; q.MinTier != score.TierStandard || q.MinScore != 700 || q.Limit != 1 || q.After != nil {
		t.Fatalf("query %+v", q)
	}
	agents := m["agents"].([]any)
	a := agents[0].(map[string]any)
	if len(agents) != 1 || a["agent_id"] != "agent-1" || a["score"] != 760.0 || a["tier"] != "STANDARD" || a["escrow_modifier"] != 0.392 {
		t.Fatalf("agents %v", agents)
	}
	cursor, _ := m["next_cursor"].(string)
	h.do("GET", "/swarmscore/agents?cursor="+cursor, nil, authHdr()...).ok(t)
	if q := h.f.gotQuery; q.After == nil || *q.After != (ledger.Cursor{Score: 760, AgentID: "agent-1"}) || q.Limit != 50 {
		t.Fatalf("cursor round trip: %+v", q)
	}
	if a["conduit_contribution"] != float64(e.Result.ConduitContribution) || a["ap2_contribution"] != float64(e.Result.AP2Contribution) ||
		e.Result.ConduitContribution+e.Result.AP2Contribution != 760 {
		t.Errorf("contributions %v", a)
	}
	// Another order: its cursors carry it, and a cursor of one order is
	// refused under another.
	h.f.page.Next = &ledger.Cursor{Score: 456, AgentID: "agent-1"}
	m = h.do("GET", "/swarmscore/agents?sort=ap2", nil, authHdr()...).ok(t)
	if q := h.f.gotQuery; q.By != ledger.RankAP2 {
		t.Fatalf("sort=ap2: query %+v", q)
	}
	ap2Cursor, _ := m["next_cursor"].(string)
	h.do("GET", "/swarmscore/agents?cursor="+ap2Cursor+"&sort=ap2", nil, authHdr()...).ok(t)
	if q := h.f.gotQuery; q.By != ledger.RankAP2 || q.After == nil || *q.After != (ledger.Cursor{Score: 456, AgentID: "agent-1"}) {
		t.Fatalf("ap2 cursor round trip: %+v", q)
	}
	h.do("GET", "/swarmscore/agents?sort=escrow", nil, authHdr()...).ok(t)
	if q := h.f.gotQuery; q.By != ledger.RankScore {
		t.Fatalf("sort=escrow: query %+v", q)
	}
	calls := h.f.calls
	for _, q := range []string{"cursor=" + ap2Cursor, "sort=conduit&cursor=" + ap2Cursor, "sort=ap2&cursor=" + cursor} {
		if p := h.do("GET", "/swarmscore/agents?"+q, nil, authHdr()...).problem(t, "invalid-request", 400); !strings.Contains(p.Detail, "cursor") {
			t.Errorf("%s: detail %q", q, p.Detail)
		}
	}
	if h.f.calls != calls {
		t.Errorf("a cursor of another order reached the service")
	}
	h.f.page = service.RankingPage{}
	m = h.do("GET", "/swarmscore/agents", nil, authHdr()...).ok(t)
	if m["next_cursor"] != nil || len(m["agents"].([]any)) != 0 {
		t.Fatalf("last page %v", m)
	}

	h.f.calls = 0
	for _, c := range []struct{ q, detail string }{
		{"tier=GOLD", "tier"},
		{"min_score=-1", "min_score"},
		{"min_score=1001", "min_score"},
		{"limit=0", "limit"},
		{"limit=1001", "limit"},
		{"limit=x", "limit"},
		{"cursor=%%%", ""},
		{"cursor=bm9wZQ", "cursor"},
		{"limit=1&limit=2", "limit"},
		{"sort=name", "sort"},
	} {
		r := h.do("GET", "/swarmscore/agents?"+c.q, nil, authHdr()...)
		if c.detail == "" { // unparseable query string
			if r.code != 400 {
				t.Errorf("%s: %d", c.q, r.code)
			}
			continue
		}
		p := r.problem(t, "invalid-request", 400)
		if !strings.Contains(p.Detail, c.detail) {
			t.Errorf("%s: detail %q", c.q, p.Detail)
		}
	}
	h.do("GET", "/swarmscore/agents", nil).problem(t, "unauthorized", 401)
	if h.f.calls != 0 {
		t.Fatalf("bad queries reached the service %d times", h.f.calls)
	}
}

func TestNoRouteAndMethod(t *testing.T) {
	h := newHarness(t, Options{})
	h.do("GET", "/nope", nil).problem(t, "no-route", 404)
	h.do("GET", "/swarmscore/a/b/c", nil).problem(t, "no-route", 404)
	r := h.do("DELETE", "/swarmscore/agent-1", nil)
	p := r.problem(t, "method-not-allowed", 405)
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") {
		t.Fatalf("Allow %q", allow)
	}
	if !strings.Contains(p.Detail, "DELETE") {
		t.Fatalf("detail %q", p.Detail)
	}
	r = h.do("GET", "/swarmscore/verify/", nil)
	if r.code == 200 {
		t.Fatalf("GET /swarmscore/verify/ served %s", r.body)
	}
	h.do("PUT", "/swarmscore/events", nil, authHdr()...).problem(t, "method-not-allowed", 405)
	met := h.do("GET", "/metrics", nil).body
	if !bytes.Contains(met, []byte(`route="unmatched"`)) || bytes.Contains(met, []byte(`route="/nope"`)) {
		t.Fatalf("unmatched requests must share one label:\n%s", grep(met, "requests_total"))
	}
}

func TestPanicAndInternalErrors(t *testing.T) {
	h := newHarness(t, Options{})
	h.f.panicMsg = "boom: secret internals"
	r := h.do("GET", "/swarmscore/agent-1/certificate", nil)
	p := r.problem(t, "internal", 500)
	if strings.Contains(string(r.body), "boom") || strings.Contains(string(r.body), "goroutine") {
		t.Fatalf("panic leaked into the response: %s", r.body)
	}
	if !strings.Contains(h.logs.String(), "boom: secret internals") || !strings.Contains(h.logs.String(), "goroutine") || !strings.Contains(h.logs.String(), p.RequestID) {
		t.Fatalf("the log lacks the panic, its stack or the request id:\n%s", h.logs)
	}
	h.f.panicMsg = ""
	h.f.err = errors.New("pq: relation swarmscore_cache does not exist")
	r = h.do("GET", "/swarmscore/agent-1", nil)
	r.problem(t, "internal", 500)
	if strings.Contains(string(r.body), "relation") || !strings.Contains(h.logs.String(), "relation swarmscore_cache") {
		t.Fatalf("internal error: body %s", r.body)
	}
}

func TestLogsHoldNoSecrets(t *testing.T) {
	h := newHarness(t, Options{})
	h.do("POST", "/swarmscore/events", strings.NewReader("[]"), ingestHdr()...)
	h.do("POST", "/swarmscore/events", strings.NewReader("[]"), "Authorization", "Bearer sst_not-a-real-token-xyz")
	h.f.cert.Passport = []byte(`{"issuer":{"signature":"deadbeefcafe"}}`)
	h.do("GET", "/swarmscore/agent-1/certificate", nil)
	logs := h.logs.String()
	for _, secret := range []string{goodToken, "sst_not-a-real-token-xyz", "deadbeefcafe", "Authorization", "Bearer"} {
		if strings.Contains(logs, secret) {
			t.Errorf("log contains %q:\n%s", secret, logs)
		}
	}
	if !strings.Contains(logs, `"route":"POST /swarmscore/events"`) || !strings.Contains(logs, `"status":401`) {
		t.Fatalf("access log lacks route or status:\n%s", logs)
	}
}

func TestRequestID(t *testing.T) {
	h := newHarness(t, Options{})
	if r := h.do("GET", "/healthz", nil, "X-Request-ID", "abc-123"); r.header.Get("X-Request-ID") != "abc-123" {
		t.Fatalf("plain request id not kept: %q", r.header.Get("X-Request-ID"))
	}
	if r := h.do("GET", "/healthz", nil, "X-Request-ID", "evil\"\nid"); r.header.Get("X-Request-ID") == "evil\"\nid" || len(r.header.Get("X-Request-ID")) != 16 {
		t.Fatalf("unsafe request id kept: %q", r.header.Get("X-Request-ID"))
	}
}

func TestRateLimit(t *testing.T) {
	h := newHarness(t, Options{RateLimit: 1, RateBurst: 2})
	for i := 0; i < 2; i++ {
		if r := h.do("GET", "/swarmscore/agent-1", nil); r.code != 200 {
			t.Fatalf("request %d: %d", i, r.code)
		}
	}
	r := h.do("GET", "/swarmscore/agent-1/certificate", nil)
	r.problem(t, "rate-limited", 429)
	if r.header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// Health checks and operator routes are not limited.
	if r := h.do("GET", "/healthz", nil); r.code != 200 {
		t.Fatalf("healthz %d", r.code)
	}
	if r := h.do("GET", "/swarmscore/agents", nil, authHdr()...); r.code != 200 {
		t.Fatalf("operator route %d", r.code)
	}
	// Another client has its own bucket.
	req := httptest.NewRequest("GET", "/swarmscore/agent-1", nil)
	req.RemoteAddr = "192.0.2.99:1234"
	rec := httptest.NewRecorder()
	h.s.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("other client: %d", rec.Code)
	}
}

func TestHealthAndReady(t *testing.T) {
	h := newHarness(t, Options{})
	if m := h.do("GET", "/healthz", nil).ok(t); m["status"] != "ok" {
		t.Fatal(m)
	}
	if m := h.do("GET", "/readyz", nil).ok(t); m["status"] != "ready" {
		t.Fatal(m)
	}
	h.f.readyErr = fmt.Errorf("%w: migration 3 of 5 not applied", errkind.ErrUnavailable)
	p := h.do("GET", "/readyz", nil).problem(t, "unavailable", 503)
	if strings.Contains(p.Detail, "migration") || !strings.Contains(h.logs.String(), "migration 3 of 5") {
		t.Fatalf("detail %q (the reason belongs in the log)", p.Detail)
	}
	h.do("GET", "/healthz", strings.NewReader(strings.Repeat("x", maxNoBody+1))).problem(t, "body-too-large", 413)
}

func TestMetricsPerRoute(t *testing.T) {
	h := newHarness(t, Options{})
	h.do("GET", "/swarmscore/agent-1", nil)
	h.do("GET", "/swarmscore/agent-2", nil)
	met := h.do("GET", "/metrics", nil).body
	want := `swarmscore_http_requests_total{code="200",route="GET /swarmscore/{agent_id}"} 2`
	if !bytes.Contains(met, []byte(want)) {
		t.Fatalf("metrics lack %s:\n%s", want, grep(met, "requests_total"))
	}
	if !bytes.Contains(met, []byte(`swarmscore_http_request_duration_seconds_count{route="GET /swarmscore/{agent_id}"} 2`)) {
		t.Fatalf("no latency histogram per route:\n%s", grep(met, "duration_seconds_count"))
	}
}

// TestOpenAPI keeps the document and the server in step: every registered
// route is documented, every documented operation is registered, and the
// problem catalogue is the same.
func TestOpenAPI(t *testing.T) {
	h := newHarness(t, Options{MCP: http.NotFoundHandler()})
	r := h.do("GET", "/openapi.json", nil)
	var doc struct {
		OpenAPI    string                                `json:"openapi"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas struct {
				Problem struct {
					Properties struct {
						Type struct {
							Enum []string `json:"enum"`
						} `json:"type"`
					} `json:"properties"`
				} `json:"Problem"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q: %v", doc.OpenAPI, err)
	}
	var documented, registered []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for pattern := range h.s.routes {
		registered = append(registered, pattern)
	}
	slices.Sort(documented)
	slices.Sort(registered)
	if !slices.Equal(documented, registered) {
		t.Fatalf("documented routes\n%s\nregistered routes\n%s", strings.Join(documented, "\n"), strings.Join(registered, "\n"))
	}
	var types []string
	for _, pt := range problemTypes {
		types = append(types, ProblemBase+pt.slug)
	}
	if !slices.Equal(types, doc.Components.Schemas.Problem.Properties.Type.Enum) {
		t.Fatalf("problem types\n%v\ndocumented\n%v", types, doc.Components.Schemas.Problem.Properties.Type.Enum)
	}
	// Every $ref resolves.
	var all any
	json.Unmarshal(r.body, &all)
	for _, ref := range refs(all) {
		name, ok := strings.CutPrefix(ref, "#/components/")
		kind, key, _ := strings.Cut(name, "/")
		comp, _ := all.(map[string]any)["components"].(map[string]any)[kind].(map[string]any)
		if _, found := comp[key]; !ok || !found {
			t.Errorf("dangling $ref %s", ref)
		}
	}
}

func refs(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "$ref" {
				out = append(out, s)
			}
			out = append(out, refs(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, refs(x)...)
		}
	}
	return out
}

// TestEventLimits: the limits the public api package states (which the
// client batches within) are the ledger's.
func TestEventLimits(t *testing.T) {
	if api.MaxLineBytes != ledger.MaxLineBytes {
		t.Fatalf("api.MaxLineBytes = %d, ledger.MaxLineBytes = %d", api.MaxLineBytes, ledger.MaxLineBytes)
	}
}

// TestCORS: the public routes a marketplace page reads from another origin
// (certificate, score, verify, the OpenAPI document) are readable by any
// origin, problems included, and answer preflights; operator routes are
// not.
func TestCORS(t *testing.T) {
	h := newHarness(t, Options{})
	origin := []string{"Origin", "https://market.example"}
	for _, r := range []response{
		h.do("GET", "/swarmscore/agent-1/certificate", nil, origin...),
		h.do("GET", "/swarmscore/agent-1", nil, origin...),
		h.do("POST", "/swarmscore/verify", strings.NewReader(`{"certificate":{}}`), origin...),
		h.do("GET", "/openapi.json", nil, origin...),
		h.do("GET", "/swarmscore/a%20b/certificate", nil, origin...), // a problem
	} {
		if r.header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "ETag") {
			t.Errorf("%d %s: CORS headers %v", r.code, r.body, r.header)
		}
	}
	for _, r := range []response{
		h.do("GET", "/swarmscore/agents", nil, append(origin, authHdr()...)...),
		h.do("POST", "/swarmscore/events", strings.NewReader("[]"), append(origin, ingestHdr()...)...),
		h.do("GET", "/metrics", nil, origin...),
	} {
		if r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%d: operator or probe route readable cross-origin", r.code)
		}
	}

	pre := func(method, target, reqMethod string) response {
		return h.do(method, target, nil, "Origin", "https://market.example", "Access-Control-Request-Method", reqMethod,
			"Access-Control-Request-Headers", "content-type")
	}
	r := pre("OPTIONS", "/swarmscore/verify", "POST")
	if r.code != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != "*" || r.header.Get("Access-Control-Allow-Methods") != "POST" ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Content-Type") || r.header.Get("Access-Control-Max-Age") == "" {
		t.Fatalf("preflight of verify: %d %v", r.code, r.header)
	}
	r = pre("OPTIONS", "/swarmscore/agent-1/certificate", "GET")
	if r.code != http.StatusNoContent || r.header.Get("Access-Control-Allow-Methods") != "GET, HEAD" ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "If-None-Match") {
		t.Fatalf("preflight of certificate: %d %v", r.code, r.header)
	}
	for _, c := range [][2]string{{"/swarmscore/events", "POST"}, {"/swarmscore/agents", "GET"}, {"/swarmscore/agent-1/escrow", "POST"}, {"/swarmscore/verify", "DELETE"}} {
		r := pre("OPTIONS", c[0], c[1])
		if r.code == http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight of %s %s allowed: %d %v", c[1], c[0], r.code, r.header)
		}
	}
	// OPTIONS without a preflight is the method nobody serves.
	h.do("OPTIONS", "/swarmscore/verify", nil).problem(t, "method-not-allowed", 405)
	if met := h.do("GET", "/metrics", nil).body; !bytes.Contains(met, []byte(`route="OPTIONS (CORS preflight)"`)) {
		t.Errorf("preflights are not counted under their own label:\n%s", grep(met, "requests_total"))
	}
}

// TestMetricsAllow: /metrics answers only the networks allowed (loopback by
// default), and a forwarded request is judged by the client a trusted
// proxy names, never by an unnamed proxy's loopback address.
func TestMetricsAllow(t *testing.T) {
	get := func(s *Server, remote string, hdr ...string) int {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.RemoteAddr = remote
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Code
	}
	def := New(every(&fake{}), Options{})
	for remote, want := range map[string]int{"127.0.0.1:9": 200, "[::1]:9": 200, "[::ffff:127.0.0.1]:9": 200, "192.0.2.1:9": 403, "10.0.0.1:9": 403} {
		if got := get(def, remote); got != want {
			t.Errorf("default, from %s: %d, want %d", remote, got, want)
		}
	}
	if got := get(def, "127.0.0.1:9", "X-Forwarded-For", "203.0.113.9"); got != 403 {
		t.Errorf("forwarded by an unnamed proxy on loopback: %d, want 403", got)
	}
	if got := get(def, "127.0.0.1:9", "Forwarded", "for=203.0.113.9"); got != 403 {
		t.Errorf("Forwarded by an unnamed proxy on loopback: %d, want 403", got)
	}
	s := New(every(&fake{}), Options{MetricsAllow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	for _, c := range []struct {
		remote, xff string
		want        int
	}{
		{"10.1.2.3:9", "", 200},
		{"127.0.0.1:9", "", 403},
		{"127.0.0.1:9", "10.1.2.3", 200},
		{"127.0.0.1:9", "203.0.113.9", 403},
		{"10.2.0.1:9", "", 403},
	} {
		var hdr []string
		if c.xff != "" {
			hdr = []string{"X-Forwarded-For", c.xff}
		}
		if got := get(s, c.remote, hdr...); got != c.want {
			t.Errorf("allow 10.1/16 from %s (XFF %q): %d, want %d", c.remote, c.xff, got, c.want)
		}
	}
}

// accessLines returns the access-log lines of h, decoded.
func (h *harness) accessLines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "request" {
			out = append(out, m)
		}
	}
	return out
}

// TestAccessLog: durations carry their unit, operator routes name the
// operator, and refused requests of a flood are sampled.
func TestAccessLog(t *testing.T) {
	clock := now
	h := newHarness(t, Options{RateLimit: 1, RateBurst: 1})
	h.s.now = func() time.Time { return clock }
	h.do("POST", "/swarmscore/events", strings.NewReader("[]"), ingestHdr()...)
	h.do("GET", "/swarmscore/agent-1", nil)
	for range 50 {
		h.do("GET", "/swarmscore/agent-1", nil) // all refused
	}
	clock = clock.Add(rateLimitedLogEvery)
	h.do("GET", "/swarmscore/agent-1", nil) // the bucket refilled
	h.do("GET", "/swarmscore/agent-1", nil) // refused: the next sample
	lines := h.accessLines(t)
	if len(lines) != 5 {
		t.Fatalf("%d access lines, want 5 (events, score, a sample of 50 refused, score, the next sample):\n%s", len(lines), h.logs)
	}
	ev, first, second := lines[0], lines[2], lines[4]
	if ev["operator"] != "acme" || ev["route"] != "POST /swarmscore/events" {
		t.Errorf("operator route: %v", ev)
	}
	if _, ok := lines[1]["operator"]; ok {
		t.Errorf("public route names an operator: %v", lines[1])
	}
	for _, l := range lines {
		if d, ok := l["duration_ms"].(float64); !ok || d < 0 {
			t.Errorf("duration_ms %v in %v", l["duration_ms"], l)
		}
		if _, ok := l["duration"]; ok {
			t.Errorf("a duration without its unit: %v", l)
		}
	}
	if first["status"] != 429.0 || first["rate_limited_not_logged"] != 0.0 || second["rate_limited_not_logged"] != 49.0 {
		t.Errorf("samples: %v / %v", first, second)
	}
	met := h.do("GET", "/metrics", nil).body
	if !bytes.Contains(met, []byte(`swarmscore_http_requests_total{code="429",route="GET /swarmscore/{agent_id}"} 51`)) {
		t.Errorf("every refused request is counted:\n%s", grep(met, "429"))
	}
}

// TestEventsBOM: a byte-order mark before an NDJSON or JSON-array body is
// not part of the first event.
func TestEventsBOM(t *testing.T) {
	h := newHarness(t, Options{})
	ev := `{"type":"conduit_session","id":"s1","agent_id":"a","status":"RUNNING","started_at":"2026-03-01T00:00:00Z"}`
	for _, body := range []string{"\xef\xbb\xbf" + ev + "\n", "\xef\xbb\xbf[" + ev + "]"} {
		m := h.do("POST", "/swarmscore/events", strings.NewReader(body), ingestHdr()...).ok(t)
		if m["accepted"] != 1.0 || len(m["rejected"].([]any)) != 0 {
			t.Errorf("%q: %v", body, m)
		}
	}
}

// TestEventsMediaType: a batch of events is application/json or
// application/x-ndjson, in UTF-8; anything else is refused with 415 and
// the Accept header, before the body is read and nothing reaches the use
// case (issue 28).
func TestEventsMediaType(t *testing.T) {
	h := newHarness(t, Options{})
	ev := `{"type":"conduit_session","id":"s1","agent_id":"a","status":"RUNNING","started_at":"2026-03-01T00:00:00Z"}`
	for ct, detail := range map[string]string{
		"":                                     "Content-Type is required",
		"application/xml":                      "Content-Type application/xml is not accepted",
		"text/plain; charset=utf-8":            "Content-Type text/plain is not accepted",
		"application/x-www-form-urlencoded":    "Content-Type application/x-www-form-urlencoded is not accepted",
		"multipart/form-data; boundary=x":      "Content-Type multipart/form-data is not accepted",
		"application/json; charset=latin1":     "with charset latin1: events are UTF-8",
		"application/x-ndjson; charset=utf-16": "with charset utf-16",
		"application/json; profile=x":          "has a parameter profile",
		"application/json; charset":            "is not a media type",
		"json":                                 "Content-Type json is not accepted",
	} {
		before := h.f.calls
		r := h.do("POST", "/swarmscore/events", strings.NewReader("["+ev+"]"), append(authHdr(), "Content-Type", ct)...)
		p := r.problem(t, "unsupported-media-type", 415)
		if !strings.Contains(p.Detail, detail) || r.header.Get("Accept") != "application/json, application/x-ndjson" {
			t.Errorf("Content-Type %q: detail %q, Accept %q", ct, p.Detail, r.header.Get("Accept"))
		}
		if h.f.calls != before {
			t.Errorf("Content-Type %q: the batch reached the use case", ct)
		}
	}
	for _, ct := range []string{"application/json", "application/x-ndjson", "application/json; charset=utf-8", "Application/JSON; Charset=UTF-8", "application/x-ndjson;charset=\"utf-8\""} {
		body := "[" + ev + "]"
		if strings.Contains(strings.ToLower(ct), "ndjson") {
			body = ev + "\n"
		}
		h.do("POST", "/swarmscore/events", strings.NewReader(body), append(authHdr(), "Content-Type", ct)...).ok(t)
	}
}

// Every response carries the security headers: problems, JSON, the
// OpenAPI document, a 405, and net/http's own errors rewritten by Listener.
func TestSecurityHeadersEverywhere(t *testing.T) {
	h := newHarness(t, Options{})
	check := func(what string, hdr http.Header) {
		t.Helper()
		for k, want := range map[string]string{
			"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin",
		} {
			if got := hdr.Get(k); got != want {
				t.Errorf("%s: %s is %q, want %q", what, k, got, want)
			}
		}
		if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", what, csp)
		}
	}
	for _, c := range []struct{ method, target string }{
		{"GET", "/nope"}, {"DELETE", "/swarmscore/agent-1"}, {"GET", "/swarmscore/agent-1"}, {"GET", "/openapi.json"},
		{"GET", "/healthz"}, {"POST", "/swarmscore/events"}, {"GET", "/swarmscore/agent-1/certificate"},
	} {
		r := h.do(c.method, c.target, nil)
		check(c.method+" "+c.target, r.header)
	}
	b, ok := problemResponse([]byte("HTTP/1.1 431 Request Header Fields Too Large" + netHTTPErrorHeaders + "431 Request Header Fields Too Large"))
	if !ok {
		t.Fatal("the 431 was not rewritten")
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), nil)
	if err != nil {
		t.Fatal(err)
	}
	check("net/http's 431", resp.Header)
}
