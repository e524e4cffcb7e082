package httpapi

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/audit"
)

// TestEraseRoutes: only an operator erases or lists erasures (the agent
// itself, another agent and anonymous callers are refused before anything
// is looked up); an unknown agent is a 404; the body is decoded strictly;
// the 201 carries the pseudonym and the opening, never the old id; the old
// id then serves 404 and its passport verifies as passport_revoked.
func TestEraseRoutes(t *testing.T) {
	h := newRightsHarness(t)
	cert := h.do("GET", "/swarmscore/agent-1/certificate", nil)
	if cert.code != http.StatusOK {
		t.Fatalf("certificate: %d %s", cert.code, cert.body)
	}
	for _, c := range []struct {
		tok, slug string
		status    int
	}{
		{"", "unauthorized", http.StatusUnauthorized},
		{h.tok1, "forbidden", http.StatusForbidden},
		{h.tok2, "forbidden", http.StatusForbidden},
		{"not-a-token", "unauthorized", http.StatusUnauthorized},
	} {
		h.do("POST", "/swarmscore/agent-1/erase", nil, bearer(c.tok)...).problem(t, c.slug, c.status)
		h.do("POST", "/swarmscore/ghost/erase", nil, bearer(c.tok)...).problem(t, c.slug, c.status)
		h.do("GET", "/swarmscore/erasures", nil, bearer(c.tok)...).problem(t, c.slug, c.status)
	}
	if p := h.do("POST", "/swarmscore/ghost/erase", nil, bearer(h.opTok)...).problem(t, "not-found", http.StatusNotFound); !strings.Contains(p.Detail, `"ghost"`) {
		t.Errorf("unknown agent: %+v", p)
	}
	for body, slug := range map[string]string{
		`{"reason":"x","extra":1}`:    "invalid-request",
		`{"reason":1}`:                "wrong-type",
		`{"reason":"a","reason":"b"}`: "invalid-request",
		`{"reason":"x"} {}`:           "malformed-json",
		`[`:                           "malformed-json",
		`{"reason":"` + strings.Repeat("x", 1001) + `"}`: "invalid-request",
	} {
		h.do("POST", "/swarmscore/agent-1/erase", strings.NewReader(body), bearer(h.opTok)...).problem(t, slug, http.StatusBadRequest)
	}
	if r := h.do("GET", "/swarmscore/erasures", nil, bearer(h.opTok)...); r.code != http.StatusOK || string(r.body) != "{\"erasures\":[]}\n" {
		t.Errorf("no erasures yet: %d %s", r.code, r.body)
	}

	r := h.do("POST", "/swarmscore/agent-1/erase", strings.NewReader(`{"reason":"agent-1 asked on 2026-03-01"}`), bearer(h.opTok)...)
	if r.code != http.StatusCreated || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("erase: %d %v %s", r.code, r.header, r.body)
	}
	if strings.Contains(string(r.body), "agent-1") {
		t.Errorf("the response names the erased id: %s", r.body)
	}
	var e struct {
		ID        string `json:"erasure_id"`
		Pseudonym string `json:"pseudonym"`
		ErasedAt  string `json:"erased_at"`
		ErasedBy  string `json:"erased_by"`
		Identity  string `json:"identity"`
		Sealed    int    `json:"sealed_records"`
		Opening   struct {
			Category string `json:"category"`
			Salt     string `json:"salt"`
		} `json:"opening"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatal(err)
	}
	salt, err := hex.DecodeString(e.Opening.Salt)
	if err != nil || len(salt) != audit.SaltSize || e.Opening.Category != "agents" {
		t.Fatalf("opening %+v", e.Opening)
	}
	if audit.Commit(audit.Agents, [audit.SaltSize]byte(salt), "agent-1") != e.Identity {
		t.Error("the opening does not open the identity commitment to agent-1")
	}
	if !regexp.MustCompile(`^erased-[0-9a-f]{16}$`).MatchString(e.Pseudonym) || e.ErasedBy != "acme" || e.ErasedAt == "" ||
		e.Sealed == 0 || e.Reason != e.Pseudonym+" asked on 2026-03-01" {
		t.Errorf("erasure %s", r.body)
	}

	// The old id is gone for everyone, its token with it.
	for _, tok := range []string{"", h.opTok} {
		for _, path := range []string{"/swarmscore/agent-1", "/swarmscore/agent-1/certificate"} {
			h.do("GET", path, nil, bearer(tok)...).problem(t, "not-found", http.StatusNotFound)
		}
	}
	h.do("GET", "/swarmscore/agent-1/consent", nil, bearer(h.tok1)...).problem(t, "unauthorized", http.StatusUnauthorized)
	h.do("POST", "/swarmscore/agent-1/erase", nil, bearer(h.opTok)...).problem(t, "not-found", http.StatusNotFound)
	if p := h.do("POST", "/swarmscore/"+e.Pseudonym+"/erase", nil, bearer(h.opTok)...).problem(t, "conflict", http.StatusConflict); strings.Contains(p.Detail, "agent-1") {
		t.Errorf("erasing a pseudonym: %+v", p)
	}
	v := h.do("POST", "/swarmscore/verify", strings.NewReader(string(cert.body))).ok(t)
	errs, _ := v["errors"].([]any)
	checks, _ := v["checks"].(map[string]any)
	if v["valid"] != false || v["detected_tampering"] != false || len(errs) != 1 || errs[0].(map[string]any)["code"] != "passport_revoked" ||
		checks["ledger"] != "revoked" || strings.Contains(string(mustJSON(t, v)), e.Pseudonym) {
		t.Errorf("the old passport: %v", v)
	}
	if r := h.do("GET", "/swarmscore/agent-2", nil); r.code != http.StatusOK {
		t.Errorf("another agent: %d %s", r.code, r.body)
	}

	l := h.do("GET", "/swarmscore/erasures", nil, bearer(h.opTok)...).ok(t)
	list, _ := l["erasures"].([]any)
	if len(list) != 1 {
		t.Fatalf("erasures %v", l)
	}
	got := list[0].(map[string]any)
	if got["pseudonym"] != e.Pseudonym || got["identity"] != e.Identity || got["erasure_id"] != e.ID || got["opening"] != nil || got["reason"] != nil {
		t.Errorf("listed %v", got)
	}
	h.do("GET", "/swarmscore/erasures?x=1", nil, bearer(h.opTok)...).problem(t, "invalid-request", http.StatusBadRequest)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
