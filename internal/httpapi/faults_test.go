package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// TestDuplicateMembers: a member name given twice is refused in every
// request body (encoding/json would keep the last), escaped or not; in a
// verify wrapper only the wrapper's own members are checked, the passport
// being the verifier's to judge.
func TestDuplicateMembers(t *testing.T) {
	h := newHarness(t, Options{})
	for _, body := range []string{
		`{"amount_cents":1,"amount_cents":100000}`,
		`{"amount_cents":1,"amount\u005fcents":100000}`,
		`{"amount_cents":100000, "amount_cents" : 100000}`,
	} {
		p := h.do("POST", "/swarmscore/agent-1/escrow", strings.NewReader(body), authHdr()...).problem(t, "invalid-request", 400)
		if !strings.Contains(p.Detail, "amount_cents appears more than once") {
			t.Errorf("%s: %q", body, p.Detail)
		}
	}
	for _, body := range []string{
		`{"certificate":{},"agent_id":"a","agent_id":"b"}`,
		`{"certificate":{},"certificate":{"x":1}}`,
	} {
		h.do("POST", "/swarmscore/verify", strings.NewReader(body)).problem(t, "invalid-request", 400)
	}
	if h.f.calls != 0 {
		t.Fatalf("%d requests with repeated members reached the service", h.f.calls)
	}
	// Inside the passport: the verifier's call (its answer is a 200 with
	// invalid_json), in the wrapper as in a bare passport.
	cert := `{"issuer":{"signature":"a","signature":"b"}}`
	h.do("POST", "/swarmscore/verify", strings.NewReader(`{"certificate":`+cert+`}`)).ok(t)
	if string(h.f.gotDoc) != cert {
		t.Fatalf("the service got %q", h.f.gotDoc)
	}
}

func TestDuplicateMember(t *testing.T) {
	cases := []struct {
		doc   string
		depth int
		want  string
	}{
		{`{}`, 0, ""},
		{`{"a":1,"b":2}`, 0, ""},
		{`{"a":1,"a":2}`, 0, "a"},
		{`{"a":{"b":1,"b":2}}`, 0, "a.b"},
		{`{"a":{"b":1,"b":2}}`, 1, ""},
		{`{"a":[{"b":1},{"b":2}]}`, 0, ""},
		{`{"a":[{"b":1,"c":{"d":"}","d":2}}]}`, 0, "a.c.d"},
		{`{"a\"b":1,"a\u0022b":2}`, 0, `a"b`},
		{`{"\u00e9":1,"é":2}`, 0, "é"},
		{`[{"x":1},{"x":1,"y":{"x":1,"x":2}}]`, 0, "y.x"},
		{` { "k" : "v" , "k" : "w" } `, 0, "k"},
		{`{"s":"{\"a\":1,\"a\":2}"}`, 0, ""},
		{`"str"`, 0, ""},
		{`{"a1":1,"a2":2,"a3":3,"a4":4,"a5":5,"a6":6,"a7":7,"a8":8,"a9":9,"a10":10,"a11":11,"a12":12,"a13":13,"a14":14,"a15":15,"a16":16,"a17":17,"a18":18,"a3":3}`, 0, "a3"},
	}
	for _, c := range cases {
		got, found := duplicateMember([]byte(c.doc), c.depth)
		if got != c.want || found != (c.want != "") {
			t.Errorf("duplicateMember(%s, %d) = %q, %v; want %q", c.doc, c.depth, got, found, c.want)
		}
	}
}

// FuzzDuplicateMember checks the scanner against encoding/json's token
// stream, which unescapes names the same way.
func FuzzDuplicateMember(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":1,"c":2}]}}`, `{"\u0061":1,"a":1}`, `[1,"x",{"y":null}]`, `{"a":"\\","b":"\""}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !json.Valid([]byte(doc)) {
			return
		}
		_, got := duplicateMember([]byte(doc), 0)
		if want := referenceDuplicate(t, doc); got != want {
			t.Fatalf("duplicateMember(%q) = %v, want %v", doc, got, want)
		}
	})
}

func referenceDuplicate(t *testing.T, doc string) bool {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber() // a number beyond a double is still valid JSON
	type frame struct {
		obj   bool
		names map[string]bool
		key   bool // the next string token is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			t.Fatalf("reference: %v", err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.obj && top.key {
			if top.names[s] {
				return true
			}
			top.names[s] = true
			top.key = false
			continue
		}
		if top != nil && top.obj {
			top.key = true // a value was read (or starts)
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, names: map[string]bool{}, key: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// TestTruncatedBody: a body that ends before its Content-Length is a 400
// naming what arrived, and logs nothing above DEBUG.
func TestTruncatedBody(t *testing.T) {
	h := newHarness(t, Options{})
	for _, target := range []string{"/swarmscore/events", "/swarmscore/agent-1/escrow", "/swarmscore/verify"} {
		req := httptest.NewRequest("POST", target, strings.NewReader(`{"amount_cents":`))
		req.ContentLength = 100
		req.Header.Set("Authorization", "Bearer "+goodToken)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.s.ServeHTTP(rec, req)
		p := response{rec.Code, rec.Header(), rec.Body.Bytes()}.problem(t, "invalid-request", 400)
		if !strings.Contains(p.Detail, "ended after 16 of the 100 bytes") {
			t.Errorf("%s: %q", target, p.Detail)
		}
	}
	// Over a real connection: the client sends half its body and hangs up.
	ts := httptest.NewServer(h.s)
	defer ts.Close()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /swarmscore/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 1000\r\n\r\n[{\"type\":", goodToken)
	c.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("truncated upload over TCP: %d", resp.StatusCode)
	}
	if h.f.calls != 0 || strings.Contains(h.logs.String(), `"level":"ERROR"`) || strings.Contains(h.logs.String(), `"level":"WARN"`) {
		t.Fatalf("a truncated upload reached the service (%d) or was logged loudly:\n%s", h.f.calls, h.logs)
	}
}

// TestNetHTTPErrorsAreProblems: what net/http answers by itself, before
// any handler, reaches the client as a problem through Listener.
func TestNetHTTPErrorsAreProblems(t *testing.T) {
	h := newHarness(t, Options{})
	ts := httptest.NewUnstartedServer(h.s)
	ts.Listener = Listener(ts.Listener)
	ts.Config.MaxHeaderBytes = 1 << 10
	ts.Start()
	defer ts.Close()
	cases := []struct {
		req    string
		status int
		slug   string
		detail string
	}{
		{"GARBAGE\r\n\r\n", 400, "invalid-request", "could not be parsed"},
		{"GET /swarmscore/%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid-request", "percent-escape"},
		{"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid-request", "could not be parsed"},
		{"GET /healthz HTTP/1.1\r\n\r\n", 400, "invalid-request", "missing required Host header"},
		{"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n", 400, "invalid-request", "invalid header name"},
		{"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431, "headers-too-large", "header fields"},
		{"POST /swarmscore/verify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "not-implemented", "Transfer-Encoding"},
		{"GET /healthz HTTP/2.5\r\nHost: x\r\n\r\n", 505, "http-version-not-supported", "HTTP version"},
		{"GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n", 417, "expectation-failed", "Expect"},
	}
	for _, c := range cases {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(conn, c.req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%.30q: %v", c.req, err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		var p Problem
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/problem+json" ||
			json.Unmarshal(body, &p) != nil || p.Type != ProblemBase+c.slug || p.Status != c.status || !strings.Contains(p.Detail, c.detail) {
			t.Errorf("%.40q: %d %v %s", c.req, resp.StatusCode, resp.Header, body)
		}
	}
	// Everything else passes through untouched.
	resp, err := http.Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"status":"ok"}`+"\n" {
		t.Fatalf("healthz through Listener: %d %s", resp.StatusCode, body)
	}
	for _, b := range []string{"HTTP/1.1 200 OK\r\nDate: x\r\n\r\n", "HTTP/1.1 400 Bad Request\r\nContent-Type: application/problem+json\r\n\r\n{}", "{}"} {
		if _, ok := problemResponse([]byte(b)); ok {
			t.Errorf("%q rewritten", b)
		}
	}
}

// TestRateLimitIPv6: the addresses of one IPv6 /64 share a bucket; the
// prefix is configurable.
func TestRateLimitIPv6(t *testing.T) {
	l := newIPLimiter(1, 2, 100, 0)
	for i := range 16 {
		ok, _ := l.allow(fmt.Sprintf("2001:db8:1:2::%x", i+1), now)
		if ok != (i < 2) {
			t.Fatalf("address %d of one /64: allowed=%v", i, ok)
		}
	}
	if ok, _ := l.allow("2001:db8:1:3::1", now); !ok {
		t.Fatal("another /64 shares the bucket")
	}
	if ok, _ := l.allow("198.51.100.1", now); !ok {
		t.Fatal("IPv4 client refused")
	}
	if ok, _ := l.allow("::ffff:198.51.100.1", now); !ok {
		t.Fatal("the IPv4-mapped form of a client is not that client")
	} else if ok, _ := l.allow("198.51.100.1", now); ok {
		t.Fatal("the IPv4-mapped form of a client has a bucket of its own")
	}
	l48 := newIPLimiter(1, 1, 100, 48)
	l48.allow("2001:db8:1:2::1", now)
	if ok, _ := l48.allow("2001:db8:1:ffff::1", now); ok {
		t.Fatal("/48: two networks of one /48 have two buckets")
	}
	l128 := newIPLimiter(1, 1, 100, 128)
	l128.allow("2001:db8:1:2::1", now)
	if ok, _ := l128.allow("2001:db8:1:2::2", now); !ok {
		t.Fatal("/128: two addresses share a bucket")
	}

	// Through the server, behind a proxy that names the client.
	h := newHarness(t, Options{RateLimit: 1, RateBurst: 1, TrustedProxies: loopback})
	get := func(xff string) int {
		req := httptest.NewRequest("GET", "/swarmscore/agent-1", nil)
		req.RemoteAddr = "127.0.0.1:1000"
		req.Header.Set("X-Forwarded-For", xff)
		rec := httptest.NewRecorder()
		h.s.ServeHTTP(rec, req)
		return rec.Code
	}
	if get("2001:db8::1") != 200 || get("2001:db8::2") != 429 || get("2001:db8:0:1::1") != 200 {
		t.Fatal("the server does not limit IPv6 clients per /64")
	}
}

// TestRateLimitKeepsTheHungry: cycling through more addresses than the
// table holds does not hand a drained client a fresh burst, nor grow the
// table; buckets that are full again make room.
func TestRateLimitKeepsTheHungry(t *testing.T) {
	const max = 10000
	l := newIPLimiter(50, 100, max, 0)
	for range 100 {
		l.allow("192.0.2.1", now)
	}
	if ok, _ := l.allow("192.0.2.1", now); ok {
		t.Fatal("the burst is not 100")
	}
	at := now
	for i := range max + 1 {
		at = at.Add(100 * time.Microsecond) // 10,001 addresses in one second
		l.allow(fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&0xff, i&0xff), at)
	}
	if l.size() > max {
		t.Fatalf("tracking %d clients, more than %d", l.size(), max)
	}
	// A second has passed: 50 tokens are back, not 100.
	n := 0
	for {
		ok, _ := l.allow("192.0.2.1", at)
		if !ok {
			break
		}
		n++
	}
	if n != 50 {
		t.Fatalf("the drained client got %d requests after the flood, want the 50 it earned", n)
	}
	// Once the flood's buckets are full again, newcomers take their
	// places.
	later := at.Add(3 * time.Second)
	if ok, _ := l.allow("203.0.113.1", later); !ok {
		t.Fatal("a newcomer is refused although every bucket is full")
	}
	if _, tracked := l.m[l.key("203.0.113.1")]; !tracked {
		t.Fatal("the newcomer did not take a full bucket's place")
	}
	// With no bucket full, newcomers share one bucket: they cannot reset
	// anyone, and cannot each take a burst.
	l = newIPLimiter(1, 2, 2, 0)
	l.allow("10.0.0.1", now)
	l.allow("10.0.0.2", now)
	allowed := 0
	for i := range 10 {
		if ok, _ := l.allow(fmt.Sprintf("10.1.0.%d", i), now); ok {
			allowed++
		}
	}
	if allowed != 2 || l.size() != 2 {
		t.Fatalf("untracked newcomers got %d requests (want the shared burst of 2); %d tracked", allowed, l.size())
	}
}

// TestAuthThrottle: failed operator authentications are throttled per
// client; a good token refunds what it reserved; other clients and
// operators without failures are not affected.
func TestAuthThrottle(t *testing.T) {
	clock := now
	h := newHarness(t, Options{AuthFailures: 3, AuthFailureEvery: 10 * time.Second, TrustedProxies: loopback})
	h.s.now = func() time.Time { return clock }
	from := func(client, token string) response {
		req := httptest.NewRequest("GET", "/swarmscore/agents", nil)
		req.RemoteAddr = "127.0.0.1:1000"
		req.Header.Set("X-Forwarded-For", client)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.s.ServeHTTP(rec, req)
		return response{rec.Code, rec.Header(), rec.Body.Bytes()}
	}
	// An operator without failures is never throttled, however many
	// requests it makes.
	for range 20 {
		if r := from("198.51.100.1", goodToken); r.code != 200 {
			t.Fatalf("good token: %d", r.code)
		}
	}
	for i := range 3 {
		from("203.0.113.7", fmt.Sprintf("guess-%d", i)).problem(t, "unauthorized", 401)
	}
	r := from("203.0.113.7", "guess-4")
	if p := r.problem(t, "rate-limited", 429); !strings.Contains(p.Detail, "failed authentications") || r.header.Get("Retry-After") != "10" {
		t.Fatalf("throttled: %+v Retry-After %q", p, r.header.Get("Retry-After"))
	}
	// A valid token gets through all the same: a client on the
	// operator's address cannot lock the operator out (ERRATA E49).
	if r := from("203.0.113.7", goodToken); r.code != 200 {
		t.Fatalf("the right token from a throttled client: %d", r.code)
	}
	if r := from("198.51.100.1", goodToken); r.code != 200 {
		t.Fatalf("another client: %d", r.code)
	}
	// One more failure per 10 s is answered 401.
	clock = clock.Add(10 * time.Second)
	from("203.0.113.7", "guess-5").problem(t, "unauthorized", 401)
	from("203.0.113.7", "guess-6").problem(t, "rate-limited", 429)
	// IPv6: one /64 is one client.
	for i := range 3 {
		from(fmt.Sprintf("2001:db8::%d", i+1), "guess").problem(t, "unauthorized", 401)
	}
	from("2001:db8::ff", "guess").problem(t, "rate-limited", 429)
	if !bytes.Contains(h.do("GET", "/metrics", nil).body, []byte("swarmscore_auth_throttled_total 3")) {
		t.Fatal("metrics do not count the throttled requests")
	}
}

// TestAuthThrottleAgentRoutes: the routes agents' own tokens use (an
// agent's data, the appeals, a public route sent a token) throttle failed
// lookups as the operator routes do, from the same allowance, so that no
// route lets a client guess tokens faster.
func TestAuthThrottleAgentRoutes(t *testing.T) {
	clock := now
	h := newHarness(t, Options{AuthFailures: 3, AuthFailureEvery: 10 * time.Second, TrustedProxies: loopback})
	h.s.now = func() time.Time { return clock }
	from := func(client, path, token string) response {
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr = "127.0.0.1:1000"
		req.Header.Set("X-Forwarded-For", client)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.s.ServeHTTP(rec, req)
		return response{rec.Code, rec.Header(), rec.Body.Bytes()}
	}
	for _, path := range []string{"/swarmscore/appeals", "/swarmscore/agent-1/consent", "/swarmscore/agent-1/certificate"} {
		client := "203.0.113." + strconv.Itoa(len(path))
		for i := range 3 {
			from(client, path, fmt.Sprintf("guess-%d", i)).problem(t, "unauthorized", 401)
		}
		if p := from(client, path, "guess-4").problem(t, "rate-limited", 429); !strings.Contains(p.Detail, "failed authentications") {
			t.Fatalf("%s: %+v", path, p)
		}
		// The allowance is the client's, whichever route it guesses on.
		from(client, "/swarmscore/agents", "guess-5").problem(t, "rate-limited", 429)
	}
	// A good token is never throttled.
	for range 10 {
		if r := from("198.51.100.1", "/swarmscore/appeals", goodToken); r.code == 401 || r.code == 429 {
			t.Fatalf("good token: %d %s", r.code, r.body)
		}
	}
}

// blocking is a Service whose data use cases wait for the database until
// their context ends, as a store behind a partition does; so does Ready,
// unless pings (a lock: the database answers, the statements wait). Once
// up, nothing waits.
type blocking struct {
	*fake
	entered chan struct{} // a use case began waiting (if there is room)
	pings   bool
	up      atomic.Bool
}

func (b *blocking) Score(ctx context.Context, agentID string) (ledger.ScoreEntry, error) {
	if b.up.Load() {
		return b.fake.Score(ctx, agentID)
	}
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ledger.ScoreEntry{}, fmt.Errorf("postgres: cached score: %w", ctx.Err())
}

func (b *blocking) ScoreFor(ctx context.Context, _ service.Caller, agentID string) (ledger.ScoreEntry, error) {
	return b.Score(ctx, agentID)
}

func (b *blocking) Ready(ctx context.Context) error {
	if b.up.Load() || b.pings {
		return nil
	}
	<-ctx.Done()
	return fmt.Errorf("postgres: database unreachable: %w", ctx.Err())
}

// TestBoundedWaits: a request waits on the database at most DBTimeout and
// then gets 503 with Retry-After; past DBMaxRequests waiting (the slots
// exhausted), 503 at once; /readyz answers within its bound; nothing is
// left running. Every 503 is counted by reason, in the metric and in the
// outage's last log line.
func TestBoundedWaits(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	h := newHarness(t, Options{})
	b := &blocking{fake: h.f, entered: make(chan struct{}, 10)}
	logs := &syncLog{}
	s := New(every(b), Options{Logger: slog.New(slog.NewJSONHandler(logs, nil)), DBTimeout: 300 * time.Millisecond, DBMaxRequests: 2, Now: h.s.now, MetricsAllow: h.s.scrapers})
	defer s.Close()
	serve := func(target string) (response, time.Duration) {
		start := time.Now()
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		return response{rec.Code, rec.Header(), rec.Body.Bytes()}, time.Since(start)
	}
	var wg sync.WaitGroup
	slow := make([]response, 2)
	took := make([]time.Duration, 2)
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); slow[i], took[i] = serve("/swarmscore/agent-1") }()
	}
	<-b.entered
	<-b.entered
	// Both slots taken: refused at once.
	r, d := serve("/swarmscore/agent-1")
	if p := r.problem(t, "unavailable", 503); !strings.Contains(p.Detail, "2 requests are already waiting") || d > 100*time.Millisecond ||
		r.header.Get("Retry-After") != "2" {
		t.Fatalf("over the bound: %+v in %s, Retry-After %q", p, d, r.header.Get("Retry-After"))
	}
	// Health and metrics need no slot.
	if r, _ := serve("/healthz"); r.code != 200 {
		t.Fatalf("healthz: %d", r.code)
	}
	wg.Wait()
	for i := range 2 {
		if slow[i].problem(t, "unavailable", 503); slow[i].header.Get("Retry-After") != "2" || took[i] < 300*time.Millisecond || took[i] > 2*time.Second {
			t.Fatalf("a request waiting on the database: %d after %s", slow[i].code, took[i])
		}
	}
	// /readyz: min(2 s, DBTimeout).
	if r, d := serve("/readyz"); r.code != 503 || d > time.Second || r.header.Get("Retry-After") == "" {
		t.Fatalf("readyz: %d after %s", r.code, d)
	}
	m, _ := serve("/metrics")
	for _, want := range []string{"swarmscore_db_requests_refused_total 1", "swarmscore_db_requests_in_flight 0"} {
		if !bytes.Contains(m.body, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// The database back: the outage's line counts the four 503s, as the
	// metric does: three timeouts (two requests, /readyz) and a refusal
	// for want of a slot.
	b.up.Store(true)
	want := map[string]int{"timeout": 3, "refused": 0, "slots": 1}
	// The outage began when the first requests began to wait, not at
	// their 503s; it lasted at least until /readyz's.
	if end := checkOutage(t, s, logs, 4, want); end.OutageMS < 600 {
		t.Errorf("the outage lasted %d ms, less than its 503s took", end.OutageMS)
	}
	if r, _ := serve("/swarmscore/agent-1"); r.code != 200 {
		t.Fatalf("after the outage: %d", r.code)
	}
	s.Close()
	h.s.Close()
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > goroutines+2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before", runtime.NumGoroutine(), goroutines)
		}
	}
}

// TestSlotsHeldByALock: the database answers its probe, but every
// statement waits (a lock held elsewhere): requests time out in their
// slots and the others are refused at once, for as long as it lasts. That
// is an outage too, confirmed once the 503s outlast a probe interval, and
// its last line counts every 503 the clients got.
func TestSlotsHeldByALock(t *testing.T) {
	t.Parallel()
	b := &blocking{fake: newHarness(t, Options{}).f, pings: true}
	logs := &syncLog{}
	s := New(every(b), Options{Logger: slog.New(slog.NewJSONHandler(logs, nil)), DBTimeout: 200 * time.Millisecond, DBMaxRequests: 2,
		MetricsAllow: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}})
	defer s.Close()
	var got [3]atomic.Int64 // 503 timeouts, 503 refusals, others
	var wg sync.WaitGroup
	stop := time.Now().Add(1500 * time.Millisecond)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, httptest.NewRequest("GET", "/swarmscore/agent-1", nil))
				switch {
				case rec.Code != 503:
					got[2].Add(1)
				case strings.Contains(rec.Body.String(), "already waiting"):
					got[1].Add(1)
				default:
					got[0].Add(1)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if got[2].Load() != 0 || got[0].Load() == 0 || got[1].Load() == 0 {
		t.Fatalf("answers: %d timeouts, %d refused at once, %d others", got[0].Load(), got[1].Load(), got[2].Load())
	}
	waitLog(t, logs, `it answers a probe, but requests go on getting 503`)
	b.up.Store(true)
	timeouts, slots := int(got[0].Load()), int(got[1].Load())
	checkOutage(t, s, logs, timeouts+slots, map[string]int{"timeout": timeouts, "refused": 0, "slots": slots})
	t.Logf("a lock for 1.5 s: %d timeouts, %d refused for want of a slot; metric and log agree", timeouts, slots)
}

// TestUnavailableBlip: a single 503 while the database answers its probe
// is counted, and no outage is logged.
func TestUnavailableBlip(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	f := &flaky{fake: h.f}
	s := New(every(pinging{f}), Options{Logger: h.s.log, MetricsAllow: h.s.scrapers, DBTimeout: 100 * time.Millisecond})
	defer s.Close()
	h.s = s
	down := fmt.Errorf("sqlite: step: %w: database is locked", errkind.ErrUnavailable)
	f.down.Store(&down)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/swarmscore/agent-1", nil))
	f.down.Store(nil)
	if rec.Code != 503 {
		t.Fatalf("%d", rec.Code)
	}
	for deadline := time.Now().Add(5 * time.Second); s.health.episode(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the episode did not end")
		}
	}
	if got := unavailableResponses(t, s); got["refused"] != 1 || got["timeout"] != 0 || got["slots"] != 0 {
		t.Fatalf("metric %v", got)
	}
	if out := h.logs.String(); strings.Contains(out, "database unavailable") || strings.Contains(out, "available again") {
		t.Fatalf("a blip logged as an outage:\n%s", out)
	}
}

// pinging is flaky whose database always answers its probe.
type pinging struct{ *flaky }

func (pinging) Ready(context.Context) error { return nil }

// unavailableResponses reads swarmscore_db_unavailable_responses_total by
// reason from s's /metrics.
func unavailableResponses(t *testing.T, s http.Handler) map[string]int {
	t.Helper()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	got := map[string]int{}
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		var reason string
		var n int
		if _, err := fmt.Sscanf(l, "swarmscore_db_unavailable_responses_total{reason=%q} %d", &reason, &n); err == nil {
			got[reason] = n
		}
	}
	if len(got) != 3 {
		t.Fatalf("swarmscore_db_unavailable_responses_total: %v in\n%s", got, grep(rec.Body.Bytes(), "unavailable"))
	}
	return got
}

// outageEnd is the outage's last line.
type outageEnd struct {
	Msg      string         `json:"msg"`
	OutageMS int64          `json:"outage_ms"`
	Total    int            `json:"unavailable_responses"`
	ByReason map[string]int `json:"unavailable_by_reason"`
}

// checkOutage waits for the line that ends an outage and checks that it
// and the metric count total 503s, by reason as want. It returns the line.
func checkOutage(t *testing.T, s http.Handler, logs *syncLog, total int, want map[string]int) outageEnd {
	t.Helper()
	waitLog(t, logs, `"msg":"database available again"`)
	var end outageEnd
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"msg":"database available again"`) {
			if err := json.Unmarshal([]byte(l), &end); err != nil {
				t.Fatal(err)
			}
		}
	}
	if end.Total != total || !maps.Equal(end.ByReason, want) || end.OutageMS <= 0 {
		t.Errorf("the outage's last line: %+v; the clients got %d 503s, %v", end, total, want)
	}
	if got := unavailableResponses(t, s); !maps.Equal(got, want) {
		t.Errorf("swarmscore_db_unavailable_responses_total %v; the clients got %v", got, want)
	}
	return end
}

// TestReadyzWithinTwoSeconds: a database that never answers gets /readyz
// a 503 in 2 s, whatever DBTimeout is.
func TestReadyzWithinTwoSeconds(t *testing.T) {
	t.Parallel()
	b := &blocking{fake: &fake{}, entered: make(chan struct{}, 1)}
	s := New(every(b), Options{DBTimeout: time.Minute})
	defer s.Close()
	start := time.Now()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if d := time.Since(start); rec.Code != 503 || d < 2*time.Second || d > 3*time.Second {
		t.Fatalf("readyz: %d after %s", rec.Code, d)
	}
}

// flaky is a Service whose database is down while down is set.
type flaky struct {
	*fake
	down          atomic.Pointer[error]
	appealScrapes atomic.Int64
}

func (f *flaky) AppealStats(ctx context.Context) (service.AppealStats, error) {
	f.appealScrapes.Add(1)
	if err := f.err(); err != nil {
		return service.AppealStats{}, err
	}
	return f.fake.AppealStats(ctx)
}

func (f *flaky) err() error {
	if e := f.down.Load(); e != nil {
		return *e
	}
	return nil
}

func (f *flaky) Score(ctx context.Context, agentID string) (ledger.ScoreEntry, error) {
	if err := f.err(); err != nil {
		return ledger.ScoreEntry{}, err
	}
	return f.fake.Score(ctx, agentID)
}

func (f *flaky) Certificate(ctx context.Context, agentID string) (service.Certificate, error) {
	if err := f.err(); err != nil {
		return service.Certificate{}, err
	}
	return f.fake.Certificate(ctx, agentID)
}

func (f *flaky) Ready(context.Context) error { return f.err() }

// The rights routes call these; the fake's own would skip the outage.
func (f *flaky) ScoreFor(ctx context.Context, _ service.Caller, agentID string) (ledger.ScoreEntry, error) {
	return f.Score(ctx, agentID)
}

func (f *flaky) CertificateFor(ctx context.Context, _ service.Caller, agentID string) (service.Certificate, error) {
	return f.Certificate(ctx, agentID)
}

// syncLog is a log destination tests read while the server writes.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestOutageLoggedOnce: an outage is logged once when a probe confirms it
// and once when it ends, with the 503s it cost (connections refused); the
// requests refused between are DEBUG lines.
func TestOutageLoggedOnce(t *testing.T) {
	h := newHarness(t, Options{})
	f := &flaky{fake: h.f}
	logs := &syncLog{}
	s := New(every(f), Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Now: h.s.now, MetricsAllow: h.s.scrapers,
		DBTimeout: 300 * time.Millisecond}) // an outage ends 2.3 s after its last 503
	defer s.Close()
	h.s = s
	down := fmt.Errorf("postgres: connect: %w: connection refused", errkind.ErrUnavailable)
	f.down.Store(&down)
	for range 20 {
		h.do("GET", "/swarmscore/agent-1", nil).problem(t, "unavailable", 503)
	}
	waitLog(t, logs, `"msg":"database unavailable: answering 503 until it recovers"`)
	for range 20 {
		h.do("GET", "/swarmscore/agent-1/certificate", nil).problem(t, "unavailable", 503)
	}
	// A scrape during the outage does not wait on the database for the
	// appeal figures: it leaves them out.
	if m := h.do("GET", "/metrics", nil); m.code != 200 || bytes.Contains(m.body, []byte("swarmscore_appeals{")) || f.appealScrapes.Load() != 0 {
		t.Errorf("a scrape during the outage: %d, %d appeal reads", m.code, f.appealScrapes.Load())
	}
	f.down.Store(nil)
	waitLog(t, logs, `"msg":"database available again"`)
	if m := h.do("GET", "/metrics", nil); m.code != 200 || f.appealScrapes.Load() != 1 {
		t.Errorf("a scrape after the outage: %d, %d appeal reads", m.code, f.appealScrapes.Load())
	}
	h.do("GET", "/swarmscore/agent-1", nil).ok(t)
	out := logs.String()
	if n := strings.Count(out, `"level":"ERROR"`); n != 1 {
		t.Errorf("%d ERROR lines, want the outage's one:\n%s", n, out)
	}
	if n := strings.Count(out, `"level":"WARN"`); n != 2 {
		t.Errorf("%d WARN lines, want the first refused request's and the recovery's:\n%s", n, out)
	}
	checkOutage(t, s, logs, 40, map[string]int{"timeout": 0, "refused": 40, "slots": 0})
}

// TestStoppingDuringAnOutage: a server closed during an outage logs the
// 503s it has cost so far, which no other line counts.
func TestStoppingDuringAnOutage(t *testing.T) {
	t.Parallel()
	f := &flaky{fake: newHarness(t, Options{}).f}
	logs := &syncLog{}
	s := New(every(f), Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	down := fmt.Errorf("postgres: connect: %w: connection refused", errkind.ErrUnavailable)
	f.down.Store(&down)
	for range 3 {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", "/swarmscore/agent-1", nil))
	}
	waitLog(t, logs, `"msg":"database unavailable: answering 503 until it recovers"`)
	s.Close()
	if out := logs.String(); !strings.Contains(out, `"msg":"stopping during a database outage"`) ||
		!strings.Contains(out, `"unavailable_responses":3,"unavailable_by_reason":{"timeout":0,"refused":3,"slots":0}`) {
		t.Fatalf("closed during an outage:\n%s", out)
	}
}

func waitLog(t *testing.T, logs *syncLog, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in 10 s:\n%s", want, logs)
		}
	}
}

// TestVerifyCurrentAndChanges: the verify response carries the agent's
// current score and the events a ledger_changed_since_issue warning is
// about, and leaves both out when there are none.
func TestVerifyCurrentAndChanges(t *testing.T) {
	h := newHarness(t, Options{})
	h.f.verifyRes = service.Verification{Valid: true, SignatureValid: true, ScoreValid: true,
		Warnings:          []service.VerifyError{{Code: service.CodeLedgerChangedSinceIssue, Message: "m"}, {Code: service.CodeSuperseded, Message: "n"}},
		Current:           &service.CurrentScore{Score: 520, Tier: 0, ComputedAt: now},
		ChangedSinceIssue: []ledger.EventKey{{Type: ledger.ConduitSession, ID: "s-9"}, {Type: ledger.AP2Transaction, ID: "t-1"}}}
	r := h.do("POST", "/swarmscore/verify", strings.NewReader(`{"certificate":{}}`))
	r.ok(t)
	if !bytes.Contains(r.body, []byte(`"current":{"score":520,"tier":"NONE","computed_at":"2026-03-17T14:30:00Z"},"changed_since_issue":[{"type":"conduit_session","id":"s-9"},{"type":"ap2_transaction","id":"t-1"}]}`)) {
		t.Fatalf("body %s", r.body)
	}
	h.f.verifyRes = service.Verification{Valid: true}
	if r := h.do("POST", "/swarmscore/verify", strings.NewReader(`{"certificate":{}}`)); bytes.Contains(r.body, []byte("current")) || bytes.Contains(r.body, []byte("changed_since_issue")) {
		t.Fatalf("body %s", r.body)
	}
}

// TestClientGone: a request whose client hangs up while it waits on the
// database is recorded as 499 and logged at DEBUG, not as an internal
// error.
func TestClientGone(t *testing.T) {
	h := newHarness(t, Options{})
	b := &blocking{fake: h.f, entered: make(chan struct{}, 1)}
	logs := &syncLog{}
	s := New(every(b), Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), MetricsAllow: h.s.scrapers})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest("GET", "/swarmscore/agent-1", nil).WithContext(ctx)
	rec := httptest.NewRecorder()
	go func() { <-b.entered; cancel() }()
	s.ServeHTTP(rec, req)
	if rec.Code != statusClientClosed || strings.Contains(logs.String(), `"level":"ERROR"`) || strings.Contains(logs.String(), `"level":"WARN"`) ||
		!strings.Contains(logs.String(), `"msg":"client went away"`) {
		t.Fatalf("%d\n%s", rec.Code, logs)
	}
	m := httptest.NewRecorder()
	s.ServeHTTP(m, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(m.Body.String(), `swarmscore_http_requests_total{code="499",route="GET /swarmscore/{agent_id}"} 1`) {
		t.Fatalf("metrics:\n%s", grep(m.Body.Bytes(), "499"))
	}
}
