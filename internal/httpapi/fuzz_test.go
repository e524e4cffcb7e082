package httpapi

import (
	"bytes"
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

// FuzzVerifyWrapperFast checks that the verify body's fast reader accepts
// only bodies the decoder reads the same way: the same certificate bytes
// and agent, and no problem.
func FuzzVerifyWrapperFast(f *testing.F) {
	f.Add(`{"certificate":{"a":[1,{"b":"}\""}]},"agent_id":"agent-1"}`)
	f.Add(` { "agent_id" : "a.b:c_d-e" , "certificate" : { } } `)
	f.Add(`{"certificate":{}}`)
	f.Add(`{"certificate":{},"certificate":{}}`)
	f.Add(`{"certificate":{},"agent_id":""}`)
	f.Add(`{"certificate":{},"agent_id":"a\u0062"}`)
	f.Add(`{"certific\u0061te":{}}`)
	f.Add(`{"certificate":{},"agent_id":null}`)
	f.Add(`{"certificate":{},"x":1}`)
	f.Add(`{"certificate":[],"agent_id":"a"}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, body string) {
		doc, agent, ok := verifyWrapperFast([]byte(body))
		if !ok {
			return
		}
		gdoc, gagent, err := readVerifyGeneral([]byte(body))
		if err != nil || !bytes.Equal(doc, gdoc) || agent != gagent {
			t.Fatalf("fast: %q %q; decoder: %q %q %v", doc, agent, gdoc, gagent, err)
		}
	})
}

func TestVerifyWrapperFast(t *testing.T) {
	for body, want := range map[string]bool{
		`{"certificate":{"issuer":{"s":"\"}"}},"agent_id":"agent-1"}`: true,
		` {"agent_id":"a","certificate":{}} `:                         true,
		`{"certificate":{}}`:                                          true,
		`{"certificate":{},"certificate":{}}`:                         false,
		`{"certificate":{},"agent_id":"a b"}`:                         false,
		`{"certificate":{},"agent_id":"a\u0062"}`:                     false,
		`{"certificate":{}} x`:                                        false,
		`{"agent_id":"a"}`:                                            false,
		`{"certificate":{"a":1}`:                                      false,
	} {
		if _, _, ok := verifyWrapperFast([]byte(body)); ok != want {
			t.Errorf("%s: fast path %v, want %v", body, ok, want)
		}
	}
}
