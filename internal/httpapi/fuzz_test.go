package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequestBodies sends arbitrary bodies and queries to the routes that
// parse them. Whatever arrives, the server answers 200 with JSON or a 4xx
// problem: never a 5xx, never a panic, never a non-problem error.
func FuzzRequestBodies(f *testing.F) {
	ev := `{"type":"conduit_session","id":"s1","agent_id":"a","status":"VERIFIED","started_at":"2026-03-01T00:00:00Z","completed_at":"2026-03-01T01:00:00Z"}`
	f.Add(uint8(0), "["+ev+"]")
	f.Add(uint8(0), ev+"\n"+ev)
	f.Add(uint8(0), "[{},1,\"x\",null]")
	f.Add(uint8(1), `{"certificate":{},"agent_id":"a"}`)
	f.Add(uint8(1), `{"certificate":"x","agent_id":1}`)
	f.Add(uint8(1), `{"certificate":{}}`)
	f.Add(uint8(1), "\xef\xbb\xbf"+`{"agent_id":"a","issuer":{"signature":"00"},"score":{}}`)
	f.Add(uint8(1), `{"hello":[1,{"x":2}]}`)
	f.Add(uint8(2), `{"amount_cents":12.5e1}`)
	f.Add(uint8(3), "tier=ELITE&min_score=700&limit=5&cursor=NzYwOmE")
	f.Add(uint8(3), "cursor=%zz&limit=-1")
	h := newHarness(f, Options{})
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		var method, target string
		switch route % 4 {
		case 0:
			method, target = "POST", "/swarmscore/events"
		case 1:
			method, target = "POST", "/swarmscore/verify"
		case 2:
			method, target = "POST", "/swarmscore/agent-1/escrow"
		case 3:
			method, target, body = "GET", "/swarmscore/agents?"+strings.ReplaceAll(body, "#", ""), ""
		}
		req := httptest.NewRequest(method, "/", strings.NewReader(body))
		u, err := req.URL.Parse(target)
		if err != nil {
			return
		}
		req.URL, req.RequestURI = u, ""
		req.Header.Set("Authorization", "Bearer "+goodToken)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.s.ServeHTTP(rec, req)
		switch {
		case rec.Code == 200:
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("200 with invalid JSON: %q", rec.Body.String())
			}
		case rec.Code >= 400 && rec.Code < 500:
			var p Problem
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || !strings.HasPrefix(p.Type, ProblemBase) || p.Detail == "" {
				t.Fatalf("%d without a problem: %q", rec.Code, rec.Body.String())
			}
		default:
			t.Fatalf("status %d for %s %s %q: %s", rec.Code, method, target, body, rec.Body.String())
		}
	})
}
