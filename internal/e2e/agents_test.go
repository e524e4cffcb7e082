package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmscore/swarmscore/internal/erc8004"
	"github.com/swarmscore/swarmscore/internal/nodetest"
)

// agentsServer starts an Ed25519 server over a new SQLite database with
// two agents' histories, agent-pub and agent-hidden (unlisted), and
// returns it with the database's DSN.
func agentsServer(t *testing.T, args ...string) (*server, string) {
	t.Helper()
	db := "sqlite:" + filepath.Join(t.TempDir(), "swarmscore.db")
	s := startArgs(t, db, append([]string{"--signing-alg", "Ed25519"}, args...), "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	ctx := context.Background()
	op := s.client(adminToken)
	for _, a := range []string{"agent-pub", "agent-hidden"} {
		if _, err := op.IngestEvents(ctx, history(a)); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errs := run(t, nil, "", "agent", "visibility", "agent-hidden", "unlisted", "--db", db); code != 0 {
		t.Fatalf("agent visibility: %d %s %s", code, out, errs)
	}
	return s, db
}

// get fetches url with an optional bearer token, wanting status.
func get(t *testing.T, url, token string, status int) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %d %s, want %d", url, resp.StatusCode, b, status)
	}
	return b
}

func post(t *testing.T, url, token, body string) []byte {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(t *testing.T, what string, a, b []byte) {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v: %s", what, err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v: %s", what, err, b)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	if !bytes.Equal(xb, yb) {
		t.Errorf("%s differ:\n%s\n%s", what, xb, yb)
	}
}

// toolCall is one tool result, from either SDK.
type toolCall struct {
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Text              string          `json:"text"`
	ProtocolError     string          `json:"protocolError"`
}

func (c toolCall) problem(t *testing.T) (typ, code string) {
	t.Helper()
	var p struct{ Type, Code string }
	if !c.IsError || json.Unmarshal([]byte(c.Text), &p) != nil {
		t.Fatalf("not a tool error with a problem: %+v", c)
	}
	return p.Type, p.Code
}

// goCalls runs calls with the Go SDK's client over transport.
func goCalls(t *testing.T, transport sdk.Transport, calls []map[string]any) ([]toolCall, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 5 {
		t.Fatalf("tools: %+v %v", tools, err)
	}
	var out []toolCall
	for _, c := range calls {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c["name"].(string), Arguments: c["arguments"]})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		tc := toolCall{IsError: r.IsError}
		if r.StructuredContent != nil {
			tc.StructuredContent, _ = json.Marshal(r.StructuredContent)
		}
		for _, c := range r.Content {
			if tx, ok := c.(*sdk.TextContent); ok {
				tc.Text += tx.Text
			}
		}
		out = append(out, tc)
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "swarmscore://formula"})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("formula: %+v %v", res, err)
	}
	return out, res.Contents[0].Text
}

// tsCalls runs calls with the TypeScript SDK's client (tools/node/mcp-client.mjs).
func tsCalls(t *testing.T, conn map[string]any, calls []map[string]any) ([]toolCall, string) {
	t.Helper()
	in := map[string]any{"calls": calls, "resources": []string{"swarmscore://formula"}}
	for k, v := range conn {
		in[k] = v
	}
	b, _ := json.Marshal(in)
	var out struct {
		Tools []struct {
			Name         string          `json:"name"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
		Calls     []toolCall `json:"calls"`
		Resources []struct {
			Text string `json:"text"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(nodetest.Run(t, "mcp-client.mjs", b), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Tools) != 5 || len(out.Resources) != 1 || len(out.Calls) != len(calls) {
		t.Fatalf("TypeScript client: %+v", out)
	}
	for _, c := range out.Calls {
		if c.ProtocolError != "" {
			t.Fatalf("TypeScript client refused a result: %s", c.ProtocolError)
		}
	}
	return out.Calls, out.Resources[0].Text
}

// TestMCP: the MCP server, over streamable HTTP at /mcp and over stdio
// (swarmscore mcp), answers what the HTTP routes answer, to the Go SDK's
// client and to the TypeScript SDK's (which also checks every structured
// result against the tool's output schema); errors are the routes'
// problems; unlisted agents and quote_escrow follow the API's rules.
func TestMCP(t *testing.T) {
	nodetest.Require(t)
	s, db := agentsServer(t)
	score := get(t, s.url+"/swarmscore/agent-pub", "", 200)
	cert := get(t, s.url+"/swarmscore/agent-pub/certificate", "", 200)
	verified := post(t, s.url+"/swarmscore/verify", "", string(cert))
	escrow := post(t, s.url+"/swarmscore/agent-pub/escrow", adminToken, `{"amount_cents":100000}`)
	hiddenScore := get(t, s.url+"/swarmscore/agent-hidden", adminToken, 200)
	calls := []map[string]any{
		{"name": "get_score", "arguments": map[string]any{"agent_id": "agent-pub"}},
		{"name": "get_certificate", "arguments": map[string]any{"agent_id": "agent-pub"}},
		{"name": "verify_passport", "arguments": map[string]any{"certificate": json.RawMessage(cert)}},
		{"name": "quote_escrow", "arguments": map[string]any{"agent_id": "agent-pub", "amount_cents": 100000}},
		{"name": "explain_score", "arguments": map[string]any{"agent_id": "agent-pub"}},
		{"name": "get_score", "arguments": map[string]any{"agent_id": "agent-hidden"}},
		{"name": "get_score", "arguments": map[string]any{"agent_id": "a b"}},
	}
	check := func(name string, got []toolCall, formula string, operator bool) {
		t.Helper()
		jsonEqual(t, name+": get_score and GET /swarmscore/{agent_id}", got[0].StructuredContent, score)
		if got[1].Text != string(cert) {
			t.Errorf("%s: get_certificate's text is not the certificate's bytes:\n%s\n%s", name, got[1].Text, cert)
		}
		var v, w map[string]any
		json.Unmarshal(got[2].StructuredContent, &v)
		json.Unmarshal(verified, &w)
		delete(v, "current") // its computed_at is the second of the call
		delete(w, "current")
		vb, _ := json.Marshal(v)
		wb, _ := json.Marshal(w)
		if !bytes.Equal(vb, wb) || v["valid"] != true {
			t.Errorf("%s: verify_passport and POST /swarmscore/verify differ:\n%s\n%s", name, vb, wb)
		}
		if operator {
			jsonEqual(t, name+": quote_escrow and POST /swarmscore/{agent_id}/escrow", got[3].StructuredContent, escrow)
			jsonEqual(t, name+": an unlisted agent, to an operator", got[5].StructuredContent, hiddenScore)
		} else {
			if typ, code := got[3].problem(t); typ != "https://swarmscore.dev/problems/unauthorized" || code != "operator_required" {
				t.Errorf("%s: quote_escrow without a token: %s %s", name, typ, code)
			}
			if typ, _ := got[5].problem(t); typ != "https://swarmscore.dev/problems/not-found" {
				t.Errorf("%s: an unlisted agent, to the public: %s", name, typ)
			}
		}
		var x struct{ Explanation, Tier string }
		if json.Unmarshal(got[4].StructuredContent, &x) != nil || !strings.Contains(x.Explanation, "agent-pub scores") {
			t.Errorf("%s: explain_score: %s", name, got[4].StructuredContent)
		}
		if typ, code := got[6].problem(t); typ != "https://swarmscore.dev/problems/invalid-request" || code != "invalid_id" {
			t.Errorf("%s: a malformed id: %s %s (HTTP says invalid-request, invalid_id)", name, typ, code)
		}
		if !strings.Contains(formula, "floor(400 x rate x volume)") || !strings.Contains(formula, "ELITE: score at least 850") {
			t.Errorf("%s: the formula resource: %s", name, formula)
		}
	}
	httpTransport := func(token string) *sdk.StreamableClientTransport {
		hc := &http.Client{}
		if token != "" {
			hc.Transport = bearer{token}
		}
		return &sdk.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}
	}
	got, formula := goCalls(t, httpTransport(""), calls)
	check("Go SDK, HTTP, public", got, formula, false)
	got, formula = goCalls(t, httpTransport(adminToken), calls)
	check("Go SDK, HTTP, operator", got, formula, true)
	got, formula = goCalls(t, &sdk.CommandTransport{Command: exec.Command(bin, "mcp", "--db", db, "--operator", "ops")}, calls)
	check("Go SDK, stdio, operator", got, formula, true)

	got, formula = tsCalls(t, map[string]any{"transport": "http", "url": s.url + "/mcp"}, calls)
	check("TypeScript SDK, HTTP, public", got, formula, false)
	got, formula = tsCalls(t, map[string]any{"transport": "http", "url": s.url + "/mcp", "token": adminToken}, calls)
	check("TypeScript SDK, HTTP, operator", got, formula, true)
	got, formula = tsCalls(t, map[string]any{"transport": "stdio", "command": bin, "args": []string{"mcp", "--db", db},
		"env": map[string]string{"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME")}}, calls)
	check("TypeScript SDK, stdio, public", got, formula, false)

	// /mcp is behind the server's authentication: a bad token is refused
	// before MCP is spoken, as on every route.
	b := post(t, s.url+"/mcp", "not-a-token-0123456789abcdefghijklmn", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if !strings.Contains(string(b), "https://swarmscore.dev/problems/unauthorized") {
		t.Errorf("/mcp with a bad token: %s", b)
	}
}

// bearer adds an Authorization header to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestERC8004: the route and the CLI give the same record, and its hash is
// the Keccak-256 of the certificate as the route serves it.
func TestERC8004(t *testing.T) {
	s, db := agentsServer(t)
	rec := get(t, s.url+"/swarmscore/agent-pub/erc8004?erc8004_agent_id=22", "", 200)
	code, out, errs := run(t, nil, "", "export", "erc8004", "agent-pub", "--db", db, "--base-url", s.url, "--erc8004-agent-id", "22")
	if code != 0 {
		t.Fatalf("export erc8004: %d %s", code, errs)
	}
	jsonEqual(t, "GET /swarmscore/{agent_id}/erc8004 and export erc8004", rec, []byte(out))
	var f struct {
		Feedback struct {
			AgentID      string `json:"agentId"`
			Value        int    `json:"value"`
			FeedbackURI  string `json:"feedbackURI"`
			FeedbackHash string `json:"feedbackHash"`
			Tag1, Tag2   string
		} `json:"feedback"`
		Calldata string `json:"calldata"`
	}
	json.Unmarshal(rec, &f)
	cert := get(t, f.Feedback.FeedbackURI, "", 200)
	sum, sel := erc8004.Keccak256(cert), erc8004.Selector()
	if f.Feedback.FeedbackHash != "0x"+hex.EncodeToString(sum[:]) || f.Feedback.Tag1 != "swarmscore" || f.Feedback.AgentID != "22" ||
		!strings.HasPrefix(f.Calldata, "0x"+hex.EncodeToString(sel[:])) {
		t.Errorf("record %s; the certificate hashes to %x", rec, sum)
	}
	if b := get(t, s.url+"/swarmscore/agent-hidden/erc8004", "", 404); !strings.Contains(string(b), "not-found") {
		t.Errorf("an unlisted agent's record, to the public: %s", b)
	}
	if b := get(t, s.url+"/swarmscore/agent-pub/erc8004?erc8004_agent_id=-1", "", 400); !strings.Contains(string(b), `"code":"invalid_erc8004_agent_id"`) {
		t.Errorf("a negative agentId: %s", b)
	}
}

// TestAgentCards: the A2A JavaScript SDK fetches and reads the service's
// agent card and a card `agent-card annotate` wrote; `agent-card verify`
// accepts the annotated card and refuses one whose agent id was changed.
func TestAgentCards(t *testing.T) {
	nodetest.Require(t)
	s, _ := agentsServer(t)
	dir := t.TempDir()
	card := filepath.Join(dir, "card.json")
	os.WriteFile(card, []byte(`{"name":"Pub agent","description":"an agent","version":"1","supportedInterfaces":[{"url":"https://pub.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{"streaming":true},"skills":[]}`), 0o600)
	code, annotated, errs := run(t, nil, "", "agent-card", "annotate", card, "--agent-id", "agent-pub", "--base-url", s.url)
	if code != 0 {
		t.Fatalf("annotate: %d %s", code, errs)
	}
	in, _ := json.Marshal(map[string]any{"baseUrl": s.url, "cards": []json.RawMessage{json.RawMessage(annotated)}})
	var out struct {
		Served struct {
			Name       string `json:"name"`
			Interfaces []struct {
				URL, ProtocolBinding string
			} `json:"interfaces"`
			Skills          []string          `json:"skills"`
			SecuritySchemes map[string]string `json:"securitySchemes"`
			Extensions      []struct {
				URI string `json:"uri"`
			} `json:"extensions"`
		} `json:"served"`
		Cards []struct {
			Name       string `json:"name"`
			Extensions []struct {
				URI    string            `json:"uri"`
				Params map[string]string `json:"params"`
			} `json:"extensions"`
		} `json:"cards"`
	}
	if err := json.Unmarshal(nodetest.Run(t, "a2a-card.mjs", in), &out); err != nil {
		t.Fatal(err)
	}
	sv := out.Served
	if sv.Name != "SwarmScore" || len(sv.Interfaces) != 1 || sv.Interfaces[0].URL != s.url+"/mcp" || sv.Interfaces[0].ProtocolBinding != "MCP" ||
		len(sv.Skills) != 1 || sv.Skills[0] != "reputation-lookup" || sv.SecuritySchemes["bearer"] != "httpAuthSecurityScheme" ||
		len(sv.Extensions) != 1 || sv.Extensions[0].URI != "https://swarmscore.dev/a2a/extensions/passport/v1" {
		t.Errorf("the served card, as the A2A SDK reads it: %+v", sv)
	}
	score := get(t, s.url+"/swarmscore/agent-pub", "", 200)
	var sc struct{ Tier string }
	json.Unmarshal(score, &sc)
	if len(out.Cards) != 1 || out.Cards[0].Name != "Pub agent" || len(out.Cards[0].Extensions) != 1 {
		t.Fatalf("the annotated card, as the A2A SDK reads it: %+v", out.Cards)
	}
	p := out.Cards[0].Extensions[0].Params
	if out.Cards[0].Extensions[0].URI != "https://swarmscore.dev/a2a/extensions/passport/v1" || p["agent_id"] != "agent-pub" ||
		p["certificate_url"] != s.url+"/swarmscore/agent-pub/certificate" || p["tier"] != sc.Tier ||
		p["keys_url"] != s.url+"/.well-known/swarmscore-keys.json" {
		t.Errorf("extension params %v", p)
	}
	annotatedFile := filepath.Join(dir, "annotated.json")
	os.WriteFile(annotatedFile, []byte(annotated), 0o600)
	if code, out, errs := run(t, nil, "", "agent-card", "verify", annotatedFile); code != 0 || !strings.Contains(out, `"valid":true`) || !strings.Contains(out, `"agent_matches":true`) {
		t.Errorf("verify: %d %s %s", code, out, errs)
	}
	// The card claims another agent's certificate as its own.
	forged := strings.Replace(annotated, `"agent_id": "agent-pub"`, `"agent_id": "agent-other"`, 1)
	if forged == annotated {
		t.Fatal("no agent_id to change in the annotated card")
	}
	if code, out, _ := run(t, nil, forged, "agent-card", "verify", "-"); code != 1 || !strings.Contains(out, `"agent_matches":false`) || !strings.Contains(out, "agent_mismatch") {
		t.Errorf("verify of a card naming another agent: %d %s", code, out)
	}
	if code, _, errs := run(t, nil, `{"name":"x"}`, "agent-card", "verify", "-"); code != 3 || !strings.Contains(errs, "no https://swarmscore.dev/a2a/extensions/passport/v1 extension") {
		t.Errorf("verify of a card without the extension: %d %s", code, errs)
	}
}

// TestCredentials: the credential route and `passport credential` give the
// same bytes; Digital Bazaar's libraries verify it with the DID document
// and the status list the server serves; after the agent's erasure, and
// after its key is revoked, the status list says revoked (and the revoked
// key's proofs no longer verify); an HMAC deployment has no credentials.
func TestCredentials(t *testing.T) {
	nodetest.Require(t)
	s, db := agentsServer(t)
	cred := get(t, s.url+"/swarmscore/agent-pub/credential", "", 200)
	code, out, errs := run(t, nil, "", "passport", "credential", "agent-pub", "--db", db, "--base-url", s.url)
	if code != 0 || out != string(cred) {
		t.Fatalf("passport credential: %d %s\n%s\nthe route: %s", code, errs, out, cred)
	}
	hidden := get(t, s.url+"/swarmscore/agent-hidden/credential", adminToken, 200)
	get(t, s.url+"/swarmscore/agent-hidden/credential", "", 404)
	did := "did:web:" + strings.ReplaceAll(strings.TrimPrefix(s.url, "http://"), ":", "%3A")
	peer := func(creds ...[]byte) []struct {
		Verified bool
		Errors   []string
		Revoked  *bool
	} {
		t.Helper()
		docs := map[string]json.RawMessage{
			did: get(t, s.url+"/.well-known/did.json", "", 200),
			s.url + "/swarmscore/credentials/status/1": get(t, s.url+"/swarmscore/credentials/status/1", "", 200),
		}
		raw := make([]json.RawMessage, len(creds))
		for i, c := range creds {
			raw[i] = c
		}
		in, _ := json.Marshal(map[string]any{"credentials": raw, "documents": docs})
		var res []struct {
			Verified bool
			Errors   []string
			Revoked  *bool
		}
		if err := json.Unmarshal(nodetest.Run(t, "vc-verify.mjs", in), &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	tampered := bytes.Replace(cred, []byte(`"agent_id":"agent-pub"`), []byte(`"agent_id":"agent-pwn"`), 1)
	r := peer(cred, hidden, tampered)
	if !r[0].Verified || r[0].Revoked == nil || *r[0].Revoked || !r[1].Verified || *r[1].Revoked {
		t.Fatalf("Digital Bazaar on the credentials: %+v", r)
	}
	if r[2].Verified {
		t.Errorf("a tampered credential verified: %+v", r[2])
	}

	// Erasure revokes the agent's passports, and so its credentials.
	if code, out, errs := run(t, nil, "", "agent", "erase", "agent-hidden", "--reason", "GDPR request", "--db", db); code != 0 {
		t.Fatalf("agent erase: %d %s %s", code, out, errs)
	}
	if r := peer(hidden, cred); !r[0].Verified || r[0].Revoked == nil || !*r[0].Revoked || *r[1].Revoked {
		t.Errorf("after the erasure: %+v", r)
	}

	// A revoked key: its credentials' entries are set, and the DID
	// document no longer lets it assert anything.
	env := []string{}
	if code, out, errs := run(t, env, "", "key", "rotate", "--signing-alg", "Ed25519", "--db", db); code != 0 {
		t.Fatalf("key rotate: %d %s %s", code, out, errs)
	}
	var old struct {
		Proof struct{ VerificationMethod string }
	}
	json.Unmarshal(cred, &old)
	kid := old.Proof.VerificationMethod[strings.Index(old.Proof.VerificationMethod, "#")+1:]
	if code, out, errs := run(t, env, "", "key", "revoke", kid, "--db", db); code != 0 {
		t.Fatalf("key revoke: %d %s %s", code, out, errs)
	}
	within(t, 5*time.Second, "the server sees the revocation", func() bool {
		return strings.Contains(string(get(t, s.url+"/.well-known/did.json", "", 200)), `"revoked"`)
	})
	if r := peer(cred); r[0].Verified {
		t.Errorf("a credential of a revoked key verified: %+v", r[0])
	}
	fresh := get(t, s.url+"/swarmscore/agent-pub/credential", "", 200)
	if bytes.Equal(fresh, cred) {
		t.Fatal("the credential was not re-issued with the new key")
	}
	if r := peer(fresh); !r[0].Verified || *r[0].Revoked {
		t.Errorf("the re-issued credential: %+v", r[0])
	}
	var list struct {
		CredentialSubject struct{ EncodedList string }
	}
	json.Unmarshal(get(t, s.url+"/swarmscore/credentials/status/1", "", 200), &list)
	var entry struct {
		CredentialStatus struct{ StatusListIndex string }
	}
	json.Unmarshal(cred, &entry)
	if !strings.HasPrefix(list.CredentialSubject.EncodedList, "u") || entry.CredentialStatus.StatusListIndex == "" {
		t.Errorf("status list %+v, entry %+v", list, entry)
	}

	// An HMAC deployment has no key to sign credentials with.
	h := start(t, "sqlite:"+filepath.Join(t.TempDir(), "h.db"), "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	if _, err := h.client(adminToken).IngestEvents(context.Background(), history("agent-h")); err != nil {
		t.Fatal(err)
	}
	if b := get(t, h.url+"/swarmscore/agent-h/credential", "", 409); !strings.Contains(string(b), `"code":"ed25519_key_required"`) {
		t.Errorf("an HMAC deployment's credential: %s", b)
	}
}

// TestReadmeAgents runs the README's "Use it from your agent" section: each
// sh block (but the first, which starts the server this test starts) with
// bash against a real server, and the MCP client configuration with the
// TypeScript SDK's stdio client. Each block must exit 0.
func TestReadmeAgents(t *testing.T) {
	nodetest.Require(t)
	for _, tool := range []string{"bash", "curl", "jq", "cmp"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required in CI: %v", tool, err)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	i := strings.Index(section, "\n## Use it from your agent\n")
	if i < 0 {
		t.Fatal("the README has no Use it from your agent section")
	}
	section = section[i+1:]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	blocks := func(lang string) []string {
		var out []string
		for _, part := range strings.Split(section, "```"+lang+"\n")[1:] {
			out = append(out, part[:strings.Index(part, "```")])
		}
		return out
	}
	sh, js := blocks("sh"), blocks("json")
	if len(sh) < 5 || len(js) != 1 || !strings.Contains(sh[0], "swarmscore serve") {
		t.Fatalf("%d sh blocks, %d json blocks", len(sh), len(js))
	}

	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "swarmscore.db")
	events, _ := filepath.Abs("../../examples/events.ndjson")
	if code, _, errs := run(t, nil, "", "ingest", events, "--db", db); code != 0 {
		t.Fatalf("ingest: %d %s", code, errs)
	}
	s := startArgs(t, db, []string{"--signing-alg", "Ed25519"})
	path := filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	for i, block := range sh[1:] {
		script := strings.ReplaceAll(block, "http://127.0.0.1:8080", s.url)
		cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + path, "HOME=" + os.Getenv("HOME")}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("block %d failed: %v\n%s\noutput:\n%s", i+2, err, block, out)
			continue
		}
		t.Logf("block %d:\n%s", i+2, out)
	}

	var conf struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(js[0]), &conf); err != nil {
		t.Fatal(err)
	}
	c := conf.MCPServers["swarmscore"]
	if c.Command != "swarmscore" {
		t.Fatalf("MCP configuration %+v", conf)
	}
	// Run in the database's directory, as the section says.
	args := append(append([]string{}, c.Args...), "--db", db)
	got, _ := tsCalls(t, map[string]any{"transport": "stdio", "command": bin, "args": args,
		"env": map[string]string{"PATH": path, "HOME": os.Getenv("HOME")}},
		[]map[string]any{{"name": "quote_escrow", "arguments": map[string]any{"agent_id": "atlas-research", "amount_cents": 100000}}})
	if got[0].IsError {
		t.Errorf("quote_escrow through the README's configuration: %+v", got[0])
	}
}
