package httpapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/swarmscore/swarmscore/api"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/wire.golden from the current answers")

// wireStep is one request of the wire transcript.
type wireStep struct {
	name, method, path, token, body string
}

// randomParts are the values that differ from run to run (ids drawn at
// random, and what signs or hashes them), replaced in the transcript by a
// placeholder numbered by first appearance.
var randomParts = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}` +
	`|apl-[0-9a-f]{16}|tok-[0-9a-f]{12}|cor-[0-9a-f]{24}|erasure-[0-9a-f]{16}|erased-[0-9a-f]{16}|"salt":"[0-9a-f]{32}"|"identity":"[0-9a-f]{64}"` +
	`|"signature":"[A-Za-z0-9_-]{20,}"|"request_id":"[^"]+"`)

func normalise(b []byte, seen map[string]string) string {
	return randomParts.ReplaceAllStringFunc(string(b), func(s string) string {
		if p, ok := seen[s]; ok {
			return p
		}
		p := fmt.Sprintf("<random-%d>", len(seen)+1)
		if i := strings.Index(s, ":"); i > 0 && s[0] == '"' {
			p = s[:i+1] + `"` + p + `"`
		}
		seen[s] = p
		return p
	})
}

// TestWireTranscript runs every route that answers JSON over real use cases
// on SQLite, at a fixed clock, and compares the answers byte for byte with
// testdata/wire.golden (-update rewrites it): the API's output must not
// change by accident.
func TestWireTranscript(t *testing.T) {
	h := newRightsHarness(t)
	cert := h.do("GET", "/swarmscore/agent-1/certificate", nil)
	var p struct {
		ID string `json:"agent_passport_id"`
	}
	if err := json.Unmarshal(cert.body, &p); err != nil || p.ID == "" {
		t.Fatalf("certificate %s: %v", cert.body, err)
	}
	tampered := bytes.Replace(cert.body, []byte(`"agent-1"`), []byte(`"agent-9"`), 1)
	at := func(d time.Duration) string { return now.Add(d).UTC().Format(time.RFC3339Nano) }
	events := `[{"type":"conduit_session","id":"s-1","agent_id":"agent-1","buyer_id":"buyer-y","status":"VERIFIED","started_at":"` + at(-5*time.Hour) +
		`","completed_at":"` + at(-4*time.Hour+123456*time.Microsecond) + `"},` +
		`{"type":"conduit_session","id":"s-2","agent_id":"agent-1","status":"DONE","started_at":"` + at(-5*time.Hour) + `"},` +
		`{"type":"conduit_session","id":"s-3","agent_id":"agent-1","buyer_id":"buyer-y","status":"FAILED","started_at":"` + at(-5*time.Hour) +
		`","completed_at":"` + at(-4*time.Hour) + `"}]`
	ndjson := `{"type":"conduit_session","id":"s-1","agent_id":"agent-1","buyer_id":"buyer-y","status":"VERIFIED","started_at":"` + at(-5*time.Hour) +
		`","completed_at":"` + at(-4*time.Hour+123456*time.Microsecond) + `"}` + "\n\n" + `{"type":"nope","id":"x"}` + "\n" + `not json` + "\n"
	steps := []wireStep{
		{"score", "GET", "/swarmscore/agent-1", "", ""},
		{"verify", "POST", "/swarmscore/verify", "", `{"certificate":` + string(cert.body) + `,"agent_id":"agent-1"}`},
		{"verify another agent", "POST", "/swarmscore/verify", "", `{"certificate":` + string(cert.body) + `,"agent_id":"agent-2"}`},
		{"verify tampered", "POST", "/swarmscore/verify", "", string(tampered)},
		{"events", "POST", "/swarmscore/events", h.opTok, events},
		{"events ndjson", "POST", "/swarmscore/events", h.opTok, ndjson},
		{"escrow", "POST", "/swarmscore/agent-1/escrow", h.opTok, `{"amount_cents":100001}`},
		{"ranking", "GET", "/swarmscore/agents?limit=1", h.opTok, ""},
		{"ranking all", "GET", "/swarmscore/agents", h.opTok, ""},
		{"correct", "POST", "/swarmscore/corrections", h.opTok, `{"event_type":"conduit_session","event_id":"s-3","action":"status","status":"VERIFIED","reason":"proof found"}`},
		{"correct again", "POST", "/swarmscore/corrections", h.opTok, `{"event_type":"conduit_session","event_id":"s-3","action":"status","status":"VERIFIED","reason":"proof found"}`},
		{"verify superseded", "POST", "/swarmscore/verify", "", string(cert.body)},
		{"file appeal", "POST", "/swarmscore/appeals", h.tok1, `{"agent_passport_id":"` + p.ID + `","grounds":"incorrect_status","statement":"t-1 settled","events":[{"event_type":"ap2_transaction","event_id":"agent-1-t1"}]}`},
		{"appeals", "GET", "/swarmscore/appeals", h.opTok, ""},
		{"ack", "POST", "/swarmscore/appeals/{appeal}/ack", h.opTok, ""},
		{"uphold", "POST", "/swarmscore/appeals/{appeal}/uphold", h.opTok, `{"reason":"confirmed","corrections":[{"event_type":"ap2_transaction","event_id":"agent-1-t1","action":"status","status":"REFUNDED"}]}`},
		{"escalate", "POST", "/swarmscore/appeals/{appeal}/escalate", h.tok1, `{"reason":"not enough"}`},
		{"appeal", "GET", "/swarmscore/appeals/{appeal}", h.tok1, ""},
		{"disclosure", "GET", "/swarmscore/disclosure", "", ""},
		{"consent", "GET", "/swarmscore/agent-1/consent", h.tok1, ""},
		{"record consent", "PUT", "/swarmscore/agent-1/consent", h.tok1, `{}`},
		{"unlist", "PUT", "/swarmscore/agent-1/visibility", h.opTok, `{"visibility":"unlisted"}`},
		{"records", "GET", "/swarmscore/agent-1/records", h.tok1, ""},
		{"records operator", "GET", "/swarmscore/agent-1/records", h.opTok, ""},
		{"signals", "GET", "/swarmscore/agent-1/signals", h.tok1, ""},
		{"flagged", "GET", "/swarmscore/signals?flagged=true", h.opTok, ""},
		{"erase", "POST", "/swarmscore/agent-2/erase", h.opTok, `{"reason":"agent-2 asked"}`},
		{"erasures", "GET", "/swarmscore/erasures", h.opTok, ""},
		{"not found", "GET", "/swarmscore/ghost-1", "", ""},
		{"invalid", "POST", "/swarmscore/agent-1/escrow", h.opTok, `{"amount_cents":-1}`},
		{"healthz", "GET", "/healthz", "", ""},
		{"readyz", "GET", "/readyz", "", ""},
	}
	seen := map[string]string{}
	var out bytes.Buffer
	appealID := ""
	for _, s := range steps {
		path := strings.ReplaceAll(s.path, "{appeal}", appealID)
		var body *strings.Reader
		if s.body != "" {
			body = strings.NewReader(s.body)
		}
		hdr := bearer(s.token)
		if s.body != "" {
			hdr = append(hdr, "Content-Type", "application/json")
			if strings.HasSuffix(s.name, "ndjson") {
				hdr[len(hdr)-1] = "application/x-ndjson"
			}
		}
		var r response
		if body == nil {
			r = h.do(s.method, path, nil, hdr...)
		} else {
			r = h.do(s.method, path, body, hdr...)
		}
		if s.name == "file appeal" {
			var a struct{ ID string }
			json.Unmarshal(r.body, &a)
			appealID = a.ID
		}
		fmt.Fprintf(&out, "### %s: %s %s -> %d\n%s\n", s.name, s.method, s.path, r.code, normalise(r.body, seen))
		checkWire(t, s.name, r)
		*h.clock = h.clock.Add(time.Minute)
	}
	file := filepath.Join("testdata", "wire.golden")
	if *updateGolden {
		if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(out.String(), "\n")
	for i := range max(len(wl), len(gl)) {
		w, g := "", ""
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			t.Fatalf("%s:%d differs (-update rewrites it):\nwant %s\ngot  %s", file, i+1, w, g)
		}
	}
}

// wireTypes are the api types each answer of the transcript decodes into.
var wireTypes = map[string]func() any{
	"score":                func() any { return new(api.Score) },
	"verify":               func() any { return new(api.Verification) },
	"verify another agent": func() any { return new(api.Verification) },
	"verify tampered":      func() any { return new(api.Verification) },
	"verify superseded":    func() any { return new(api.Verification) },
	"events":               func() any { return new(api.IngestResult) },
	"events ndjson":        func() any { return new(api.IngestResult) },
	"escrow":               func() any { return new(api.Escrow) },
	"ranking":              func() any { return new(api.AgentsPage) },
	"ranking all":          func() any { return new(api.AgentsPage) },
	"correct":              func() any { return new(api.Correction) },
	"correct again":        func() any { return new(api.Correction) },
	"file appeal":          func() any { return new(api.Appeal) },
	"appeals":              func() any { return new(api.Appeals) },
	"ack":                  func() any { return new(api.Appeal) },
	"uphold":               func() any { return new(api.Appeal) },
	"escalate":             func() any { return new(api.Appeal) },
	"appeal":               func() any { return new(api.Appeal) },
	"disclosure":           func() any { return new(api.Disclosure) },
	"consent":              func() any { return new(api.ConsentStatus) },
	"record consent":       func() any { return new(api.ConsentStatus) },
	"unlist":               func() any { return new(api.ConsentStatus) },
	"records":              func() any { return new(api.Records) },
	"records operator":     func() any { return new(api.Records) },
	"signals":              func() any { return new(api.AgentSignals) },
	"flagged":              func() any { return new(api.FlaggedAgents) },
	"erase":                func() any { return new(api.Erasure) },
	"erasures":             func() any { return new(api.Erasures) },
	"not found":            func() any { return new(api.Problem) },
	"invalid":              func() any { return new(api.Problem) },
	"healthz":              func() any { return new(api.Status) },
	"readyz":               func() any { return new(api.Status) },
}

// checkWire decodes an answer into its api type, strictly, and marshals it
// back: the bytes must be the server's, so a client that decodes into the
// api types sees every member the server wrote, and nothing else.
func checkWire(t *testing.T, name string, r response) {
	t.Helper()
	mk, ok := wireTypes[name]
	if !ok {
		t.Fatalf("%s: no api type for this answer", name)
	}
	v := mk()
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %s does not decode into %T: %v", name, r.body, v, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if got := string(b) + "\n"; got != string(r.body) {
		t.Errorf("%s: %T marshals as\n%s\nthe server wrote\n%s", name, v, got, r.body)
	}
}

// jsonNames are the JSON member names of struct v's fields, in order.
func jsonNames(v any) []string {
	var out []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// TestRequestShapes: the members the handlers read are the api request
// types' (their bodies are read member by member, strictly, so each list
// is written down once in the handler and checked here).
func TestRequestShapes(t *testing.T) {
	for _, c := range []struct {
		v    any
		read []string
	}{
		{api.CorrectionRequest{}, correctionFields},
		{api.AppealFiling{}, filingFields},
		{api.EventKey{}, eventKeyFields},
		{api.AppealAction{}, appealActionFields},
		{api.VerifyRequest{}, jsonNames(verifyRequest{})},
		{api.EscrowRequest{}, jsonNames(escrowRequest{})},
		{api.ConsentRequest{}, jsonNames(consentBody{})},
		{api.VisibilityRequest{}, jsonNames(visibilityBody{})},
		{api.EraseRequest{}, jsonNames(eraseBody{})},
	} {
		if got := jsonNames(c.v); !slices.Equal(got, c.read) {
			t.Errorf("%T has members %v; the handler reads %v", c.v, got, c.read)
		}
	}
}

// TestProblemCatalogue: the problem types api lists are those this server
// sends, in the same order.
func TestProblemCatalogue(t *testing.T) {
	var sent []string
	for _, pt := range problemTypes {
		sent = append(sent, ProblemBase+pt.slug)
	}
	if !slices.Equal(sent, api.ProblemTypes) {
		t.Fatalf("the server sends %v; api lists %v", sent, api.ProblemTypes)
	}
}
