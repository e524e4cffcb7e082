package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/passport"
)

// The fake's part of RightsService: the certificate and score routes
// serve its canned answers to anyone, and operator tokens are callers.
func (f *fake) CallerFor(ctx context.Context, token string) (service.Caller, error) {
	if token == goodToken {
		return service.OperatorCaller("acme"), nil
	}
	return service.Caller{}, fmt.Errorf("%w: unknown token", errkind.ErrUnauthorized)
}
func (f *fake) CertificateFor(ctx context.Context, _ service.Caller, agentID string) (service.Certificate, error) {
	return f.Certificate(ctx, agentID)
}
func (f *fake) ScoreFor(ctx context.Context, _ service.Caller, agentID string) (ledger.ScoreEntry, error) {
	return f.Score(ctx, agentID)
}
func (f *fake) SignalStats() (service.SignalStats, bool) { return service.SignalStats{}, false }

// rightsHarness is a server over real use cases on SQLite, with an
// operator token and agent-1's and agent-2's tokens.
type rightsHarness struct {
	*harness
	u                 *service.UseCases
	cfg               service.Config
	opTok, tok1, tok2 string
	clock             *time.Time
}

// newRightsHarness makes the harness; configure, if given, changes the use
// cases' configuration first.
func newRightsHarness(t *testing.T, configure ...func(*service.Config)) *rightsHarness {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "rights.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key, err := passport.NewKey([]byte("0123456789abcdef0123456789abcdef-rights"))
	if err != nil {
		t.Fatal(err)
	}
	clock := now
	cfg := service.Config{Key: key, Platform: "test", Now: func() time.Time { return clock }, PseudonymKey: []byte("pseudonym-key-0123456789abcdef0123")}
	for _, f := range configure {
		f(&cfg)
	}
	u := service.New(st, cfg)
	u.Certificates.StartCacheWatch()
	h := &harness{t: t, st: st, s: New(ServicesOf(u), Options{Now: func() time.Time { return clock },
		MetricsAllow: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}})}
	var evs []ledger.Event
	for i := range 12 {
		for _, agent := range []string{"agent-1", "agent-2"} {
			evs = append(evs, ledger.Event{Type: ledger.AP2Transaction, ID: fmt.Sprintf("%s-t%d", agent, i), AgentID: agent,
				BuyerID: "buyer-x", Status: ledger.Settled, EscrowAmountCents: 1000, StartedAt: now.Add(-3 * time.Hour), EndedAt: now.Add(-2 * time.Hour)})
		}
	}
	if _, err := u.Ingest.Ingest(ctx, "acme", evs); err != nil {
		t.Fatal(err)
	}
	rh := &rightsHarness{harness: h, u: u, cfg: cfg, clock: &clock}
	nt, err := u.Tokens.CreateToken(ctx, "acme", "admin")
	if err != nil {
		t.Fatal(err)
	}
	rh.opTok = nt.Secret
	for _, p := range []struct {
		agent string
		tok   *string
	}{{"agent-1", &rh.tok1}, {"agent-2", &rh.tok2}} {
		nt, err := u.Tokens.CreateAgentToken(ctx, "acme", p.agent)
		if err != nil {
			t.Fatal(err)
		}
		*p.tok = nt.Secret
	}
	return rh
}

func bearer(tok string) []string {
	if tok == "" {
		return nil
	}
	return []string{"Authorization", "Bearer " + tok}
}

// TestVisibilityRoutes: an agent unlists itself; the public then gets the
// unknown agent's 404 on the score and certificate routes, the agent and
// operators still get them, and back to public it is listed again.
func TestVisibilityRoutes(t *testing.T) {
	h := newRightsHarness(t)
	if r := h.do("GET", "/swarmscore/agent-1/certificate", nil); r.code != http.StatusOK || r.header.Get("Vary") != "Authorization" {
		t.Fatalf("public certificate: %d %v", r.code, r.header)
	}
	r := h.do("PUT", "/swarmscore/agent-1/visibility", strings.NewReader(`{"visibility":"unlisted"}`), bearer(h.tok1)...)
	m := r.ok(t)
	if m["visibility"] != "unlisted" || m["published"] != false || m["consented"] != false || m["disclosure_version"] != nil {
		t.Fatalf("visibility response %s", r.body)
	}
	for _, path := range []string{"/swarmscore/agent-1", "/swarmscore/agent-1/certificate"} {
		hidden := h.do("GET", path, nil).problem(t, "not-found", http.StatusNotFound)
		ghost := h.do("GET", strings.Replace(path, "agent-1", "ghost-1", 1), nil).problem(t, "not-found", http.StatusNotFound)
		if hidden.Detail != `agent "agent-1" has no public score` || ghost.Detail != `agent "ghost-1" has no public score` {
			t.Fatalf("%s: %q vs %q", path, hidden.Detail, ghost.Detail)
		}
		h.do("GET", path, nil, bearer(h.tok2)...).problem(t, "not-found", http.StatusNotFound)
		for _, tok := range []string{h.tok1, h.opTok} {
			if r := h.do("GET", path, nil, bearer(tok)...); r.code != http.StatusOK {
				t.Fatalf("%s for the agent or an operator: %d %s", path, r.code, r.body)
			}
		}
		h.do("GET", path, nil, "Authorization", "Bearer sst_nonsense").problem(t, "unauthorized", http.StatusUnauthorized)
	}
	for body, want := range map[string]string{
		`{"visibility":"hidden"}`:       "invalid-request",
		`{"visibility":1}`:              "wrong-type",
		`{}`:                            "invalid-request",
		`{"visibility":"public","x":1}`: "invalid-request",
		`[`:                             "malformed-json",
	} {
		slug := want
		status := http.StatusBadRequest
		h.do("PUT", "/swarmscore/agent-1/visibility", strings.NewReader(body), bearer(h.opTok)...).problem(t, slug, status)
	}
	h.do("PUT", "/swarmscore/agent-1/visibility", strings.NewReader(`{"visibility":"public"}`), bearer(h.opTok)...).ok(t)
	h.do("GET", "/swarmscore/agent-1", nil).ok(t)
}

// TestConsentRoutes: consent is recorded with its version and author,
// shown to the agent and operators; an unknown version is refused.
func TestConsentRoutes(t *testing.T) {
	h := newRightsHarness(t, func(c *service.Config) { c.RequireConsent = true })
	h.do("GET", "/swarmscore/agent-1/certificate", nil).problem(t, "not-found", http.StatusNotFound)
	m := h.do("GET", "/swarmscore/agent-1/consent", nil, bearer(h.tok1)...).ok(t)
	if m["consented"] != false || m["require_consent"] != true || m["published"] != false || m["visibility"] != "public" {
		t.Fatalf("before consent: %v", m)
	}
	*h.clock = now.Add(time.Minute)
	m = h.do("PUT", "/swarmscore/agent-1/consent", strings.NewReader(`{}`), bearer(h.tok1)...).ok(t)
	if m["consented"] != true || m["disclosure_version"] != service.CurrentDisclosure().Version || m["published"] != true ||
		m["consented_at"] != "2026-03-17T14:31:00Z" || !strings.HasPrefix(m["consented_by"].(string), "agent:tok-") {
		t.Fatalf("after consent: %v", m)
	}
	h.do("GET", "/swarmscore/agent-1/certificate", nil).ok(t)
	m = h.do("PUT", "/swarmscore/agent-2/consent", strings.NewReader(`{"disclosure_version":"1"}`), bearer(h.opTok)...).ok(t)
	if m["consented_by"] != "operator:acme" {
		t.Fatalf("an operator's: %v", m)
	}
	p := h.do("PUT", "/swarmscore/agent-2/consent", strings.NewReader(`{"disclosure_version":"7"}`), bearer(h.opTok)...).problem(t, "invalid-request", http.StatusBadRequest)
	if !strings.Contains(p.Detail, "never published") {
		t.Fatalf("unknown version: %+v", p)
	}
}

func TestDisclosureRoute(t *testing.T) {
	h := newRightsHarness(t)
	r := h.do("GET", "/swarmscore/disclosure", nil)
	m := r.ok(t)
	d := service.CurrentDisclosure()
	if m["version"] != d.Version || m["disclosure"] != d.Disclosure || m["disclaimer"] != d.Disclaimer || len(m) != 3 ||
		r.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("disclosure %s %v", r.body, r.header)
	}
	h.do("GET", "/swarmscore/disclosure?version="+d.Version, nil).ok(t)
	h.do("GET", "/swarmscore/disclosure?version=0", nil).problem(t, "not-found", http.StatusNotFound)
	h.do("GET", "/swarmscore/disclosure?lang=fr", nil).problem(t, "invalid-request", http.StatusBadRequest)
}

// TestRecordsRoute: the agent sees its events with buyers masked and its
// passports; an operator sees the buyers; as_of is read and checked.
func TestRecordsRoute(t *testing.T) {
	h := newRightsHarness(t)
	cert := h.do("GET", "/swarmscore/agent-1/certificate", nil)
	var own struct {
		AgentID   string `json:"agent_id"`
		AsOf      string `json:"as_of"`
		Masked    bool   `json:"buyer_ids_masked"`
		Events    []map[string]any
		Passports []struct {
			ID       string          `json:"agent_passport_id"`
			Passport json.RawMessage `json:"passport"`
			KeyID    *string         `json:"key_id"`
		}
	}
	r := h.do("GET", "/swarmscore/agent-1/records", nil, bearer(h.tok1)...)
	if err := json.Unmarshal(r.body, &own); err != nil || r.code != http.StatusOK {
		t.Fatalf("%d %s %v", r.code, r.body, err)
	}
	pseudonym := service.Pseudonym(h.cfg.PseudonymKey, "agent-1", "buyer-x")
	if own.AgentID != "agent-1" || own.AsOf != "2026-03-17T14:30:00Z" || !own.Masked || len(own.Events) != 12 || len(own.Passports) != 1 ||
		string(own.Passports[0].Passport) != string(cert.body) {
		t.Fatalf("own records %s", r.body)
	}
	for _, e := range own.Events {
		if e["buyer_id"] != pseudonym || e["type"] != "ap2_transaction" || e["settled_at"] != "2026-03-17T12:30:00Z" ||
			e["escrow_amount_cents"] != 1000.0 || e["status"] != "SETTLED" || e["operator"] != "acme" || e["corrected"] != false {
			t.Fatalf("own event %v", e)
		}
	}
	if strings.Contains(string(r.body), "buyer-x") {
		t.Fatal("the agent's records name its buyer")
	}
	r = h.do("GET", "/swarmscore/agent-1/records?as_of=2026-03-17T13:00:00.5Z", nil, bearer(h.opTok)...)
	m := r.ok(t)
	events := m["events"].([]any)
	if m["buyer_ids_masked"] != false || len(events) != 12 || events[0].(map[string]any)["buyer_id"] != "buyer-x" || m["as_of"] != "2026-03-17T13:00:00.5Z" {
		t.Fatalf("operator's records %s", r.body)
	}
	if m := h.do("GET", "/swarmscore/agent-1/records?as_of=2026-03-17T12:00:00Z", nil, bearer(h.opTok)...).ok(t); len(m["events"].([]any)) != 0 {
		t.Fatalf("records before anything ended: %v", m)
	}
	h.do("GET", "/swarmscore/agent-1/records?as_of=yesterday", nil, bearer(h.opTok)...).problem(t, "invalid-request", http.StatusBadRequest)
	h.do("GET", "/swarmscore/agent-1/records?as_of=2026-03-17T13:00:00Z&as_of=2026-03-17T13:00:00Z", nil, bearer(h.opTok)...).problem(t, "invalid-request", http.StatusBadRequest)
	h.do("GET", "/swarmscore/ghost/records", nil, bearer(h.opTok)...).problem(t, "not-found", http.StatusNotFound)
}

// TestSignalsRoutes: the shapes of one agent's signals and of the flagged
// list; the list takes flagged=true only.
func TestSignalsRoutes(t *testing.T) {
	h := newRightsHarness(t)
	r := h.do("GET", "/swarmscore/agent-1/signals", nil, bearer(h.tok1)...)
	var own struct {
		AgentID string `json:"agent_id"`
		AsOf    string `json:"as_of"`
		Signals []struct {
			Name      string  `json:"name"`
			Value     float64 `json:"value"`
			Threshold float64 `json:"threshold"`
			Flagged   bool    `json:"flagged"`
		} `json:"signals"`
	}
	if err := json.Unmarshal(r.body, &own); err != nil || r.code != http.StatusOK {
		t.Fatalf("%d %s %v", r.code, r.body, err)
	}
	var names []string
	for _, s := range own.Signals {
		names = append(names, s.Name)
	}
	want := []string{"conduit_top_buyer_share", "ap2_top5_buyer_share", "ap2_buyer_diversity", "self_dealing", "acceptance_rate", "report_lag", "chain_break", "conduit_burst", "unproven_verified_share"}
	if own.AgentID != "agent-1" || own.AsOf != "2026-03-17T14:30:00Z" || !slices.Equal(names, want) {
		t.Fatalf("signals %s", r.body)
	}
	// Twelve transactions from one buyer: concentrated and undiverse.
	if s := own.Signals[1]; s.Value != 1 || s.Threshold != 0.7 || !s.Flagged {
		t.Fatalf("top-5 share %+v", s)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &members); err != nil || len(members) != 3 {
		t.Fatalf("members of %s: %v", r.body, err)
	}
	m := h.do("GET", "/swarmscore/signals?flagged=true", nil, bearer(h.opTok)...).ok(t)
	agents := m["agents"].([]any)
	if len(agents) != 2 || agents[0].(map[string]any)["agent_id"] != "agent-1" || m["as_of"] != "2026-03-17T14:30:00Z" ||
		len(agents[1].(map[string]any)["signals"].([]any)) != 9 {
		t.Fatalf("flagged %v", m)
	}
	if m := h.do("GET", "/swarmscore/signals?as_of=2026-03-16T00:00:00Z", nil, bearer(h.opTok)...).ok(t); len(m["agents"].([]any)) != 0 ||
		m["as_of"] != "2026-03-16T00:00:00Z" {
		t.Fatalf("flagged before anything ended: %v", m)
	}
	h.do("GET", "/swarmscore/signals?flagged=false", nil, bearer(h.opTok)...).problem(t, "invalid-request", http.StatusBadRequest)
	h.do("GET", "/swarmscore/signals", nil, bearer(h.tok1)...).problem(t, "forbidden", http.StatusForbidden)
}

// TestSignalMetrics: the counts of the latest scheduled computation and
// chain walk are exported; nothing before the first.
func TestSignalMetrics(t *testing.T) {
	h := newRightsHarness(t)
	if r := h.do("GET", "/metrics", nil); r.code != http.StatusOK || strings.Contains(string(r.body), "swarmscore_gaming_") {
		t.Fatalf("gaming metrics before any computation: %d\n%s", r.code, r.body)
	}
	if _, err := h.u.Signals.RefreshSignalStats(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.u.Signals.VerifyLedger(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := string(h.do("GET", "/metrics", nil).body)
	for _, want := range []string{
		`swarmscore_gaming_flagged_agents{signal="ap2_top5_buyer_share"} 2`,
		`swarmscore_gaming_flagged_agents{signal="conduit_top_buyer_share"} 0`,
		`swarmscore_gaming_flagged_agents{signal="conduit_burst"} 0`,
		"swarmscore_gaming_flagged_agents_any 2",
		"swarmscore_gaming_evaluated_agents 2",
		fmt.Sprintf("swarmscore_gaming_signals_as_of_timestamp_seconds %g", float64(now.Unix())),
		"swarmscore_chain_walk_broken_chains 0",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestOpenAPIAccess: every operation states who may call it (x-access),
// as the server enforces it; the info carries the current disclaimer.
func TestOpenAPIAccess(t *testing.T) {
	h := newHarness(t, Options{MCP: http.NotFoundHandler()})
	var doc struct {
		Info struct {
			Description string `json:"description"`
			Disclaimer  struct {
				Version string `json:"version"`
				Text    string `json:"text"`
			} `json:"x-disclaimer"`
		} `json:"info"`
		Paths map[string]map[string]struct {
			Access   string                `json:"x-access"`
			Security []map[string][]string `json:"security"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(h.do("GET", "/openapi.json", nil).body, &doc); err != nil {
		t.Fatal(err)
	}
	d := service.CurrentDisclosure()
	if doc.Info.Disclaimer.Version != d.Version || doc.Info.Disclaimer.Text != d.Disclaimer || !strings.Contains(doc.Info.Description, d.Disclaimer) {
		t.Fatalf("the OpenAPI info does not carry disclaimer %q: %+v", d.Disclaimer, doc.Info)
	}
	names := map[access]string{public: "public", crossOrigin: "public", probe: "public", operator: "operator", self: "agent-or-operator", appellant: "appellant-or-operator", scraper: "metrics-allow"}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			pattern := strings.ToUpper(method) + " " + path
			a, ok := h.s.access[pattern]
			if !ok {
				continue // TestOpenAPI reports routes documented but not registered
			}
			if op.Access != names[a] {
				t.Errorf("%s: x-access %q, the server enforces %q", pattern, op.Access, names[a])
			}
			var schemes []string
			anonymous := len(op.Security) == 0
			for _, s := range op.Security {
				anonymous = anonymous || len(s) == 0
				for k := range s {
					schemes = append(schemes, k)
				}
			}
			slices.Sort(schemes)
			switch want := map[access]string{operator: "operatorToken", self: "agentToken operatorToken", appellant: "agentToken operatorToken"}[a]; {
			case want != "" && (strings.Join(schemes, " ") != want || anonymous):
				t.Errorf("%s: security %v, want %s", pattern, op.Security, want)
			case want == "" && !anonymous:
				t.Errorf("%s: a public route requires %v", pattern, op.Security)
			}
		}
	}
}
