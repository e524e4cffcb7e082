package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/client"
)

// hostile is one request of the corpus and the answer it must get.
type hostile struct {
	name string
	// raw, when set, is written to a TCP connection as it is (then closed
	// for writing); otherwise method, path, header and body make an HTTP
	// request.
	raw          string
	method, path string
	header       []string // name, value, ...
	body         string
	status       int
	problem      string // the problem type's last segment; "" for a 200
	code         string // the problem's code, or every rejected event's; "" for none
	// check, if set, judges a 200's body.
	check func(body []byte) error
}

// TestHostileCorpus sends the corpus of issue 12 to the real server: each
// request gets the right status and problem (never a 5xx, never a plain
// text error), and the ledger is the same afterwards.
func TestHostileCorpus(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "swarmscore.db")
	// A slow rate limit (one request per 10 s, bursts of 5) so the flood
	// cases are refused, behind a "proxy" on loopback so each case can be
	// its own client through X-Forwarded-For.
	s := startArgs(t, dsn, []string{"--rate-limit", "0.1", "--rate-burst", "5", "--trusted-proxy", "127.0.0.1"}, serverEnv...)
	if _, err := s.client(adminToken).IngestEvents(ctx, history("agent-h")); err != nil {
		t.Fatal(err)
	}
	cert, err := s.client("").Certificate(ctx, "agent-h")
	if err != nil {
		t.Fatal(err)
	}
	before := ledgerState(t, dsn, "agent-h")

	var clientN atomic.Int32
	nextClient := func() string { return fmt.Sprintf("198.51.%d.%d", 100+clientN.Load()/250, clientN.Add(1)%250) }
	send := func(c hostile) (int, http.Header, []byte, error) {
		if c.raw != "" {
			conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
			if err != nil {
				return 0, nil, nil, err
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(conn, c.raw)
			conn.(*net.TCPConn).CloseWrite()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				return 0, nil, nil, err
			}
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, resp.Header, b, nil
		}
		req, _ := http.NewRequest(c.method, s.url+c.path, strings.NewReader(c.body))
		req.Header.Set("X-Forwarded-For", nextClient())
		if c.body != "" {
			req.Header.Set("Content-Type", "application/json") // unless the case sets its own
		}
		for i := 0; i+1 < len(c.header); i += 2 {
			req.Header.Set(c.header[i], c.header[i+1])
		}
		resp, err := plain.Do(req)
		if err != nil {
			return 0, nil, nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b, nil
	}
	bearer := []string{"Authorization", "Bearer " + adminToken}
	event := func(extra string) string {
		return `{"type":"conduit_session","id":"h-1","agent_id":"agent-h","status":"VERIFIED","started_at":"2026-01-01T00:00:00Z","completed_at":"2026-01-01T00:01:00Z"` + extra + `}`
	}
	rejectedCode := func(n int, code string) func([]byte) error {
		return func(b []byte) error {
			var r struct {
				Accepted int
				Rejected []struct{ Code string }
			}
			if err := json.Unmarshal(b, &r); err != nil || r.Accepted != 0 || len(r.Rejected) != n {
				return fmt.Errorf("want 0 accepted and %d rejected: %s", n, b)
			}
			for _, rj := range r.Rejected {
				if rj.Code != code {
					return fmt.Errorf("want code %q for each rejection: %s", code, b)
				}
			}
			return nil
		}
	}
	rejectedOnly := func(n int) func([]byte) error { return rejectedCode(n, "") }
	verdict := func(valid, tampered bool, code string) func([]byte) error {
		return func(b []byte) error {
			var v client.Verification
			if err := json.Unmarshal(b, &v); err != nil || v.Valid != valid || v.DetectedTampering != tampered {
				return fmt.Errorf("want valid %v, tampering %v: %s", valid, tampered, b)
			}
			if code != "" && !bytes.Contains(b, []byte(`"code":"`+code+`"`)) {
				return fmt.Errorf("no %s: %s", code, b)
			}
			return nil
		}
	}
	wrap := func(doc string, rest string) string { return `{"certificate":` + doc + rest + `}` }
	certStr := string(bytes.TrimSpace(cert.Raw))
	raised := strings.Replace(certStr, `"value":760`, `"value":990`, 1)
	// The passport fast path once read a trailing comma in
	// qualification_gaps as tampering; over HTTP such a body is not JSON
	// at all, so the route cannot tell a passport from a wrapper.
	comma := strings.Replace(certStr, `}],"score"`, `},],"score"`, 1)
	dupInside := strings.Replace(certStr, `{"agent_id":"agent-h",`, `{"agent_id":"agent-h","agent_id":"agent-x",`, 1)
	many := "[" + strings.TrimSuffix(strings.Repeat(event("")+",", 10001), ",") + "]"

	corpus := []hostile{
		// Below the handlers: net/http's own answers, as problems.
		{name: "garbage request line", raw: "GARBAGE\r\n\r\n", status: 400, problem: "invalid-request"},
		{name: "invalid percent-escape in the path", raw: "GET /swarmscore/%zz HTTP/1.1\r\nHost: x\r\n\r\n", status: 400, problem: "invalid-request"},
		{name: "space in the path", raw: "GET /swarmscore/a b HTTP/1.1\r\nHost: x\r\n\r\n", status: 400, problem: "invalid-request"},
		{name: "no Host", raw: "GET /healthz HTTP/1.1\r\n\r\n", status: 400, problem: "invalid-request"},
		{name: "invalid header name", raw: "GET /healthz HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n", status: 400, problem: "invalid-request"},
		{name: "headers of 80 KiB", raw: "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", 80<<10) + "\r\n\r\n", status: 431, problem: "headers-too-large"},
		{name: "unknown transfer coding", raw: "POST /swarmscore/verify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", status: 501, problem: "not-implemented"},
		{name: "HTTP/2.5", raw: "GET /healthz HTTP/2.5\r\nHost: x\r\n\r\n", status: 505, problem: "http-version-not-supported"},
		{name: "unknown Expect", raw: "GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n", status: 417, problem: "expectation-failed"},
		// Truncated uploads: the client declares more than it sends.
		{name: "truncated events", raw: "POST /swarmscore/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + adminToken + "\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n[" + event(""), status: 400, problem: "invalid-request"},
		{name: "truncated escrow", raw: "POST /swarmscore/agent-h/escrow HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + adminToken + "\r\nContent-Length: 100\r\n\r\n{\"amount_cents\":", status: 400, problem: "invalid-request"},
		{name: "truncated verify", raw: "POST /swarmscore/verify HTTP/1.1\r\nHost: x\r\nContent-Length: 9000\r\n\r\n" + certStr[:500], status: 400, problem: "invalid-request"},
		{name: "truncated chunked body", raw: "POST /swarmscore/verify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n{\"cert", status: 400, problem: "invalid-request"},
		// Repeated member names.
		{name: "escrow amount twice", method: "POST", path: "/swarmscore/agent-h/escrow", header: bearer, body: `{"amount_cents":1,"amount_cents":100000}`, status: 400, problem: "invalid-request"},
		{name: "escrow amount twice, escaped", method: "POST", path: "/swarmscore/agent-h/escrow", header: bearer, body: `{"amount_cents":1,"amount\u005fcents":100000}`, status: 400, problem: "invalid-request"},
		{name: "verify with two agent_ids", method: "POST", path: "/swarmscore/verify", body: wrap(certStr, `,"agent_id":"agent-h","agent_id":"agent-x"`), status: 400, problem: "invalid-request"},
		{name: "verify with two certificates", method: "POST", path: "/swarmscore/verify", body: `{"certificate":{},"certificate":` + certStr + `}`, status: 400, problem: "invalid-request"},
		{name: "passport naming its agent twice", method: "POST", path: "/swarmscore/verify", body: dupInside, status: 200, check: verdict(false, false, "duplicate_key")},
		{name: "event naming its agent twice", method: "POST", path: "/swarmscore/events", header: bearer, body: "[" + `{"type":"conduit_session","id":"h-2","agent_id":"agent-h","agent_id":"agent-x","status":"VERIFIED","started_at":"2026-01-01T00:00:00Z","completed_at":"2026-01-01T00:01:00Z"}` + "]", status: 200, check: rejectedOnly(1)},
		// Malformed and oversized bodies.
		{name: "events array cut short", method: "POST", path: "/swarmscore/events", header: bearer, body: "[" + event("") + ",{", status: 400, problem: "malformed-json"},
		{name: "10,001 events", method: "POST", path: "/swarmscore/events", header: bearer, body: many, status: 413, problem: "body-too-large"},
		{name: "9 MiB of events", method: "POST", path: "/swarmscore/events", header: bearer, body: strings.Repeat(" ", 9<<20) + "[]", status: 413, problem: "body-too-large"},
		{name: "event with a NUL in its id", method: "POST", path: "/swarmscore/events", header: bearer, body: strings.Replace(event(""), `"h-1"`, `"h-\u0000"`, 1) + "\n", status: 200, check: rejectedCode(1, "invalid_id")},
		{name: "event from 2031", method: "POST", path: "/swarmscore/events", header: bearer, body: strings.Replace(event(""), `2026-01-01T00:01:00Z`, `2031-01-01T00:01:00Z`, 1), status: 200, check: rejectedOnly(1)},
		{name: "event with an unknown field", method: "POST", path: "/swarmscore/events", header: bearer, body: event(`,"operator":"someone-else"`), status: 200, check: rejectedOnly(1)},
		{name: "fractional cents", method: "POST", path: "/swarmscore/agent-h/escrow", header: bearer, body: `{"amount_cents":1.5}`, status: 400, problem: "invalid-request"},
		{name: "negative cents", method: "POST", path: "/swarmscore/agent-h/escrow", header: bearer, body: `{"amount_cents":-1}`, status: 400, problem: "invalid-request"},
		{name: "cents as a string", method: "POST", path: "/swarmscore/agent-h/escrow", header: bearer, body: `{"amount_cents":"100"}`, status: 400, problem: "wrong-type"},
		{name: "escrow with an unknown field", method: "POST", path: "/swarmscore/agent-h/escrow", header: bearer, body: `{"amount_cents":1,"agent_id":"x"}`, status: 400, problem: "invalid-request"},
		// Forgeries: a verdict, not an error.
		{name: "raised score", method: "POST", path: "/swarmscore/verify", body: raised, status: 200, check: verdict(false, true, "signature_mismatch")},
		{name: "another agent's passport", method: "POST", path: "/swarmscore/verify", body: wrap(certStr, `,"agent_id":"agent-x"`), status: 200, check: verdict(false, true, "agent_mismatch")},
		{name: "trailing comma in qualification_gaps", method: "POST", path: "/swarmscore/verify", body: comma, status: 400, problem: "malformed-json"},
		{name: "trailing comma in a wrapped passport", method: "POST", path: "/swarmscore/verify", body: wrap(comma, ""), status: 400, problem: "malformed-json"},
		{name: "verify a number", method: "POST", path: "/swarmscore/verify", body: `42`, status: 400, problem: "wrong-type"},
		// Paths and queries.
		{name: "agent id with a space", method: "GET", path: "/swarmscore/a%20b", status: 400, problem: "invalid-request", code: "invalid_id"},
		// Issue 28: "." and ".." are path segments with a meaning, not ids.
		{name: "agent id ..", method: "GET", path: "/swarmscore/%2E%2E", status: 400, problem: "invalid-request", code: "invalid_id"},
		{name: "certificate of agent ..", method: "GET", path: "/swarmscore/%2e%2e/certificate", status: 400, problem: "invalid-request", code: "invalid_id"},
		{name: "escrow for agent .", method: "POST", path: "/swarmscore/%2E/escrow", header: bearer, body: `{"amount_cents":100}`, status: 400, problem: "invalid-request", code: "invalid_id"},
		{name: "erasure of agent ..", method: "POST", path: "/swarmscore/%2E%2E/erase", header: bearer, status: 400, problem: "invalid-request", code: "invalid_id"},
		{name: "records of agent ..", method: "GET", path: "/swarmscore/%2E%2E/records", header: bearer, status: 400, problem: "invalid-request", code: "invalid_id"},
		{name: "event of agent ..", method: "POST", path: "/swarmscore/events", header: bearer, body: strings.Replace(event(""), `"agent-h"`, `".."`, 1), status: 200, check: rejectedCode(1, "invalid_id")},
		{name: "event with id .", method: "POST", path: "/swarmscore/events", header: bearer, body: strings.Replace(event(""), `"h-1"`, `"."`, 1), status: 200, check: rejectedCode(1, "invalid_id")},
		{name: "correction of event ..", method: "POST", path: "/swarmscore/corrections", header: bearer, body: `{"event_type":"conduit_session","event_id":"..","action":"void","reason":"test"}`, status: 400, problem: "invalid-request", code: "invalid_id"},
		{name: "correction moving an event to agent ..", method: "POST", path: "/swarmscore/corrections", header: bearer, body: `{"event_type":"conduit_session","event_id":"h-1","action":"reattribute","agent_id":"..","reason":"test"}`, status: 400, problem: "invalid-request", code: "invalid_id"},
		// Issue 28: a batch of events is JSON or NDJSON, in UTF-8.
		{name: "events as XML", method: "POST", path: "/swarmscore/events", header: append([]string{"Content-Type", "application/xml"}, bearer...), body: "[" + event("") + "]", status: 415, problem: "unsupported-media-type"},
		{name: "events as text", method: "POST", path: "/swarmscore/events", header: append([]string{"Content-Type", "text/plain"}, bearer...), body: event(""), status: 415, problem: "unsupported-media-type"},
		{name: "events as a form", method: "POST", path: "/swarmscore/events", header: append([]string{"Content-Type", "application/x-www-form-urlencoded"}, bearer...), body: "events=" + event(""), status: 415, problem: "unsupported-media-type"},
		{name: "events in Latin-1", method: "POST", path: "/swarmscore/events", header: append([]string{"Content-Type", "application/json; charset=iso-8859-1"}, bearer...), body: "[" + event("") + "]", status: 415, problem: "unsupported-media-type"},
		{name: "events with no Content-Type", raw: "POST /swarmscore/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + adminToken + "\r\nContent-Length: 2\r\n\r\n[]", status: 415, problem: "unsupported-media-type"},
		// Issue 28: no answer for a window the ledger cannot count yet.
		{name: "records as of 9999", method: "GET", path: "/swarmscore/agent-h/records?as_of=9999-12-31T00:00:00Z", header: bearer, status: 400, problem: "invalid-request"},
		{name: "signals as of 9999", method: "GET", path: "/swarmscore/agent-h/signals?as_of=9999-12-31T00:00:00Z", header: bearer, status: 400, problem: "invalid-request"},
		{name: "flagged agents as of 9999", method: "GET", path: "/swarmscore/signals?as_of=9999-12-31T00:00:00Z", header: bearer, status: 400, problem: "invalid-request"},
		{name: "audit as of 9999", method: "GET", path: "/swarmscore/agent-h/audit?as_of=9999-12-31T00:00:00Z", header: bearer, status: 400, problem: "invalid-request"},
		{name: "agent id of 200 characters", method: "GET", path: "/swarmscore/" + strings.Repeat("a", 200) + "/certificate", status: 400, problem: "invalid-request", code: "invalid_id"},
		{name: "invalid escape in the query", method: "GET", path: "/swarmscore/agents?limit=%zz", header: bearer, status: 400, problem: "invalid-request"},
		{name: "a parameter twice", method: "GET", path: "/swarmscore/agents?limit=1&limit=2", header: bearer, status: 400, problem: "invalid-request"},
		{name: "forged cursor", method: "GET", path: "/swarmscore/agents?cursor=Zm9vOmJhcg", header: bearer, status: 400, problem: "invalid-request"},
		{name: "no such route", method: "GET", path: "/admin", status: 404, problem: "no-route"},
		{name: "wrong method", method: "DELETE", path: "/swarmscore/agent-h", status: 405, problem: "method-not-allowed"},
		// Authentication.
		{name: "no token", method: "POST", path: "/swarmscore/events", body: `[]`, status: 401, problem: "unauthorized"},
		{name: "Basic instead of Bearer", method: "POST", path: "/swarmscore/events", header: []string{"Authorization", "Basic " + adminToken}, body: `[]`, status: 401, problem: "unauthorized"},
		{name: "a token of 300 characters", method: "GET", path: "/swarmscore/agents", header: []string{"Authorization", "Bearer " + strings.Repeat("x", 300)}, status: 401, problem: "unauthorized"},
	}
	tried := 0
	for _, c := range corpus {
		status, hdr, body, err := send(c)
		tried++
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if status != c.status {
			t.Errorf("%s: %d, want %d: %.300s", c.name, status, c.status, body)
			continue
		}
		if c.problem != "" {
			var p client.Problem
			if hdr.Get("Content-Type") != "application/problem+json" || json.Unmarshal(body, &p) != nil ||
				p.Type != client.ProblemBase+c.problem || p.Status != c.status || p.Detail == "" || p.Code != c.code {
				t.Errorf("%s: want problem %s: %v %.300s", c.name, c.problem, hdr, body)
			}
		}
		if c.check != nil {
			if err := c.check(body); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		}
	}

	// Failed authentications from one client: 10, then 429 for a wrong
	// token; the right one still gets through (ERRATA E49), and another
	// client is not affected.
	guesser := []string{"X-Forwarded-For", "203.0.113.66"}
	for i := range 11 {
		want, slug := 401, "unauthorized"
		if i == 10 {
			want, slug = 429, "rate-limited"
		}
		status, hdr, body, _ := send(hostile{method: "GET", path: "/swarmscore/agents", header: append([]string{"Authorization", fmt.Sprintf("Bearer guess-%d", i)}, guesser...)})
		tried++
		if status != want || !bytes.Contains(body, []byte(slug)) || (want == 429 && hdr.Get("Retry-After") == "") {
			t.Fatalf("guess %d: %d %s", i+1, status, body)
		}
	}
	if status, _, body, _ := send(hostile{method: "GET", path: "/swarmscore/agents", header: append(bearer, guesser...)}); status != 200 {
		t.Fatalf("the good token from a throttled client: %d %s", status, body)
	}
	if status, _, _, _ := send(hostile{method: "GET", path: "/swarmscore/agents", header: bearer}); status != 200 {
		t.Fatalf("the good token from another client: %d", status)
	}
	tried += 2

	// One IPv6 /64 is one client: 16 addresses share one burst of 5.
	passed := 0
	for i := range 16 {
		status, _, _, _ := send(hostile{method: "GET", path: "/swarmscore/agent-h", header: []string{"X-Forwarded-For", fmt.Sprintf("2001:db8:66:1::%x", i+1)}})
		if status == 200 {
			passed++
		}
		tried++
	}
	if passed != 5 {
		t.Fatalf("16 addresses of one /64 got %d requests, want the one burst of 5", passed)
	}

	// A drained client stays limited while 10,001 other addresses pass.
	hungry := []string{"X-Forwarded-For", "192.0.2.77"}
	for range 6 {
		send(hostile{method: "GET", path: "/swarmscore/agent-h", header: hungry})
	}
	flood := cycle(t, s.url, 10001)
	tried += 10001
	if status, _, _, _ := send(hostile{method: "GET", path: "/swarmscore/agent-h", header: hungry}); status != 429 {
		t.Fatalf("after 10,001 other addresses the drained client is served again: %d", status)
	}
	tried++

	if after := ledgerState(t, dsn, "agent-h"); after != before {
		t.Fatalf("the corpus changed the ledger:\n%s\n%s", before, after)
	}
	s.stop()
	if logs := s.logs.String(); strings.Contains(logs, `"level":"ERROR"`) || strings.Contains(logs, `"status":5`) {
		t.Fatalf("the corpus caused a server error:\n%s", logs)
	}
	t.Logf("hostile corpus: %d requests (%d distinct cases, %d flood addresses: %s), each answered as it must be; the ledger unchanged",
		tried, len(corpus)+4, 10001, flood)
}

// cycle sends one request from each of n distinct client addresses and
// says how they fared.
func cycle(t *testing.T, base string, n int) string {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var ok, limited, other atomic.Int32
	var wg sync.WaitGroup
	next := atomic.Int32{}
	start := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				req, _ := http.NewRequest("GET", base+"/swarmscore/agent-h", nil)
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&0xff, i&0xff))
				resp, err := hc.Do(req)
				if err != nil {
					other.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case 200:
					ok.Add(1)
				case 429:
					limited.Add(1)
				default:
					other.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if other.Load() != 0 {
		t.Fatalf("%d flood requests failed otherwise than 429", other.Load())
	}
	return fmt.Sprintf("%d served, %d refused in %s", ok.Load(), limited.Load(), time.Since(start).Round(time.Millisecond))
}
