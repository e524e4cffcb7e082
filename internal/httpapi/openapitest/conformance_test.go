package openapitest_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/httpapi"
	"github.com/swarmscore/swarmscore/internal/httpapi/openapitest"
	"github.com/swarmscore/swarmscore/internal/mcp"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/internal/web/webtest"
	"github.com/swarmscore/swarmscore/passport"
)

const adminToken = "conformance-admin-token-0123456789abcdef"

// stack is the real server over a fresh SQLite ledger, with an Ed25519
// keyring (so the key set, the key history and checkpoints have content),
// webtest's agents and an agent token for agent-7.
type stack struct {
	t       *testing.T
	u       *service.UseCases
	api     http.Handler
	limited http.Handler // rate limited to one request per client, for 429
	agent   string       // agent-7's own token
	doc     *openapitest.Document
	seen    map[string]map[int]bool // operation → statuses exercised
}

func newStack(t *testing.T) *stack {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "conformance.db")
	st, err := sqlite.Open(ctx, "sqlite:"+db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	ring, err := service.OpenKeyring(ctx, st, service.KeyConfig{DBFile: db, Alg: passport.AlgEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	u := service.New(st, service.Config{Keys: ring, Platform: "test.example", PseudonymKey: ring.Derive(service.PseudonymLabel)})
	if _, err := u.Tokens.BootstrapAdminToken(ctx, adminToken); err != nil {
		t.Fatal(err)
	}
	if err := webtest.Seed(ctx, u, time.Now().UTC().Truncate(time.Second)); err != nil {
		t.Fatal(err)
	}
	tok, err := u.Tokens.CreateAgentToken(ctx, webtest.Operator, "agent-7")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapitest.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	return &stack{
		t: t, u: u, agent: tok.Secret, doc: doc, seen: map[string]map[int]bool{},
		api: httpapi.New(httpapi.ServicesOf(u), httpapi.Options{Logger: log, AuthFailures: 2, AuthFailureEvery: time.Hour,
			MCP: mcp.Handler(mcp.ServicesOf(u), mcp.Options{Logger: log})}),
		limited: httpapi.New(httpapi.ServicesOf(u), httpapi.Options{Logger: log, RateLimit: 1.0 / 3600, RateBurst: 1,
			MCP: mcp.Handler(mcp.ServicesOf(u), mcp.Options{Logger: log})}),
	}
}

// req is one request: its method and path, headers as name, value pairs,
// a body, and the client's address (default 192.0.2.1).
type req struct {
	method, path string
	header       []string
	body         string
	// length, when set, is the Content-Length the request claims (a body
	// over a route's limit is refused before it is read).
	length int64
	remote string
}

// answer is what the server answered.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends r to h and checks the answer against the document: the status
// must be want, and the answer what the document says of it.
func (s *stack) do(h http.Handler, r req, want int) answer {
	s.t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr := httptest.NewRequest(r.method, r.path, body)
	for i := 0; i+1 < len(r.header); i += 2 {
		hr.Header.Set(r.header[i], r.header[i+1])
	}
	if r.length > 0 {
		hr.ContentLength = r.length
	}
	hr.RemoteAddr = "192.0.2.1:4321"
	if r.remote != "" {
		hr.RemoteAddr = r.remote + ":4321"
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, hr)
	a := answer{w.Code, w.Header(), w.Body.Bytes()}
	if a.status != want {
		s.t.Fatalf("%s %s: %d, want %d\n%s", r.method, r.path, a.status, want, a.body)
	}
	op, err := s.doc.Check(r.method, r.path, a.status, a.header, a.body)
	if err != nil {
		s.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	ops := []string{op}
	if a.status == http.StatusMethodNotAllowed { // every operation the path takes documents it
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			if o, ok := s.doc.Operation(m, r.path); ok {
				ops = append(ops, o)
			}
		}
	}
	for _, op := range ops {
		if s.seen[op] == nil {
			s.seen[op] = map[int]bool{}
		}
		s.seen[op][a.status] = true
	}
	return a
}

func admin(more ...string) []string {
	return append([]string{"Authorization", "Bearer " + adminToken}, more...)
}

func (s *stack) asAgent(more ...string) []string {
	return append([]string{"Authorization", "Bearer " + s.agent}, more...)
}

func jsonBody(more ...string) []string {
	return append([]string{"Content-Type", "application/json"}, more...)
}

func field(t *testing.T, b []byte, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	switch v := m[name].(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	t.Fatalf("no %s in %s", name, b)
	return ""
}

// TestConformance sends every route of the real server the requests that
// give its answers (successes, and the refusals a client meets), and
// checks each answer against the OpenAPI document: the status is
// documented for the operation, and the headers and body are what the
// document says. Every documented operation must be exercised here, so a
// route added to the server (which TestOpenAPI requires the document to
// list) must add its requests below, or this test fails naming it. Beyond
// these cases, every path is sent a method it does not take (405), every
// authenticated operation a request without a token (401) and one after
// too many failed authentications (429), and every public operation that
// documents 429 a request over the rate limit.
func TestConformance(t *testing.T) {
	s := newStack(t)
	api := s.api
	ctx := context.Background()

	// Passports and scores.
	cert := s.do(api, req{method: "GET", path: "/swarmscore/agent-7/certificate"}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7/certificate", header: []string{"If-None-Match", cert.header.Get("ETag")}}, 304)
	s.do(api, req{method: "HEAD", path: "/swarmscore/agent-7/certificate"}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/no-such-agent/certificate"}, 404)
	s.do(api, req{method: "GET", path: "/swarmscore/a%20b/certificate"}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7/certificate", header: []string{"Authorization", "Bearer not-a-token"}, remote: "192.0.2.50"}, 401)
	s.do(api, req{method: "POST", path: "/swarmscore/verify", header: jsonBody(), body: `{"certificate":` + string(cert.body) + `,"agent_id":"agent-7"}`}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/verify", header: jsonBody(), body: string(cert.body)}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/verify", header: jsonBody(), body: `{"certificate":`}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/verify", header: jsonBody(), body: `{}`, length: 1 << 20}, 413)
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7"}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/shy-agent"}, 404)
	s.do(api, req{method: "GET", path: "/swarmscore/shy-agent", header: admin()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/a%20b"}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/agent-7/escrow", header: admin(jsonBody()...), body: `{"amount_cents":125000}`}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/agent-7/escrow", header: admin(jsonBody()...), body: `{"amount_cents":-1}`}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/agent-7/escrow", header: s.asAgent(jsonBody()...), body: `{"amount_cents":1}`}, 403)
	s.do(api, req{method: "POST", path: "/swarmscore/agent-7/escrow", header: admin(jsonBody()...), body: `{}`, length: 1 << 20}, 413)
	s.do(api, req{method: "GET", path: "/swarmscore/agents?limit=5&tier=STANDARD", header: admin()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/agents?limit=0", header: admin()}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/agents", header: s.asAgent()}, 403)

	// Conduit proofs.
	proofDay := time.Now().UTC().Add(-24 * time.Hour).Format(time.DateOnly)
	bundle := "the proof bundle of conf-proven"
	sum := sha256.Sum256([]byte(bundle))
	proven := fmt.Sprintf(`[{"type":"conduit_session","id":"conf-proven","agent_id":"agent-7","status":"VERIFIED","started_at":"%[1]sT10:00:00Z","completed_at":"%[1]sT10:05:00Z","proof_hash":"%[2]x"},`+
		`{"type":"conduit_session","id":"conf-unproven","agent_id":"agent-7","status":"VERIFIED","started_at":"%[1]sT10:00:00Z","completed_at":"%[1]sT10:05:00Z"}]`, proofDay, sum)
	s.do(api, req{method: "POST", path: "/swarmscore/events", header: admin(jsonBody()...), body: proven}, 200)
	octet := func(more ...string) []string {
		return admin(append([]string{"Content-Type", "application/octet-stream"}, more...)...)
	}
	s.do(api, req{method: "POST", path: "/swarmscore/events/conduit_session/conf-proven/proof", header: octet(), body: bundle}, 201)
	s.do(api, req{method: "POST", path: "/swarmscore/events/conduit_session/conf-proven/proof", header: octet(), body: bundle + "!"}, 201)
	s.do(api, req{method: "POST", path: "/swarmscore/events/conduit_session/conf-unproven/proof", header: octet(), body: bundle}, 409)
	s.do(api, req{method: "POST", path: "/swarmscore/events/conduit_session/no-such-session/proof", header: octet(), body: bundle}, 404)
	s.do(api, req{method: "POST", path: "/swarmscore/events/conduit_session/a%20b/proof", header: octet(), body: bundle}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/events/conduit_session/conf-proven/proof", header: admin(jsonBody()...), body: `{}`}, 415)
	s.do(api, req{method: "POST", path: "/swarmscore/events/conduit_session/conf-proven/proof", header: s.asAgent("Content-Type", "application/octet-stream"), body: bundle}, 403)
	s.do(api, req{method: "POST", path: "/swarmscore/events/conduit_session/conf-proven/proof", header: octet(), body: "x", length: 1 << 30}, 413)

	// Escrow holds.
	hold := `{"transaction_id":"conf-tx-1","provider_id":"agent-7","buyer_id":"buyer-x","amount_cents":125000,"currency":"USD"}`
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds", header: admin(jsonBody()...), body: hold}, 201)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds", header: admin(jsonBody()...), body: hold}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds", header: admin(jsonBody()...), body: strings.Replace(hold, "125000", "1", 1)}, 409)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds", header: admin(jsonBody()...), body: strings.Replace(hold, "USD", "EUR", 1)}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds", header: s.asAgent(jsonBody()...), body: hold}, 403)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds", header: admin(jsonBody()...), body: `{}`, length: 1 << 20}, 413)
	for _, id := range []string{"conf-tx-2", "conf-tx-3"} {
		s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds", header: admin(jsonBody()...), body: strings.Replace(hold, "conf-tx-1", id, 1)}, 201)
	}
	s.do(api, req{method: "GET", path: "/swarmscore/escrow/holds?state=held&provider_id=agent-7", header: admin()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/escrow/holds?state=lost", header: admin()}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/escrow/holds", header: s.asAgent()}, 403)
	s.do(api, req{method: "GET", path: "/swarmscore/escrow/holds/conf-tx-1", header: admin()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/escrow/holds/no-such-hold", header: admin()}, 404)
	s.do(api, req{method: "GET", path: "/swarmscore/escrow/holds/a%20b", header: admin()}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/escrow/holds/conf-tx-1", header: s.asAgent()}, 403)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/conf-tx-1/release", header: admin(jsonBody()...), body: `{"fee_cents":100}`}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/conf-tx-1/release", header: admin()}, 409)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/conf-tx-2/release", header: admin(jsonBody()...), body: `{"fee_cents":-1}`}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/conf-tx-2/dispute", header: admin(jsonBody()...), body: `{"reason":"not delivered"}`}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/conf-tx-2/dispute", header: admin()}, 409)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/conf-tx-2/dispute", header: admin(jsonBody()...), body: `{"reason":7}`}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/conf-tx-2/resolve", header: admin(jsonBody()...), body: `{"outcome":"won"}`}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/conf-tx-2/resolve", header: admin(jsonBody()...), body: `{"outcome":"refunded","reason":"the buyer wins"}`}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/conf-tx-2/resolve", header: admin(jsonBody()...), body: `{"outcome":"settled"}`}, 409)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/conf-tx-3/cancel", header: admin(jsonBody()...), body: `{"reason":7}`}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/conf-tx-3/cancel", header: admin()}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/conf-tx-3/cancel", header: admin()}, 409)
	for _, act := range []string{"release", "dispute", "resolve", "cancel"} {
		body := `{}`
		if act == "resolve" {
			body = `{"outcome":"settled"}`
		}
		s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/no-such-hold/" + act, header: admin(jsonBody()...), body: body}, 404)
		s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/conf-tx-3/" + act, header: s.asAgent()}, 403)
		s.do(api, req{method: "POST", path: "/swarmscore/escrow/holds/conf-tx-3/" + act, header: admin(jsonBody()...), body: `{}`, length: 1 << 20}, 413)
	}

	// The ledger.
	day := time.Now().UTC().Add(-24 * time.Hour).Format(time.DateOnly)
	pending := fmt.Sprintf(`[{"type":"conduit_session","id":"conf-pending","agent_id":"agent-7","status":"RUNNING","started_at":"%sT10:00:00Z"}]`, day)
	s.do(api, req{method: "POST", path: "/swarmscore/events", header: admin(jsonBody()...), body: pending}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/events", header: admin("Content-Type", "application/x-ndjson"),
		body: fmt.Sprintf(`{"type":"conduit_session","id":"conf-bad","agent_id":"agent-7","status":"DONE","started_at":"%sT10:00:00Z"}`+"\n", day)}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/events", header: admin(jsonBody()...), body: `[{`}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/events", header: admin("Content-Type", "text/plain"), body: pending}, 415)
	s.do(api, req{method: "POST", path: "/swarmscore/events", header: s.asAgent(jsonBody()...), body: pending}, 403)
	s.do(api, req{method: "POST", path: "/swarmscore/events", header: admin(jsonBody()...), body: `[]`, length: 1 << 30}, 413)
	s.do(api, req{method: "GET", path: "/swarmscore/checkpoints/latest"}, 404)
	s.do(api, req{method: "GET", path: "/swarmscore/log/checkpoint"}, 404)
	if _, err := s.u.Audit.MakeCheckpoint(ctx, false); err != nil {
		t.Fatal(err)
	}
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7/audit", header: admin()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7/audit?withhold=buyers,operators", header: admin()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7/audit?as_of=yesterday", header: admin()}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/no-such-agent/audit", header: admin()}, 404)
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7/audit", header: s.asAgent()}, 403)

	// Corrections and appeals.
	correction := `{"event_type":"conduit_session","event_id":"agent-7-c39","action":"status","status":"VERIFIED","reason":"the buyer confirmed it"}`
	s.do(api, req{method: "POST", path: "/swarmscore/corrections", header: admin(jsonBody()...), body: correction}, 201)
	s.do(api, req{method: "POST", path: "/swarmscore/corrections", header: admin(jsonBody()...), body: correction}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/corrections", header: admin(jsonBody()...),
		body: `{"event_type":"conduit_session","event_id":"no-such-event","action":"void","reason":"x"}`}, 404)
	s.do(api, req{method: "POST", path: "/swarmscore/corrections", header: admin(jsonBody()...),
		body: `{"event_type":"conduit_session","event_id":"conf-pending","action":"void","reason":"x"}`}, 409)
	s.do(api, req{method: "POST", path: "/swarmscore/corrections", header: admin(jsonBody()...), body: `{"action":"void"}`}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/corrections", header: s.asAgent(jsonBody()...), body: correction}, 403)
	s.do(api, req{method: "POST", path: "/swarmscore/corrections", header: admin(jsonBody()...), body: `{}`, length: 1 << 20}, 413)

	cert = s.do(api, req{method: "GET", path: "/swarmscore/agent-7/certificate"}, 200)
	pid := field(t, cert.body, "agent_passport_id")
	filing := func(events string) string {
		return `{"agent_passport_id":"` + pid + `","grounds":"incorrect_status","statement":"The ledger has the wrong status.","events":[` + events + `]}`
	}
	c19 := `{"event_type":"conduit_session","event_id":"agent-7-c19"}`
	t19 := `{"event_type":"ap2_transaction","event_id":"agent-7-t19"}`
	first := s.do(api, req{method: "POST", path: "/swarmscore/appeals", header: s.asAgent(jsonBody()...), body: filing(c19)}, 201)
	second := s.do(api, req{method: "POST", path: "/swarmscore/appeals", header: admin(jsonBody()...), body: filing(t19)}, 201)
	s.do(api, req{method: "POST", path: "/swarmscore/appeals", header: s.asAgent(jsonBody()...),
		body: `{"agent_passport_id":"00000000-0000-4000-8000-000000000000","grounds":"incorrect_status","statement":"x","events":[` + c19 + `]}`}, 404)
	s.do(api, req{method: "POST", path: "/swarmscore/appeals", header: s.asAgent(jsonBody()...), body: `{"grounds":"bribery"}`}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/appeals", header: s.asAgent(jsonBody()...), body: `{}`, length: 1 << 20}, 413)
	a1, a2 := field(t, first.body, "id"), field(t, second.body, "id")
	s.do(api, req{method: "GET", path: "/swarmscore/appeals", header: s.asAgent()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/appeals?state=submitted&overdue=false", header: admin()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/appeals?state=lost", header: admin()}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/appeals/" + a1, header: s.asAgent()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/appeals/no-such-appeal", header: admin()}, 404)
	s.do(api, req{method: "POST", path: "/swarmscore/appeals/" + a1 + "/ack", header: admin(jsonBody()...), body: `{"reason":"looking into it"}`}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/appeals/" + a1 + "/ack", header: admin()}, 409)
	s.do(api, req{method: "POST", path: "/swarmscore/appeals/" + a1 + "/ack", header: s.asAgent()}, 403)
	s.do(api, req{method: "POST", path: "/swarmscore/appeals/no-such-appeal/ack", header: admin()}, 404)
	s.do(api, req{method: "POST", path: "/swarmscore/appeals/" + a1 + "/uphold", header: admin(jsonBody()...),
		body: `{"reason":"confirmed by the buyer","corrections":[{"event_type":"conduit_session","event_id":"agent-7-c19","action":"status","status":"VERIFIED"}]}`}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/appeals/" + a1 + "/uphold", header: admin(jsonBody()...), body: `{"reason":""}`}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/appeals/" + a2 + "/ack", header: admin()}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/appeals/" + a2 + "/reject", header: admin(jsonBody()...), body: `{"reason":"the buyer disputed it"}`}, 200)
	s.do(api, req{method: "POST", path: "/swarmscore/appeals/" + a2 + "/reject", header: admin(jsonBody()...), body: `{"reason":"again"}`}, 409)
	s.do(api, req{method: "POST", path: "/swarmscore/appeals/" + a2 + "/escalate", header: admin(jsonBody()...), body: `{"reason":"to the board"}`}, 200)
	for _, act := range []string{"ack", "uphold", "reject", "escalate"} {
		s.do(api, req{method: "POST", path: "/swarmscore/appeals/" + a2 + "/" + act, header: admin(jsonBody()...), body: `{}`, length: 1 << 20}, 413)
	}
	s.do(api, req{method: "POST", path: "/swarmscore/appeals/" + a2 + "/escalate", header: admin(jsonBody()...), body: `{"reason":"again"}`}, 409)
	s.do(api, req{method: "POST", path: "/swarmscore/appeals/" + a2 + "/uphold", header: admin(jsonBody()...), body: `{"reason":"x","corrections":[]}`}, 409)

	// Transparency.
	s.do(api, req{method: "GET", path: "/swarmscore/checkpoints/latest"}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/checkpoints/latest", header: []string{"Accept", "application/json"}}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/log/checkpoint"}, 200)
	cp, _, err := s.u.Log.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Size >= 256 {
		s.do(api, req{method: "GET", path: "/swarmscore/log/tile/0/000"}, 200)
	} else {
		s.do(api, req{method: "GET", path: "/swarmscore/log/tile/0/000"}, 404)
	}
	if w := cp.Size % 256; w > 0 && cp.Size < 256*1000 {
		s.do(api, req{method: "GET", path: fmt.Sprintf("/swarmscore/log/tile/0/%03d.p/%d", cp.Size/256, w)}, 200)
	}
	s.do(api, req{method: "GET", path: "/swarmscore/log/tile/0/x999/999"}, 404)
	s.do(api, req{method: "GET", path: "/swarmscore/log/tile/0/1"}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/log/tile/0/000.p/0"}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/checkpoints/1"}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/checkpoints/first"}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/checkpoints/999"}, 404)
	s.do(api, req{method: "GET", path: "/.well-known/swarmscore-keys.json"}, 200)
	s.do(api, req{method: "GET", path: "/.well-known/swarmscore-key-history.json"}, 200)

	// Agents' rights.
	s.do(api, req{method: "GET", path: "/swarmscore/disclosure"}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/disclosure?version=99"}, 404)
	s.do(api, req{method: "GET", path: "/swarmscore/disclosure?lang=fr"}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7/consent", header: s.asAgent()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/elite-1/consent", header: s.asAgent()}, 403)
	s.do(api, req{method: "GET", path: "/swarmscore/no-such-agent/consent", header: admin()}, 404)
	s.do(api, req{method: "PUT", path: "/swarmscore/agent-7/consent", header: s.asAgent(jsonBody()...), body: `{}`}, 200)
	s.do(api, req{method: "PUT", path: "/swarmscore/agent-7/consent", header: s.asAgent(jsonBody()...), body: `{"disclosure_version":7}`}, 400)
	s.do(api, req{method: "PUT", path: "/swarmscore/agent-7/consent", header: s.asAgent(jsonBody()...), body: `{}`, length: 1 << 20}, 413)
	s.do(api, req{method: "PUT", path: "/swarmscore/agent-7/visibility", header: s.asAgent(jsonBody()...), body: `{"visibility":"public"}`}, 200)
	s.do(api, req{method: "PUT", path: "/swarmscore/agent-7/visibility", header: s.asAgent(jsonBody()...), body: `{"visibility":"hidden"}`}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7/records", header: s.asAgent()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7/records?as_of=2999-01-01T00:00:00Z", header: s.asAgent()}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7/signals", header: s.asAgent()}, 200)
	for _, route := range []string{"records", "signals"} {
		s.do(api, req{method: "GET", path: "/swarmscore/elite-1/" + route, header: s.asAgent()}, 403)
		s.do(api, req{method: "GET", path: "/swarmscore/no-such-agent/" + route, header: admin()}, 404)
	}
	s.do(api, req{method: "GET", path: "/swarmscore/signals", header: admin()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/signals?flagged=true", header: admin()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/signals?flagged=maybe", header: admin()}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/newbie/erase", header: admin(jsonBody()...), body: `{"reason":"the agent asked (Art. 17)"}`}, 201)
	s.do(api, req{method: "POST", path: "/swarmscore/newbie/erase", header: admin(jsonBody()...), body: `{}`}, 404)
	s.do(api, req{method: "POST", path: "/swarmscore/elite-1/erase", header: admin(jsonBody()...), body: `{"reason":7}`}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/elite-1/erase", header: admin(jsonBody()...), body: `{}`, length: 1 << 20}, 413)
	s.do(api, req{method: "GET", path: "/swarmscore/erasures", header: admin()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/actions?limit=2", header: admin()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/actions?limit=0", header: admin()}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/actions", header: s.asAgent()}, 403)
	hook := s.do(api, req{method: "POST", path: "/swarmscore/webhooks", header: admin(jsonBody()...),
		body: `{"url":"https://93.184.216.34/hooks","events":["score.changed","hold.updated"]}`}, 201)
	var created struct{ ID string }
	if err := json.Unmarshal(hook.body, &created); err != nil || created.ID == "" {
		t.Fatalf("webhook: %v %s", err, hook.body)
	}
	s.do(api, req{method: "POST", path: "/swarmscore/webhooks", header: admin(jsonBody()...), body: `{"url":"https://10.0.0.1/x","events":["score.changed"]}`}, 400)
	s.do(api, req{method: "POST", path: "/swarmscore/webhooks", header: admin(jsonBody()...), body: `{}`, length: 1 << 20}, 413)
	s.do(api, req{method: "POST", path: "/swarmscore/webhooks", header: s.asAgent(jsonBody()...), body: `{"url":"https://93.184.216.34/x","events":["score.changed"]}`}, 403)
	s.do(api, req{method: "GET", path: "/swarmscore/webhooks", header: admin()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/webhooks/" + created.ID, header: admin()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/webhooks/ep_nope", header: admin()}, 404)
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7", header: admin()}, 200) // a score.changed for the deliveries
	s.do(api, req{method: "GET", path: "/swarmscore/webhooks/" + created.ID + "/deliveries", header: admin()}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/webhooks/" + created.ID + "/deliveries?limit=0", header: admin()}, 400)
	s.do(api, req{method: "DELETE", path: "/swarmscore/webhooks/" + created.ID, header: admin()}, 204)
	s.do(api, req{method: "DELETE", path: "/swarmscore/webhooks/" + created.ID, header: admin()}, 404)

	// What agents and their tools read.
	cred := s.do(api, req{method: "GET", path: "/swarmscore/agent-7/credential"}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7/credential", header: []string{"If-None-Match", cred.header.Get("ETag")}}, 304)
	s.do(api, req{method: "GET", path: "/swarmscore/shy-agent/credential"}, 404)
	s.do(api, req{method: "GET", path: "/swarmscore/a%20b/credential"}, 400)
	var vc struct {
		CredentialStatus struct {
			StatusListCredential string `json:"statusListCredential"`
		} `json:"credentialStatus"`
	}
	if err := json.Unmarshal(cred.body, &vc); err != nil || !strings.Contains(vc.CredentialStatus.StatusListCredential, "/swarmscore/credentials/status/") {
		t.Fatalf("the credential's status: %v %s", err, cred.body)
	}
	list := vc.CredentialStatus.StatusListCredential[strings.Index(vc.CredentialStatus.StatusListCredential, "/swarmscore/credentials/status/"):]
	s.do(api, req{method: "GET", path: list}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/credentials/status/first"}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/credentials/status/999"}, 404)
	s.do(api, req{method: "GET", path: "/.well-known/did.json"}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7/erc8004?erc8004_agent_id=42"}, 200)
	s.do(api, req{method: "GET", path: "/swarmscore/agent-7/erc8004?erc8004_agent_id=-1"}, 400)
	s.do(api, req{method: "GET", path: "/swarmscore/no-such-agent/erc8004"}, 404)
	s.do(api, req{method: "GET", path: "/.well-known/agent-card.json"}, 200)
	mcpHeader := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
	s.do(api, req{method: "POST", path: "/mcp", header: mcpHeader, body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`}, 200)
	s.do(api, req{method: "POST", path: "/mcp", header: admin(mcpHeader...),
		body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_score","arguments":{"agent_id":"agent-7"}}}`}, 200)
	s.do(api, req{method: "POST", path: "/mcp", header: mcpHeader, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`}, 202)
	s.do(api, req{method: "POST", path: "/mcp", header: mcpHeader, body: `{"jsonrpc":`}, 400)
	s.do(api, req{method: "POST", path: "/mcp", header: mcpHeader, body: `{}`, length: 1 << 20}, 413)
	s.do(api, req{method: "GET", path: "/mcp"}, 405)

	// Operations.
	s.do(api, req{method: "GET", path: "/healthz"}, 200)
	s.do(api, req{method: "GET", path: "/readyz"}, 200)
	s.do(api, req{method: "GET", path: "/metrics", remote: "127.0.0.1"}, 200)
	s.do(api, req{method: "GET", path: "/metrics"}, 403)
	s.do(api, req{method: "GET", path: "/openapi.json"}, 200)

	// Every documented operation was exercised above.
	for _, op := range s.doc.Operations() {
		if len(s.seen[op]) == 0 {
			t.Errorf("%s is documented but not exercised: add its requests to TestConformance", op)
		}
	}
	s.sweep()
	var untried []string
	for _, op := range s.doc.Operations() {
		for _, code := range s.doc.Responses(op) {
			if n, _ := strconv.Atoi(code); !s.seen[op][n] {
				untried = append(untried, op+" "+code)
			}
		}
	}
	t.Logf("documented answers not exercised (faults of the database or the server): %s", strings.Join(untried, "; "))
}

// sweep sends every path a method it does not take, every authenticated
// operation a request without a token and one after too many failed
// authentications, and every public operation documenting 429 two
// requests from one client to the rate-limited server.
func (s *stack) sweep() {
	s.t.Helper()
	sample := map[string]string{"{agent_id}": "agent-7", "{id}": "no-such-appeal", "{number}": "1", "{transaction_id}": "conf-tx-1"}
	concrete := func(op string) (method, path string) {
		method, path, _ = strings.Cut(op, " ")
		for k, v := range sample {
			path = strings.ReplaceAll(path, k, v)
		}
		return method, path
	}
	done := map[string]bool{}
	client := 0
	next := func() string { client++; return fmt.Sprintf("198.51.100.%d", client) }
	for _, op := range s.doc.Operations() {
		method, path := concrete(op)
		_, tmpl, _ := strings.Cut(op, " ")
		if !done[tmpl] {
			done[tmpl] = true
			methods := s.doc.Methods(tmpl)
			wrong := "DELETE"
			if slices.Contains(methods, wrong) {
				wrong = "PATCH"
			}
			a := s.do(s.api, req{method: wrong, path: path}, 405)
			if allow := a.header.Get("Allow"); !strings.Contains(allow, methods[0]) {
				s.t.Errorf("%s %s: Allow %q lacks %s", wrong, path, allow, methods[0])
			}
		}
		if s.doc.Authenticated(op) {
			ip := next()
			bad := req{method: method, path: path, header: []string{"Authorization", "Bearer not-a-token", "Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, remote: ip}
			if method != "GET" {
				bad.body = "{}"
			}
			s.do(s.api, bad, 401)
			s.do(s.api, bad, 401)
			s.do(s.api, bad, 429)
			if !s.doc.Anonymous(op) {
				s.do(s.api, req{method: method, path: path, remote: next()}, 401)
			}
		} else if slices.Contains(s.doc.Responses(op), "429") {
			ip := next()
			s.doLimited(req{method: method, path: path, remote: ip})
			s.do(s.limited, req{method: method, path: path, remote: ip}, 429)
		}
	}
}

// doLimited spends a client's one request on the rate-limited server,
// whatever it answers.
func (s *stack) doLimited(r req) {
	hr := httptest.NewRequest(r.method, r.path, nil)
	hr.RemoteAddr = r.remote + ":4321"
	s.limited.ServeHTTP(httptest.NewRecorder(), hr)
}
