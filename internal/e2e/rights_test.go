package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/swarmscore/swarmscore/client"
)

// agentToken mints agent's own token with the CLI, against the database a
// running server uses.
func agentToken(t *testing.T, dsn, agent string) string {
	t.Helper()
	code, out, errs := run(t, nil, "", "token", "create", "--agent", agent, "--db", dsn)
	tok := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(tok, "sst_") || strings.Count(out, "\n") != 1 {
		t.Fatalf("token create --agent %s: %d %q %q", agent, code, out, errs)
	}
	return tok
}

// call sends one request with token ("" for none) and returns the status
// and body.
func (s *server) call(method, path, token, body string) (int, []byte) {
	s.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestRoutePermissions: every route the server documents is called by an
// operator, the agent itself, another agent and nobody, and answers as
// its x-access says: the denied callers get 401 (nobody) or 403 (a token
// that may not), the allowed ones never do. Then every route of one
// agent's data with the full request it takes.
func TestRoutePermissions(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "swarmscore.db")
	s := start(t, dsn, "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	op := s.client(adminToken)
	// agent-3 is the one the operator's call of the erase route erases.
	for _, a := range []string{"agent-1", "agent-2", "agent-3"} {
		if _, err := op.IngestEvents(ctx, history(a)); err != nil {
			t.Fatal(err)
		}
	}
	self, other := agentToken(t, dsn, "agent-1"), agentToken(t, dsn, "agent-2")
	callers := []struct{ name, token string }{{"operator", adminToken}, {"the agent itself", self}, {"another agent", other}, {"anonymous", ""}}

	doc, err := op.OpenAPI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var api struct {
		Paths map[string]map[string]struct {
			Access string `json:"x-access"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(doc, &api); err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[a-z_]+\}`)
	var checked []string
	for path, ops := range api.Paths {
		for method, o := range ops {
			target := param.ReplaceAllStringFunc(path, func(p string) string {
				if p == "{agent_id}" && path == "/swarmscore/{agent_id}/erase" {
					return "agent-3"
				}
				if p == "{agent_id}" {
					return "agent-1"
				}
				return "1"
			})
			want := map[string]map[string]bool{ // caller -> allowed
				"public":            {"operator": true, "the agent itself": true, "another agent": true, "anonymous": true},
				"metrics-allow":     {"operator": true, "the agent itself": true, "another agent": true, "anonymous": true},
				"operator":          {"operator": true},
				"agent-or-operator": {"operator": true, "the agent itself": true},
				// Any agent's token passes the door; which appeals it
				// reaches is checked below with real appeals.
				"appellant-or-operator": {"operator": true, "the agent itself": true, "another agent": true},
			}[o.Access]
			if want == nil {
				t.Errorf("%s %s: x-access %q is not one of public, operator, agent-or-operator, appellant-or-operator, metrics-allow", method, path, o.Access)
				continue
			}
			for _, c := range callers {
				body := ""
				if method == "post" || method == "put" {
					body = "{}"
				}
				code, b := s.call(strings.ToUpper(method), target, c.token, body)
				denied := code == http.StatusUnauthorized || code == http.StatusForbidden
				switch {
				case want[c.name] && denied:
					t.Errorf("%s %s by %s: %d %s", method, target, c.name, code, b)
				case !want[c.name] && c.token == "" && code != http.StatusUnauthorized:
					t.Errorf("%s %s by %s: %d, want 401 %s", method, target, c.name, code, b)
				case !want[c.name] && c.token != "" && code != http.StatusForbidden:
					t.Errorf("%s %s by %s: %d, want 403 %s", method, target, c.name, code, b)
				}
			}
			checked = append(checked, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(checked)
	for _, must := range []string{"GET /swarmscore/{agent_id}/certificate", "GET /swarmscore/{agent_id}", "POST /swarmscore/events",
		"POST /swarmscore/{agent_id}/escrow", "GET /swarmscore/agents", "GET /swarmscore/disclosure", "GET /swarmscore/{agent_id}/consent",
		"PUT /swarmscore/{agent_id}/consent", "PUT /swarmscore/{agent_id}/visibility", "GET /swarmscore/{agent_id}/records",
		"GET /swarmscore/{agent_id}/signals", "GET /swarmscore/signals", "POST /swarmscore/{agent_id}/erase", "GET /swarmscore/erasures", "POST /swarmscore/appeals", "GET /swarmscore/appeals",
		"GET /swarmscore/appeals/{id}", "POST /swarmscore/appeals/{id}/ack", "POST /swarmscore/appeals/{id}/uphold",
		"POST /swarmscore/appeals/{id}/reject", "POST /swarmscore/appeals/{id}/escalate"} {
		if !slices.Contains(checked, must) {
			t.Errorf("%s is not documented", must)
		}
	}

	// The full requests of the agent's routes: allowed to the agent and
	// operators, 403 to another agent, 401 to nobody.
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/swarmscore/agent-1/consent", ""},
		{"PUT", "/swarmscore/agent-1/consent", `{"disclosure_version":"1"}`},
		{"PUT", "/swarmscore/agent-1/visibility", `{"visibility":"public"}`},
		{"GET", "/swarmscore/agent-1/records", ""},
		{"GET", "/swarmscore/agent-1/signals", ""},
	} {
		for _, c := range callers {
			code, b := s.call(r.method, r.path, c.token, r.body)
			want := map[string]int{"operator": 200, "the agent itself": 200, "another agent": 403, "anonymous": 401}[c.name]
			if code != want {
				t.Errorf("%s %s by %s: %d, want %d: %s", r.method, r.path, c.name, code, want, b)
			}
		}
	}
	appealPermissions(t, s, callers)

	// Operator routes refuse an agent's token with a reason.
	if _, err := s.client(self).IngestEvents(ctx, history("agent-1")[:1]); !client.IsProblem(err, client.ProblemForbidden) {
		t.Fatalf("an agent's token ingesting: %v", err)
	}
	if _, err := s.client(self).FlaggedAgents(ctx, time.Time{}); !client.IsProblem(err, client.ProblemForbidden) {
		t.Fatalf("an agent's token listing flagged agents: %v", err)
	}
	s.stop()
	for _, secret := range []string{adminToken, self, other} {
		if strings.Contains(s.logs.String(), secret) {
			t.Fatal("the log contains a token")
		}
	}
}

// appealPermissions calls every appeal route with real appeals of agent-1
// as each caller: the agent files, reads, lists and escalates its own;
// another agent's token finds none of them (404, as for an unknown appeal
// or passport) and lists none; the decisions are the operator's (403 to
// any agent's token, before the appeal is read); nobody is 401.
func appealPermissions(t *testing.T, s *server, callers []struct{ name, token string }) {
	t.Helper()
	code, b := s.call("GET", "/swarmscore/agent-1/certificate", adminToken, "")
	var cert struct {
		ID string `json:"agent_passport_id"`
	}
	if err := json.Unmarshal(b, &cert); code != 200 || err != nil || cert.ID == "" {
		t.Fatalf("certificate: %d %v %s", code, err, b)
	}
	filing := fmt.Sprintf(`{"agent_passport_id":%q,"grounds":"incorrect_status","statement":"delivered","events":[{"event_type":"conduit_session","event_id":"agent-1-c77"}]}`, cert.ID)
	ids := map[string]string{} // caller -> the appeal it filed
	for _, c := range callers {
		code, b := s.call("POST", "/swarmscore/appeals", c.token, filing)
		want := map[string]int{"operator": 201, "the agent itself": 201, "another agent": 404, "anonymous": 401}[c.name]
		if code != want {
			t.Fatalf("POST /swarmscore/appeals by %s: %d, want %d: %s", c.name, code, want, b)
		}
		var a struct {
			ID      string `json:"id"`
			FiledBy string `json:"filed_by"`
		}
		if code == 201 {
			if err := json.Unmarshal(b, &a); err != nil {
				t.Fatal(err)
			}
			ids[c.name] = a.ID
		}
		if c.name == "another agent" && !strings.Contains(string(b), "no passport with agent_passport_id") {
			t.Errorf("another agent's filing is not refused as an unknown passport: %s", b)
		}
	}
	mine, theirs := ids["the agent itself"], ids["operator"]
	for _, c := range callers {
		code, b := s.call("GET", "/swarmscore/appeals", c.token, "")
		want := map[string]int{"operator": 2, "the agent itself": 2, "another agent": 0}[c.name]
		if c.token == "" {
			if code != 401 {
				t.Errorf("GET /swarmscore/appeals by %s: %d, want 401", c.name, code)
			}
			continue
		}
		if got := strings.Count(string(b), `"agent_passport_id"`); code != 200 || got != want {
			t.Errorf("GET /swarmscore/appeals by %s: %d with %d appeals, want 200 with %d: %s", c.name, code, got, want, b)
		}
		code, b = s.call("GET", "/swarmscore/appeals/"+mine, c.token, "")
		if want := map[string]int{"operator": 200, "the agent itself": 200, "another agent": 404}[c.name]; code != want {
			t.Errorf("GET /swarmscore/appeals/{id} by %s: %d, want %d: %s", c.name, code, want, b)
		}
	}
	if code, _ := s.call("GET", "/swarmscore/appeals/"+mine, "", ""); code != 401 {
		t.Errorf("GET /swarmscore/appeals/{id} by nobody: %d", code)
	}
	// The decisions: an agent's token is refused whichever appeal it
	// names, its own, another's or none.
	for _, act := range []string{"ack", "uphold", "reject"} {
		for _, c := range callers {
			if c.name == "operator" {
				continue
			}
			for _, id := range []string{mine, "apl-0000000000000000"} {
				code, b := s.call("POST", "/swarmscore/appeals/"+id+"/"+act, c.token, `{"reason":"x"}`)
				if want := map[bool]int{true: 401, false: 403}[c.token == ""]; code != want {
					t.Errorf("POST %s of %s by %s: %d, want %d: %s", act, id, c.name, code, want, b)
				}
			}
		}
	}
	if code, b := s.call("POST", "/swarmscore/appeals/"+mine+"/uphold", adminToken, `{"reason":"x"}`); code != 400 {
		t.Errorf("an uphold without corrections by the operator: %d %s", code, b)
	}
	for _, id := range []string{mine, theirs} {
		if code, b := s.call("POST", "/swarmscore/appeals/"+id+"/reject", adminToken, `{"reason":"the buyer disputes it"}`); code != 200 {
			t.Fatalf("reject %s: %d %s", id, code, b)
		}
	}
	// Escalation: the appellant escalates its own decided appeal, the
	// operator any; another agent's token finds nothing to escalate.
	for _, c := range callers {
		id := mine
		if c.name == "operator" {
			id = theirs
		}
		code, b := s.call("POST", "/swarmscore/appeals/"+id+"/escalate", c.token, `{"reason":"to the board"}`)
		want := map[string]int{"operator": 200, "the agent itself": 200, "another agent": 404, "anonymous": 401}[c.name]
		if code != want {
			t.Errorf("POST escalate by %s: %d, want %d: %s", c.name, code, want, b)
		}
	}
	if code, b := s.call("GET", "/swarmscore/appeals/"+mine, adminToken, ""); code != 200 || !strings.Contains(string(b), `"state":"escalated"`) ||
		!strings.Contains(string(b), `"by":"agent:tok-`) {
		t.Errorf("the escalated appeal: %d %s", code, b)
	}
}

// TestUnlisted: an agent that unlists itself is a 404 on every public
// route (score, certificate, page, badge, leaderboard, ranking), worded as
// an unknown agent's; it still gets its own passport, which verifies, and
// escrow still uses its score.
func TestUnlisted(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "swarmscore.db")
	s := start(t, dsn, "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	op, anon := s.client(adminToken), s.client("")
	for _, a := range []string{"agent-1", "agent-2"} {
		if _, err := op.IngestEvents(ctx, history(a)); err != nil {
			t.Fatal(err)
		}
	}
	self := s.client(agentToken(t, dsn, "agent-1"))
	otherTok := agentToken(t, dsn, "agent-2")
	public := map[string]int{"/swarmscore/agent-1": 200, "/swarmscore/agent-1/certificate": 200, "/agents/agent-1": 200, "/badge/agent-1.svg": 200}
	for path, want := range public {
		if code, _ := s.call("GET", path, "", ""); code != want {
			t.Fatalf("%s while public: %d", path, code)
		}
	}
	if st, err := self.SetVisibility(ctx, "agent-1", "unlisted"); err != nil || st.Visibility != "unlisted" || st.Published {
		t.Fatalf("unlisting itself: %+v %v", st, err)
	}
	for path := range public {
		code, body := s.call("GET", path, "", "")
		_, ghost := s.call("GET", strings.Replace(path, "agent-1", "ghost-1", 1), "", "")
		if code != 404 {
			t.Errorf("%s while unlisted: %d", path, code)
		}
		strip := regexp.MustCompile(`[0-9a-f]{16}|nonce="[^"]+"`)
		if a, b := strip.ReplaceAllString(strings.ReplaceAll(string(body), "agent-1", "X"), ""),
			strip.ReplaceAllString(strings.ReplaceAll(string(ghost), "ghost-1", "X"), ""); a != b {
			t.Errorf("%s: an unlisted agent's 404 differs from an unknown agent's:\n%s\n%s", path, a, b)
		}
		// Another agent's token sees what the public sees.
		if code, _ := s.call("GET", path, otherTok, ""); strings.HasPrefix(path, "/swarmscore") && code != 404 {
			t.Errorf("%s for another agent: %d", path, code)
		}
	}
	if code, body := s.call("GET", "/", "", ""); code != 200 || strings.Contains(string(body), "agent-1") || !strings.Contains(string(body), "agent-2") {
		t.Errorf("leaderboard while unlisted: %d", code)
	}
	if page, err := op.Agents(ctx, client.AgentsQuery{}); err != nil || len(page.Agents) != 1 || page.Agents[0].AgentID != "agent-2" {
		t.Errorf("ranking while unlisted: %+v %v", page, err)
	}
	cert, err := self.PrivateCertificate(ctx, "agent-1")
	if err != nil {
		t.Fatalf("the agent's own certificate: %v", err)
	}
	if v, err := anon.Verify(ctx, cert.Raw, "agent-1"); err != nil || !v.Valid {
		t.Fatalf("its own passport: %+v %v", v, err)
	}
	if sc, err := op.PrivateScore(ctx, "agent-1"); err != nil || sc.Score != 760 {
		t.Fatalf("an operator's view: %+v %v", sc, err)
	}
	if e, err := op.Escrow(ctx, "agent-1", 100000); err != nil || e.HoldCents != 39200 {
		t.Fatalf("escrow of an unlisted agent: %+v %v", e, err)
	}
	// An operator lists it again with the CLI, against the running server.
	if code, out, errs := run(t, nil, "", "agent", "visibility", "agent-1", "public", "--db", dsn); code != 0 {
		t.Fatalf("agent visibility: %d %s %s", code, out, errs)
	}
	for path, want := range public {
		if code, _ := s.call("GET", path, "", ""); code != want {
			t.Errorf("%s public again: %d", path, code)
		}
	}
}

// TestRequireConsent: with serve --require-consent nothing of an agent is
// published before it consents (its events are recorded and scored); the
// disclosure it consents to is served, and the disclaimer is in the
// OpenAPI info.
func TestRequireConsent(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "swarmscore.db")
	s := startArgs(t, dsn, []string{"--require-consent"}, "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	op, anon := s.client(adminToken), s.client("")
	if res, err := op.IngestEvents(ctx, history("agent-1")); err != nil || res.Accepted != 120 {
		t.Fatalf("events are recorded before consent: %+v %v", res, err)
	}
	self := s.client(agentToken(t, dsn, "agent-1"))
	paths := []string{"/swarmscore/agent-1", "/swarmscore/agent-1/certificate", "/agents/agent-1", "/badge/agent-1.svg"}
	for _, p := range paths {
		if code, _ := s.call("GET", p, "", ""); code != 404 {
			t.Errorf("%s before consent: %d", p, code)
		}
	}
	if _, body := s.call("GET", "/", "", ""); strings.Contains(string(body), "agent-1") {
		t.Error("the leaderboard shows an agent before its consent")
	}
	if sc, err := self.PrivateScore(ctx, "agent-1"); err != nil || sc.Score != 760 {
		t.Fatalf("scored before consent: %+v %v", sc, err)
	}
	d, err := anon.Disclosure(ctx, "")
	if err != nil || d.Version != "1" || !strings.Contains(d.Disclosure, "open-standard reputation score") || !strings.Contains(d.Disclaimer, "not liable") {
		t.Fatalf("disclosure: %+v %v", d, err)
	}
	doc, _ := anon.OpenAPI(ctx)
	if !bytes.Contains(doc, []byte(d.Disclaimer)) {
		t.Fatal("the OpenAPI document lacks the disclaimer")
	}
	st, err := self.Consent(ctx, "agent-1")
	if err != nil || st.Consented || !st.RequireConsent || st.Published {
		t.Fatalf("before consent: %+v %v", st, err)
	}
	if st, err = self.RecordConsent(ctx, "agent-1", d.Version); err != nil || !st.Consented || !st.Published || st.DisclosureVersion == nil || *st.DisclosureVersion != "1" ||
		st.ConsentedBy == nil || !strings.HasPrefix(*st.ConsentedBy, "agent:tok-") || st.ConsentedAt == nil {
		t.Fatalf("consent: %+v %v", st, err)
	}
	for _, p := range paths {
		if code, _ := s.call("GET", p, "", ""); code != 200 {
			t.Errorf("%s after consent: %d", p, code)
		}
	}
}

// buyerOf is a record's buyer, "" when none was reported.
func buyerOf(r client.Record) string {
	if r.BuyerID == nil {
		return ""
	}
	return *r.BuyerID
}

// TestRecordsAccess: the agent reads the events behind its score and its
// passports, its buyers as pseudonyms that hold across requests and
// restarts; an operator reads the buyers as reported.
func TestRecordsAccess(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "swarmscore.db")
	s := start(t, dsn, "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	op := s.client(adminToken)
	if _, err := op.IngestEvents(ctx, history("agent-1")); err != nil {
		t.Fatal(err)
	}
	tok := agentToken(t, dsn, "agent-1")
	self := s.client(tok)
	cert, err := self.Certificate(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	own, err := self.Records(ctx, "agent-1", time.Time{})
	if err != nil || !own.BuyerIDsMasked || len(own.Events) != 120 || len(own.Passports) != 1 || !bytes.Equal(own.Passports[0].Passport, cert.Raw) {
		t.Fatalf("own records: masked %v, %d events, %d passports, %v", own.BuyerIDsMasked, len(own.Events), len(own.Passports), err)
	}
	pseudonyms := map[string]int{}
	for _, e := range own.Events {
		pseudonyms[buyerOf(e)]++
	}
	if len(pseudonyms) != 2 || pseudonyms[""] != 80 {
		t.Fatalf("buyers as the agent sees them: %v", pseudonyms)
	}
	var pseudonym string
	for p := range pseudonyms {
		if p != "" {
			pseudonym = p
		}
	}
	if !regexp.MustCompile(`^buyer-[0-9a-f]{16}$`).MatchString(pseudonym) || pseudonyms[pseudonym] != 40 {
		t.Fatalf("pseudonym %q", pseudonym)
	}
	full, err := op.Records(ctx, "agent-1", time.Time{})
	if err != nil || full.BuyerIDsMasked || len(full.Events) != 120 {
		t.Fatalf("operator's records: %v", err)
	}
	buyers := map[string]int{}
	for _, e := range full.Events {
		buyers[buyerOf(e)]++
	}
	if len(buyers) != 2 || buyers["buyer-1"] != 40 {
		t.Fatalf("the operator sees buyers %v", buyers)
	}
	if past, err := op.Records(ctx, "agent-1", t0.Add(-time.Second)); err != nil || len(past.Events) != 0 || len(past.Passports) != 0 {
		t.Fatalf("records before anything ended: %+v %v", past, err)
	}
	// The pseudonym outlives the process: the key is derived from the
	// signing secret kept beside the database.
	s.stop()
	s = start(t, dsn)
	again, err := s.client(tok).Records(ctx, "agent-1", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range again.Events {
		if b := buyerOf(e); b != "" && b != pseudonym {
			t.Fatalf("after a restart the pseudonym is %q, was %q", b, pseudonym)
		}
	}
	// The CLI prints the same records, buyers as reported.
	code, out, _ := run(t, nil, "", "agent", "records", "agent-1", "--json", "--db", dsn)
	if code != 0 || !strings.Contains(out, `"buyer_id":"buyer-1"`) || strings.Count(out, `"type":"conduit_session"`) != 80 {
		t.Fatalf("agent records: %d %.300s", code, out)
	}
}

// gamingEvents are, ending before now, one history made to trip each
// signal and one made not to ("<signal>-yes", "<signal>-no"), as NDJSON
// (task offers have no builder in the client).
func gamingEvents(now time.Time) string {
	var b strings.Builder
	end := now.Add(-2 * time.Hour).Truncate(time.Second)
	f := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	sess := func(id, agent, buyer string, ended time.Time) {
		fmt.Fprintf(&b, `{"type":"conduit_session","id":%q,"agent_id":%q,"buyer_id":%q,"status":"VERIFIED","started_at":%q,"completed_at":%q}`+"\n",
			id, agent, buyer, f(ended.Add(-time.Hour)), f(ended))
	}
	pay := func(id, agent, buyer string) {
		fmt.Fprintf(&b, `{"type":"ap2_transaction","id":%q,"provider_id":%q,"buyer_id":%q,"status":"SETTLED","escrow_amount_cents":5000,"started_at":%q,"settled_at":%q}`+"\n",
			id, agent, buyer, f(end.Add(-time.Hour)), f(end))
	}
	offer := func(id, agent, status string) {
		fmt.Fprintf(&b, `{"type":"task_offer","id":%q,"agent_id":%q,"buyer_id":"b-1","status":%q,"started_at":%q,"decided_at":%q}`+"\n",
			id, agent, status, f(end.Add(-time.Hour)), f(end))
	}
	for i := range 20 {
		whale := fmt.Sprint("b-", i)
		if i < 15 {
			whale = "whale"
		}
		sess(fmt.Sprint("f1-", i), "conduit_top_buyer_share-yes", whale, end)
		sess(fmt.Sprint("f0-", i), "conduit_top_buyer_share-no", fmt.Sprint("b-", i%3), end)
		pay(fmt.Sprint("s1-", i), "ap2_top5_buyer_share-yes", fmt.Sprint("b-", i%5))
		pay(fmt.Sprint("s0-", i), "ap2_top5_buyer_share-no", fmt.Sprint("b-", i))
		pay(fmt.Sprint("d1-", i), "ap2_buyer_diversity-yes", "b-1")
		pay(fmt.Sprint("d0-", i), "ap2_buyer_diversity-no", fmt.Sprint("b-", i))
	}
	for i := range 3 {
		sess(fmt.Sprint("x1-", i), "self_dealing-yes", "self_dealing-yes", end)
		sess(fmt.Sprint("x0-", i), "self_dealing-no", "b-1", end)
	}
	// Reciprocal: two agents each the other's only buyer.
	for i := range 3 {
		sess(fmt.Sprint("r1-", i), "self_dealing-pair", "self_dealing-mate", end)
		sess(fmt.Sprint("r2-", i), "self_dealing-mate", "self_dealing-pair", end)
	}
	for i := range 10 {
		picky, fine := "DECLINED", "ACCEPTED"
		if i < 2 {
			picky, fine = "ACCEPTED", "DECLINED"
		}
		offer(fmt.Sprint("o1-", i), "acceptance_rate-yes", picky)
		offer(fmt.Sprint("o0-", i), "acceptance_rate-no", fine)
	}
	// Bursts: 21 sessions of one buyer two minutes apart, or four
	// minutes apart (15 in any hour), among 30 of other buyers.
	for i := range 30 {
		sess(fmt.Sprint("u1-o", i), "conduit_burst-yes", fmt.Sprint("b-", i), end)
		sess(fmt.Sprint("u0-o", i), "conduit_burst-no", fmt.Sprint("b-", i), end)
	}
	for i := range 21 {
		sess(fmt.Sprint("u1-", i), "conduit_burst-yes", "rusher", end.Add(-time.Duration(i)*2*time.Minute))
		sess(fmt.Sprint("u0-", i), "conduit_burst-no", "rusher", end.Add(-time.Duration(i)*4*time.Minute))
	}
	sess("l1", "report_lag-yes", "b-1", now.Add(-48*time.Hour).Truncate(time.Second))
	sess("l0", "report_lag-no", "b-1", end)
	sess("c1", "chain_break-yes", "b-1", end)
	sess("c0", "chain_break-no", "b-1", end)
	return b.String()
}

// TestGamingSignals: generated histories through the real server, each
// tripping its signal (and the no-history twin tripping none); the
// flagged list, the metrics, the CLI and deployment thresholds agree.
func TestGamingSignals(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "swarmscore.db")
	dsn := "sqlite:" + path
	s := startArgs(t, dsn, []string{"--signals-every", "1s"}, "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	op := s.client(adminToken)
	res, err := op.IngestNDJSON(ctx, strings.NewReader(gamingEvents(time.Now())))
	if err != nil || len(res.Rejected) != 0 {
		t.Fatalf("ingest: %+v %v", res, err)
	}
	// A row edited behind the ledger's back, found by the chain walk the
	// CLI runs (and records) against the running server's database.
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE conduit_sessions SET completed_at = completed_at - 1000000 WHERE id = 'c1'`); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run(t, nil, "", "ledger", "verify", "--db", dsn); code != 1 || !strings.Contains(out, "BROKEN agent chain_break-yes") {
		t.Fatalf("ledger verify: %d %s", code, out)
	}

	names := []string{"conduit_top_buyer_share", "ap2_top5_buyer_share", "ap2_buyer_diversity", "self_dealing", "acceptance_rate", "report_lag", "chain_break", "conduit_burst"}
	var want []string
	for _, n := range names {
		for _, agent := range []string{n + "-yes", n + "-no"} {
			sig, err := op.Signals(ctx, agent, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			if len(sig.Signals) != len(names)+1 || sig.Signals[len(names)].Name != "unproven_verified_share" {
				t.Fatalf("%s: signals %+v", agent, sig.Signals)
			}
			for i, sg := range sig.Signals[:len(names)] { // no proofs reported: unproven_verified_share is not judged
				if sg.Name != names[i] {
					t.Fatalf("%s: signal %d is %s", agent, i, sg.Name)
				}
				if sg.Flagged {
					got = append(got, sg.Name)
				}
			}
			exp := []string{}
			if agent == n+"-yes" {
				exp = append(exp, n)
				if n == "ap2_buyer_diversity" { // one buyer: concentrated too
					exp = []string{"ap2_top5_buyer_share", n}
				}
				want = append(want, agent)
			}
			if strings.Join(got, ",") != strings.Join(exp, ",") {
				t.Errorf("%s: flagged %v, want %v (%+v)", agent, got, exp, sig.Signals)
			}
		}
	}
	for _, pair := range []string{"self_dealing-pair", "self_dealing-mate"} {
		if sig, err := op.Signals(ctx, pair, time.Time{}); err != nil || !sig.Signals[3].Flagged || sig.Signals[3].Value != 3 {
			t.Errorf("%s (reciprocal): %+v %v", pair, sig, err)
		}
	}
	want = append(want, "self_dealing-mate", "self_dealing-pair")
	sort.Strings(want)
	flagged, err := op.FlaggedAgents(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range flagged.Agents {
		got = append(got, a.AgentID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("flagged agents %v, want %v", got, want)
	}
	// The agent itself sees its own figures.
	lag := s.client(agentToken(t, dsn, "report_lag-yes"))
	if sig, err := lag.Signals(ctx, "report_lag-yes", time.Time{}); err != nil || sig.Signals[5].Value < 48 || sig.Signals[5].Threshold != 24 {
		t.Fatalf("own signals: %+v %v", sig, err)
	}
	// No task offers reported: no rate, not flagged, and the answer says
	// why; reported offers leave no note.
	if sig, err := op.Signals(ctx, "report_lag-yes", time.Time{}); err != nil || sig.Signals[4].Flagged || sig.Signals[4].Note != "no task offers reported" {
		t.Fatalf("acceptance_rate without offers: %+v %v", sig, err)
	}
	if sig, err := op.Signals(ctx, "acceptance_rate-no", time.Time{}); err != nil || sig.Signals[4].Note != "" || sig.Signals[4].Value != 0.8 {
		t.Fatalf("acceptance_rate with offers: %+v %v", sig, err)
	}

	// /metrics: the schedule's counts (every second).
	wantMetric := fmt.Sprintf("swarmscore_gaming_flagged_agents_any %d", len(want))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		m, err := op.Metrics(ctx)
		if err == nil && strings.Contains(m, wantMetric) && strings.Contains(m, `swarmscore_gaming_flagged_agents{signal="ap2_top5_buyer_share"} 2`) &&
			strings.Contains(m, `swarmscore_gaming_flagged_agents{signal="chain_break"} 1`) &&
			strings.Contains(m, `swarmscore_gaming_flagged_agents{signal="conduit_burst"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics lack %q:\n%s", wantMetric, m)
		}
	}
	// The CLI agrees; a deployment's own thresholds change the flags.
	if code, out, _ := run(t, nil, "", "agent", "signals", "--flagged", "--json", "--db", dsn); code != 0 || strings.Count(out, `"agent_id"`) != len(want) {
		t.Fatalf("agent signals --flagged: %d %s", code, out)
	}
	s.stop()
	s = startArgs(t, dsn, []string{"--signal-report-lag", "1h", "--signal-conduit-top-buyer-share", "0.9", "--signal-conduit-burst", "10",
		"--signal-burst-interval", "30m"}, "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	op = s.client(adminToken)
	if sig, err := op.Signals(ctx, "report_lag-no", time.Time{}); err != nil || !sig.Signals[5].Flagged || sig.Signals[5].Threshold != 1 {
		t.Fatalf("report_lag with a 1 h threshold: %+v %v", sig, err)
	}
	if sig, err := op.Signals(ctx, "conduit_top_buyer_share-yes", time.Time{}); err != nil || sig.Signals[0].Flagged || sig.Signals[0].Threshold != 0.9 {
		t.Fatalf("conduit share with a 0.9 threshold: %+v %v", sig, err)
	}
	// 30 minutes hold 8 sessions four minutes apart (not above 10) and 15
	// two minutes apart.
	if sig, err := op.Signals(ctx, "conduit_burst-no", time.Time{}); err != nil || sig.Signals[7].Flagged || sig.Signals[7].Value != 8 || sig.Signals[7].Threshold != 10 {
		t.Fatalf("conduit_burst-no over 30 minutes above 10: %+v %v", sig, err)
	}
	if sig, err := op.Signals(ctx, "conduit_burst-yes", time.Time{}); err != nil || !sig.Signals[7].Flagged || sig.Signals[7].Value != 15 {
		t.Fatalf("conduit_burst-yes over 30 minutes above 10: %+v %v", sig, err)
	}
	// Signals never change a score: the flagged agents score as their
	// counts say.
	if sc, err := op.PrivateScore(ctx, "ap2_buyer_diversity-yes"); err != nil || sc.Score != 240 {
		t.Fatalf("a flagged agent's score: %+v %v", sc, err)
	}
}
