package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"github.com/swarmscore/swarmscore/score"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // lockSQLite's second writer

	"github.com/swarmscore/swarmscore/client"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
)

// The fault tests of issue 12, against the real binary: kill -9 during
// ingest, a database that refuses connections, a network partition, two
// replicas ingesting the same events at once. Their figures are in
// docs/RELIABILITY.md; -v prints them.

var serverEnv = []string{"SWARMSCORE_ADMIN_TOKEN=" + adminToken, "SWARMSCORE_SIGNING_KEY=" + signingKey}

// call is one request to a route that uses the database.
type call struct {
	name, method, path, body string
	operator                 bool
	page                     bool // HTML, not the API
}

// dbRoutes are every route that reaches the database: the public ones for
// agent (fresh: never asked for, so nothing about it is in memory), a
// verification of cert, the operator ones, which look up their token, and
// two pages.
func dbRoutes(agent string, cert []byte) []call {
	return []call{
		{name: "certificate", method: "GET", path: "/swarmscore/" + agent + "/certificate"},
		{name: "score", method: "GET", path: "/swarmscore/" + agent},
		{name: "verify", method: "POST", path: "/swarmscore/verify", body: string(cert)},
		{name: "events", method: "POST", path: "/swarmscore/events", body: `[]`, operator: true},
		{name: "escrow", method: "POST", path: "/swarmscore/" + agent + "/escrow", body: `{"amount_cents":100}`, operator: true},
		{name: "agents", method: "GET", path: "/swarmscore/agents", operator: true},
		{name: "readyz", method: "GET", path: "/readyz"},
		{name: "leaderboard page", method: "GET", path: "/", page: true},
		{name: "agent page", method: "GET", path: "/agents/" + agent, page: true},
	}
}

// supersededCertificate returns a certificate of agent that a later one,
// which the server then serves, replaced: verifying it needs the database
// (its revocation and the ledger's counts at its time), whereas the
// server may answer for the certificate it serves from memory, as the
// certificate route does.
func supersededCertificate(t *testing.T, s *server, agent string) *client.Certificate {
	t.Helper()
	ctx := context.Background()
	old, err := s.client("").Certificate(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	late := client.ConduitSession(agent+"-late", agent, "VERIFIED", t0.Add(time.Hour), t0.Add(time.Hour+time.Minute))
	if _, err := s.client(adminToken).IngestEvents(ctx, []client.Event{late}); err != nil {
		t.Fatal(err)
	}
	cur, err := s.client("").Certificate(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(cur.Raw, old.Raw) {
		t.Fatalf("the certificate of %s was not replaced", agent)
	}
	return old
}

type answer struct {
	status      int
	retryAfter  string
	problem     string
	contentType string
	page        bool
	took        time.Duration
	err         error
}

var plain = &http.Client{Timeout: 30 * time.Second}

func (s *server) send(c call) answer {
	req, err := http.NewRequest(c.method, s.url+c.path, strings.NewReader(c.body))
	if err != nil {
		return answer{err: err}
	}
	if c.operator {
		req.Header.Set("Authorization", "Bearer "+adminToken)
	}
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := plain.Do(req)
	if err != nil {
		return answer{err: err, took: time.Since(start)}
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	a := answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), took: time.Since(start),
		contentType: resp.Header.Get("Content-Type"), page: c.page}
	var p client.Problem
	if json.Unmarshal(body, &p) == nil {
		a.problem = p.Type
	}
	return a
}

// unavailable checks that a is a 503 with Retry-After within bound: a
// problem, or a page for a page.
func unavailable(a answer, bound time.Duration) error {
	switch {
	case a.err != nil:
		return a.err
	case a.page && (a.status != 503 || !strings.HasPrefix(a.contentType, "text/html")):
		return fmt.Errorf("%d %s, want a 503 page", a.status, a.contentType)
	case !a.page && (a.status != 503 || a.problem != client.ProblemUnavailable):
		return fmt.Errorf("%d %s, want 503 unavailable", a.status, a.problem)
	case a.retryAfter == "":
		return fmt.Errorf("503 without Retry-After")
	case a.took > bound:
		return fmt.Errorf("answered after %s, more than %s", a.took, bound)
	}
	return nil
}

// goroutines reads go_goroutines from the server's /metrics.
func (s *server) goroutines(t *testing.T) int {
	t.Helper()
	m, err := s.client("").Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v := regexp.MustCompile(`(?m)^go_goroutines (\d+)`).FindStringSubmatch(m)
	if v == nil {
		t.Fatalf("no go_goroutines in /metrics")
	}
	n, _ := strconv.Atoi(v[1])
	return n
}

// settle waits until the server's goroutines are at most want, and
// returns the count.
func (s *server) settle(t *testing.T, want int, within time.Duration) int {
	t.Helper()
	n := 0
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		if n = s.goroutines(t); n <= want || time.Now().After(deadline) {
			return n
		}
	}
}

// waitReady polls /readyz until it answers 200 and returns how long that
// took and how many 503s it got meanwhile.
func (s *server) waitReady(t *testing.T, within time.Duration) (time.Duration, int) {
	t.Helper()
	start := time.Now()
	for n := 0; ; {
		switch a := s.send(call{method: "GET", path: "/readyz"}); a.status {
		case 200:
			return time.Since(start), n
		case 503:
			n++
		}
		if time.Since(start) > within {
			t.Fatalf("not ready %s after the database came back:\n%s", within, s.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lines counts the log lines with msg.
func (s *server) lines(msg string) int {
	return strings.Count(s.logs.String(), `"msg":"`+msg+`"`)
}

// unavailableResponses reads swarmscore_db_unavailable_responses_total by
// reason, and their sum, from the server's /metrics.
func (s *server) unavailableResponses(t *testing.T) (map[string]int, int) {
	t.Helper()
	m, err := s.client("").Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	by, total := map[string]int{}, 0
	for _, v := range regexp.MustCompile(`(?m)^swarmscore_db_unavailable_responses_total\{reason="(\w+)"\} (\d+)$`).FindAllStringSubmatch(m, -1) {
		n, _ := strconv.Atoi(v[2])
		by[v[1]] = n
		total += n
	}
	if len(by) != 3 {
		t.Fatalf("swarmscore_db_unavailable_responses_total: %v", by)
	}
	return by, total
}

// outageEnd is the line that ends an outage.
type outageEnd struct {
	OutageMS int64          `json:"outage_ms"`
	Total    int            `json:"unavailable_responses"`
	ByReason map[string]int `json:"unavailable_by_reason"`
}

// checkUnavailable waits for the one line that ends the outage and checks
// that it and swarmscore_db_unavailable_responses_total both count the
// seen 503s the clients got, with the same reasons. It returns the line.
func (s *server) checkUnavailable(t *testing.T, seen int) outageEnd {
	t.Helper()
	// The line comes once no 503 has been answered for Retry-After and
	// --db-timeout.
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(s.logs.String(), `"msg":"database available again"`); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the end of the outage was not logged:\n%s", s.logs)
		}
	}
	var end outageEnd
	for _, l := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(l, `"msg":"database available again"`) {
			if err := json.Unmarshal([]byte(l), &end); err != nil {
				t.Fatal(err)
			}
		}
	}
	by, total := s.unavailableResponses(t)
	if end.Total != seen || total != seen || !maps.Equal(end.ByReason, by) || end.OutageMS <= 0 {
		t.Errorf("the clients got %d 503s; the outage's last line says %+v; the metric %d, %v", seen, end, total, by)
	}
	return end
}

// TestOutagePostgres: while PostgreSQL refuses connections (SQLSTATE
// 55000, and 57P01 for the sessions it ends), every route that needs it
// answers 503 with Retry-After, at once; the outage and the recovery are
// logged once each, the recovery and swarmscore_db_unavailable_responses_total
// with every 503 the clients got; recovery needs no restart.
func TestOutagePostgres(t *testing.T) {
	t.Parallel() // mostly waiting on timeouts
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	s := startArgs(t, dsn, []string{"--db-timeout", "2s"}, serverEnv...)
	op := s.client(adminToken)
	if _, err := op.IngestEvents(ctx, append(history("agent-o"), history("agent-p")...)); err != nil {
		t.Fatal(err)
	}
	cert := supersededCertificate(t, s, "agent-o")
	admin := pgtest.NewAdmin(t, dsn)
	admin.AllowConnections(false)
	t.Cleanup(func() { admin.AllowConnections(true) })
	admin.Terminate("swarmscore")

	var worst time.Duration
	seen := 0
	for round := range 3 {
		for _, c := range dbRoutes("agent-p", cert.Raw) {
			a := s.send(c)
			if err := unavailable(a, 2*time.Second); err != nil {
				t.Errorf("round %d, %s during the outage: %v", round, c.name, err)
			}
			if a.status == 503 {
				seen++
			}
			worst = max(worst, a.took)
		}
	}
	if a := s.send(call{method: "GET", path: "/healthz"}); a.status != 200 {
		t.Errorf("healthz during the outage: %d", a.status)
	}
	if !s.logged(`"msg":"database unavailable: answering 503 until it recovers"`) {
		t.Fatalf("the outage was not logged:\n%s", s.logs)
	}

	admin.AllowConnections(true)
	recovery, polls := s.waitReady(t, 10*time.Second)
	seen += polls
	end := s.checkUnavailable(t, seen)
	if end.ByReason["refused"] != seen {
		t.Errorf("refused connections counted as %v", end.ByReason)
	}
	for _, c := range dbRoutes("agent-p", cert.Raw) {
		if a := s.send(c); a.status != 200 {
			t.Errorf("%s after the outage: %d %s", c.name, a.status, a.problem)
		}
	}
	if n, m := s.lines("database unavailable: answering 503 until it recovers"), s.lines("database available again"); n != 1 || m != 1 {
		t.Errorf("the outage was logged %d times and its end %d times, want once each", n, m)
	}
	t.Logf("outage (refused connections): %d routes × 3 answered 503 with Retry-After, slowest in %s; ready again %s after connections were allowed; "+
		"503s seen %d, in the last line and the metric %d (%v), outage %d ms",
		len(dbRoutes("", nil)), worst.Round(time.Millisecond), recovery.Round(time.Millisecond), seen, end.Total, end.ByReason, end.OutageMS)
	s.stop()
}

// TestOutageSQLiteLocked: another process holds the SQLite file's write
// lock; writes wait at most --db-timeout and get 503 with Retry-After,
// reads go on (WAL), and the server recovers when the lock goes.
func TestOutageSQLiteLocked(t *testing.T) {
	t.Parallel() // mostly waiting on timeouts
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "swarmscore.db")
	s := startArgs(t, "sqlite:"+db, []string{"--db-timeout", "1s"}, serverEnv...)
	op := s.client(adminToken)
	if _, err := op.IngestEvents(ctx, history("agent-l")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client("").Score(ctx, "agent-l"); err != nil { // cached: reading it writes nothing
		t.Fatal(err)
	}
	unlock := lockSQLite(t, db)
	more := []client.Event{client.ConduitSession("locked-1", "agent-l", "VERIFIED", t0, t0.Add(time.Minute))}
	body, _ := json.Marshal(more)
	var worst time.Duration
	for range 3 {
		a := s.send(call{name: "events", method: "POST", path: "/swarmscore/events", body: string(body), operator: true})
		if err := unavailable(a, 2500*time.Millisecond); err != nil {
			t.Fatalf("ingest into a locked database: %v\n%s", err, s.logs)
		}
		worst = max(worst, a.took)
	}
	// The database answers its probe (reads go on), but the writes have
	// gone on failing for more than a probe interval: an outage.
	if !s.logged(`"msg":"database unavailable: answering 503 until it recovers"`, `it answers a probe`) {
		t.Errorf("the lock was not logged as an outage:\n%s", s.logs)
	}
	if sc, err := s.client("").Score(ctx, "agent-l"); err != nil || sc.Score != 760 {
		t.Fatalf("reading while another process writes: %+v %v", sc, err)
	}
	unlock()
	if res, err := op.IngestEvents(ctx, more); err != nil || res.Accepted != 1 {
		t.Fatalf("ingest after the lock went: %+v %v", res, err)
	}
	end := s.checkUnavailable(t, 3)
	t.Logf("SQLite locked by another writer: ingest answered 503 with Retry-After, slowest in %s (--db-timeout 1s); reads served; ingest accepted once the lock went; 503s %v",
		worst.Round(time.Millisecond), end.ByReason)
	s.stop()
}

// TestPartition: a TCP relay between the server and PostgreSQL stops
// forwarding (packets dropped: nothing is refused, nothing arrives). Every
// route that needs the database answers 503 within --db-timeout, however
// many requests arrive (past --db-max-requests, at once); the goroutines
// stay bounded and return to their baseline after the network heals, and
// the server recovers by itself. The partition's last log line and
// swarmscore_db_unavailable_responses_total count every 503 the clients
// got, timeouts and refusals for want of a slot.
func TestPartition(t *testing.T) {
	t.Parallel() // mostly waiting on timeouts
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	r := newRelay(t, dsn)
	const timeout = time.Second
	s := startArgs(t, r.dsn, []string{"--db-timeout", timeout.String(), "--db-max-requests", "16"}, serverEnv...)
	op := s.client(adminToken)
	if _, err := op.IngestEvents(ctx, append(history("agent-n"), history("agent-m")...)); err != nil {
		t.Fatal(err)
	}
	cert := supersededCertificate(t, s, "agent-n")
	for _, c := range dbRoutes("agent-n", cert.Raw) { // warm every path
		s.send(c)
	}
	time.Sleep(500 * time.Millisecond)
	baseline := s.goroutines(t)

	r.partition()
	routes := dbRoutes("agent-m", cert.Raw)
	var worst time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	peak, seen := 0, 0
	const clients = 8
	for i := range clients * len(routes) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := routes[i%len(routes)]
			a := s.send(c)
			mu.Lock()
			defer mu.Unlock()
			worst = max(worst, a.took)
			if err := unavailable(a, timeout+1500*time.Millisecond); err != nil {
				t.Errorf("%s during the partition: %v", c.name, err)
			}
			if a.status == 503 {
				seen++
			}
		}()
	}
	for range 5 {
		time.Sleep(200 * time.Millisecond)
		peak = max(peak, s.goroutines(t))
	}
	wg.Wait()
	// A second wave, the first one's connections still stuck.
	for _, c := range routes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := s.send(c)
			mu.Lock()
			defer mu.Unlock()
			if err := unavailable(a, timeout+1500*time.Millisecond); err != nil {
				t.Errorf("%s, second wave: %v", c.name, err)
			}
			if a.status == 503 {
				seen++
			}
			worst = max(worst, a.took)
		}()
	}
	wg.Wait()
	during := s.goroutines(t)

	r.heal()
	recovery, polls := s.waitReady(t, 15*time.Second)
	seen += polls
	end := s.checkUnavailable(t, seen)
	if end.ByReason["timeout"] == 0 || end.ByReason["slots"] == 0 {
		t.Errorf("a partition's 503s: %v, want timeouts and refusals for want of a slot", end.ByReason)
	}
	for _, c := range dbRoutes("agent-m", cert.Raw) {
		if a := s.send(c); a.status != 200 {
			t.Errorf("%s after the partition: %d %s", c.name, a.status, a.problem)
		}
	}
	after := s.settle(t, baseline+3, 15*time.Second)
	if after > baseline+3 {
		t.Errorf("%d goroutines after the partition, %d before", after, baseline)
	}
	if n, m := s.lines("database unavailable: answering 503 until it recovers"), s.lines("database available again"); n != 1 || m != 1 {
		t.Errorf("the partition was logged %d times and its end %d times, want once each:\n%s", n, m, s.logs)
	}
	t.Logf("partition: %d requests (%d routes) answered 503 with Retry-After, slowest in %s (--db-timeout %s); goroutines %d before, peak %d, %d after the requests, %d after healing; ready %s after healing; "+
		"503s seen %d (%d /readyz polls after healing), in the last line and the metric %d (%v), outage %d ms",
		clients*len(routes)+len(routes), len(routes), worst.Round(time.Millisecond), timeout, baseline, peak, during, after, recovery.Round(time.Millisecond),
		seen, polls, end.Total, end.ByReason, end.OutageMS)
	s.stop()
}

// TestSlotsExhausted: another session holds an exclusive lock on every
// table of the ledger (a long migration would), so the database answers
// its probe but every statement waits. Clients that keep asking fill the
// --db-max-requests slots: those in a slot answer 503 at --db-timeout, the
// others at once. The 503s outlasting a probe interval are an outage,
// logged once, and its last line and swarmscore_db_unavailable_responses_total
// count every 503 the clients got.
func TestSlotsExhausted(t *testing.T) {
	t.Parallel() // mostly waiting on timeouts
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	const timeout = 500 * time.Millisecond
	s := startArgs(t, dsn, []string{"--db-timeout", timeout.String(), "--db-max-requests", "4"}, serverEnv...)
	if _, err := s.client(adminToken).IngestEvents(ctx, append(history("agent-k"), history("agent-j")...)); err != nil {
		t.Fatal(err)
	}
	cert, err := s.client("").Certificate(ctx, "agent-k")
	if err != nil {
		t.Fatal(err)
	}
	lock, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(ctx)
	tx, err := lock.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `DO $$ DECLARE t text; BEGIN
		FOR t IN SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema() AND tablename NOT LIKE 'goose%' LOOP
			EXECUTE 'LOCK TABLE ' || t || ' IN ACCESS EXCLUSIVE MODE';
		END LOOP; END $$`); err != nil {
		t.Fatal(err)
	}

	routes := dbRoutes("agent-j", cert.Raw)
	routes = slices.DeleteFunc(routes, func(c call) bool { return c.name == "readyz" }) // it answers
	var mu sync.Mutex
	var wg sync.WaitGroup
	seen, ok, failed := 0, 0, 0
	stop := time.Now().Add(3 * time.Second)
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := i; time.Now().Before(stop); j++ {
				c := routes[j%len(routes)]
				a := s.send(c)
				mu.Lock()
				switch {
				case a.status == 503:
					seen++
					if err := unavailable(a, timeout+time.Second); err != nil {
						t.Errorf("%s under the lock: %v", c.name, err)
					}
				case a.status == 200:
					ok++ // what needs no table
				default:
					failed++
					t.Errorf("%s under the lock: %d %s %v", c.name, a.status, a.problem, a.err)
				}
				mu.Unlock()
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	// Confirmed by a probe that waited for a connection in vain, or by
	// the 503s going on though it answered.
	if !s.logged(`"msg":"database unavailable: answering 503 until it recovers"`) {
		t.Errorf("the lock was not logged as an outage:\n%s", s.logs)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	end := s.checkUnavailable(t, seen)
	if end.ByReason["timeout"] == 0 || end.ByReason["slots"] == 0 {
		t.Errorf("503s under a lock: %v, want timeouts and refusals for want of a slot", end.ByReason)
	}
	for _, c := range dbRoutes("agent-j", cert.Raw) {
		if a := s.send(c); a.status != 200 {
			t.Errorf("%s after the lock: %d %s", c.name, a.status, a.problem)
		}
	}
	if n, m := s.lines("database unavailable: answering 503 until it recovers"), s.lines("database available again"); n != 1 || m != 1 {
		t.Errorf("the outage was logged %d times and its end %d times, want once each:\n%s", n, m, s.logs)
	}
	t.Logf("every table locked for 3 s, 12 clients, --db-max-requests 4, --db-timeout %s: %d answered 503 (%d served without a table), in the last line and the metric %d (%v), outage %d ms",
		timeout, seen, ok, end.Total, end.ByReason, end.OutageMS)
	s.stop()
}

// relay forwards TCP connections to PostgreSQL and can stop forwarding,
// as a network partition does: the bytes wait, nothing is refused.
type relay struct {
	t      *testing.T
	ln     net.Listener
	target string
	dsn    string // dsn through the relay

	mu    sync.Mutex
	up    chan struct{} // closed while the network is up
	conns []net.Conn
}

func newRelay(t *testing.T, dsn string) *relay {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{t: t, ln: ln, target: u.Host, up: make(chan struct{})}
	close(r.up)
	u.Host = ln.Addr().String()
	r.dsn = u.String()
	go r.accept()
	t.Cleanup(r.close)
	return r
}

func (r *relay) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			r.wait() // a partition drops the handshake's packets too
			up, err := net.Dial("tcp", r.target)
			if err != nil {
				c.Close()
				return
			}
			r.mu.Lock()
			r.conns = append(r.conns, c, up)
			r.mu.Unlock()
			go r.pipe(up, c)
			go r.pipe(c, up)
		}()
	}
}

func (r *relay) wait() {
	r.mu.Lock()
	up := r.up
	r.mu.Unlock()
	<-up
}

func (r *relay) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.wait()
			if _, err := dst.Write(buf[:n]); err != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

func (r *relay) partition() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.up = make(chan struct{})
}

func (r *relay) heal() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.up:
	default:
		close(r.up)
	}
}

func (r *relay) close() {
	r.heal()
	r.ln.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.Close()
	}
}

// crashEvents is batches of size events over agents, each event sent once
// in a final status, and the counts they give each agent.
func crashEvents(batches, size, agents int, prefix string) ([][]client.Event, map[string][4]int) {
	want := map[string][4]int{} // conduit total, success, ap2 total, success
	out := make([][]client.Event, batches)
	for b := range out {
		for i := range size {
			n := b*size + i
			agent := fmt.Sprintf("%s-agent-%d", prefix, n%agents)
			w := want[agent]
			id := fmt.Sprintf("%s-%d", prefix, n)
			if n%3 == 0 {
				st := "SETTLED"
				if n%7 == 0 {
					st = "REFUNDED"
				}
				out[b] = append(out[b], client.AP2Transaction(id, agent, "buyer-1", st, int64(100+n), t0, t0.Add(time.Minute)))
				w[2]++
				if st == "SETTLED" {
					w[3]++
				}
			} else {
				st := "VERIFIED"
				if n%5 == 0 {
					st = "FAILED"
				}
				out[b] = append(out[b], client.ConduitSession(id, agent, st, t0, t0.Add(time.Minute)))
				w[0]++
				if st == "VERIFIED" {
					w[1]++
				}
			}
			want[agent] = w
		}
	}
	return out, want
}

// checkLedger runs `ledger verify --json` against dsn and checks every
// chain is intact and holds exactly events events (one record each), and
// that each agent's counts are want's.
func checkLedger(t *testing.T, s *server, dsn string, events int, want map[string][4]int) {
	t.Helper()
	code, out, errs := run(t, nil, "", "ledger", "verify", "--json", "--db", dsn)
	var rep struct {
		Records, Events int
		Broken          []any
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.Records != events || rep.Events != events || len(rep.Broken) != 0 {
		t.Fatalf("ledger verify: %d %s%s (want %d records and events, none broken)", code, out, errs, events)
	}
	pub := s.client("")
	for agent, w := range want {
		sc, err := pub.Score(context.Background(), agent)
		if err != nil {
			t.Fatal(err)
		}
		if got := [4]int{int(sc.Conduit().Total), int(sc.Conduit().Success), int(sc.AP2().Total), int(sc.AP2().Success)}; got != w {
			t.Fatalf("%s counts %v, want %v", agent, got, w)
		}
	}
}

// crash ingests batches over HTTP into a server on dsn and kills it
// (SIGKILL) at random points, kills times, restarting it each time. After
// each restart every acknowledged batch, sent again, must be all
// duplicates; the batch in flight at the kill must have been written
// whole or not at all. At the end every event is stored exactly once and
// every chain verifies.
func crash(t *testing.T, dsn string, kills int, seed uint64) (survived, written, lost int) {
	rng := rand.New(rand.NewPCG(seed, 0))
	// Each round acknowledges a few batches before its kill, more if the
	// kill comes late; what is left after the last kill is sent whole.
	batches := 8*kills + 10
	ctx := context.Background()
	evs, want := crashEvents(batches, 50, 7, fmt.Sprintf("k%d", seed))
	acked := 0
	for round := 0; acked < batches; round++ {
		s := start(t, dsn, serverEnv...)
		c := s.client(adminToken)
		// Everything acknowledged before is there, once.
		for i := range acked {
			if res, err := c.IngestEvents(ctx, evs[i]); err != nil || res.Duplicates != len(evs[i]) {
				t.Fatalf("round %d: acknowledged batch %d, sent again: %+v %v", round, i, res, err)
			}
		}
		// The batch in flight at the last kill: all or nothing.
		if round > 0 && acked < batches {
			res, err := c.IngestEvents(ctx, evs[acked])
			if err != nil || len(res.Rejected) != 0 || (res.Accepted != len(evs[acked]) && res.Duplicates != len(evs[acked])) {
				t.Fatalf("round %d: the batch in flight at the kill was half written: %+v %v", round, res, err)
			}
			if res.Duplicates > 0 {
				written++ // committed, its answer lost with the process
			} else {
				lost++ // never committed
			}
			acked++
		}
		if survived == kills {
			for ; acked < batches; acked++ {
				if _, err := c.IngestEvents(ctx, evs[acked]); err != nil {
					t.Fatal(err)
				}
			}
			s.stop()
			break
		}
		// Kill after 1 to 3 more acknowledged batches and a few random
		// milliseconds: before, during or after the next request, its
		// transaction or its commit.
		done := make(chan int)
		progress := make(chan struct{}, batches)
		go func() {
			n := acked
			for n < batches {
				if _, err := c.IngestEvents(ctx, evs[n]); err != nil {
					break // killed
				}
				n++
				progress <- struct{}{}
			}
			done <- n
		}()
		for range min(1+rng.IntN(3), batches-acked) {
			select {
			case <-progress:
			case <-time.After(20 * time.Second):
				s.cmd.Process.Signal(syscall.SIGQUIT) // the goroutines, in the log
				<-s.done
				t.Fatalf("round %d: a batch was not answered in 20 s:\n%s", round, s.logs)
			}
		}
		time.Sleep(time.Duration(rng.IntN(8000)) * time.Microsecond)
		s.cmd.Process.Signal(syscall.SIGKILL)
		acked = <-done
		<-s.done // cmd.Wait returned: the cleanup start registered has nothing to kill
		survived++
	}
	// What the kills left, checked by a server that was never killed.
	s := start(t, dsn, serverEnv...)
	defer s.stop()
	checkLedger(t, s, dsn, batches*50, want)
	return survived, written, lost
}

// kills is how many times the crash tests kill the server: a few in CI,
// more with SWARMSCORE_CRASH_KILLS (docs/RELIABILITY.md).
func kills(t *testing.T, ci int) int {
	if v := os.Getenv("SWARMSCORE_CRASH_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SWARMSCORE_CRASH_KILLS=%q is not a positive number", v)
		}
		return n
	}
	return ci
}

// TestCrashSQLite and TestCrashPostgres: kill -9 during ingest over HTTP.
func TestCrashSQLite(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	n, written, lost := crash(t, "sqlite:"+filepath.Join(t.TempDir(), "swarmscore.db"), kills(t, 8), seed)
	t.Logf("SQLite: %d kill -9s survived (seed %d; the batch after the last acknowledged one was found committed %d times, absent %d times): every acknowledged event stored once, every chain intact",
		n, seed, written, lost)
}

func TestCrashPostgres(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	n, written, lost := crash(t, pgtest.NewDatabase(t), kills(t, 5), seed)
	t.Logf("PostgreSQL: %d kill -9s survived (seed %d; the batch after the last acknowledged one was found committed %d times, absent %d times): every acknowledged event stored once, every chain intact",
		n, seed, written, lost)
}

// TestTwoReplicas: two serve processes on one PostgreSQL database, four
// clients sending the same batches at once in different orders: every
// event is recorded once (the acceptances add up to the events), and both
// servers give the exact counts.
func TestTwoReplicas(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	a := start(t, dsn, serverEnv...)
	b := start(t, dsn, serverEnv...)
	const batches = 24
	evs, want := crashEvents(batches, 40, 5, "rep")
	var mu sync.Mutex
	accepted := 0
	var wg sync.WaitGroup
	for w, s := range []*server{a, a, b, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := s.client(adminToken)
			order := rand.Perm(batches)
			for _, i := range order {
				res, err := c.IngestEvents(ctx, evs[i])
				if err != nil || len(res.Rejected) != 0 || res.Accepted+res.Duplicates != len(evs[i]) {
					t.Errorf("client %d, batch %d: %+v %v", w, i, res, err)
					return
				}
				mu.Lock()
				accepted += res.Accepted
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if accepted != batches*40 {
		t.Fatalf("%d events accepted in all, want each of the %d once", accepted, batches*40)
	}
	checkLedger(t, a, dsn, batches*40, want)
	for agent, w := range want {
		sc, err := b.client("").Score(ctx, agent)
		if err != nil || sc.Conduit().Total != int64(w[0]) || sc.AP2().Success != int64(w[3]) {
			t.Fatalf("replica B, %s: %+v %v", agent, sc, err)
		}
	}
	cert, err := b.client("").Certificate(ctx, "rep-agent-0")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := a.client("").Verify(ctx, cert.Raw, "rep-agent-0"); err != nil || !v.Valid || v.Checks.Result(client.CheckLedger) != client.CheckConfirmed {
		t.Fatalf("A verifies B's certificate: %+v %v", v, err)
	}
	t.Logf("two replicas: 4 clients sent each of %d batches (%d events) once through each replica pair at once: %d accepted, the rest duplicates; counts exact", batches, batches*40, accepted)
	a.stop()
	b.stop()
}

// lockSQLite takes the write lock of the SQLite database at path, from
// this process, as another writer would, until the returned function is
// called.
func lockSQLite(t *testing.T, path string) func() {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unlock := func() {
		once.Do(func() {
			conn.ExecContext(ctx, "ROLLBACK")
			conn.Close()
			db.Close()
		})
	}
	t.Cleanup(unlock)
	return unlock
}

// TestVerifySuperseded: a passport that was true when issued still
// verifies after the agent's score fell, with the warning superseded and
// the agent's current score and tier: 40 more failed sessions take conduit
// to 76/120, floor(400 × 76/120) = 253, and the score from 760 to 709.
func TestVerifySuperseded(t *testing.T) {
	ctx := context.Background()
	s := start(t, "sqlite:"+filepath.Join(t.TempDir(), "swarmscore.db"), serverEnv...)
	if _, err := s.client(adminToken).IngestEvents(ctx, history("agent-s")); err != nil {
		t.Fatal(err)
	}
	old, err := s.client("").Certificate(ctx, "agent-s")
	if err != nil {
		t.Fatal(err)
	}
	// Sessions that end after the passport's computed_at (a whole second):
	// its own window is untouched.
	time.Sleep(1100 * time.Millisecond)
	var failed []client.Event
	end := time.Now().UTC().Truncate(time.Second)
	for i := range 40 {
		failed = append(failed, client.ConduitSession(fmt.Sprintf("agent-s-f%d", i), "agent-s", "FAILED", t0, end))
	}
	if _, err := s.client(adminToken).IngestEvents(ctx, failed); err != nil {
		t.Fatal(err)
	}
	v, err := s.client("").Verify(ctx, old.Raw, "agent-s")
	if err != nil || !v.Valid || len(v.Warnings) != 1 || v.Warnings[0].Code != client.WarningSuperseded ||
		v.Checks.Result(client.CheckLedger) != client.CheckConfirmed || v.Current == nil || v.Current.Score != 709 || v.Current.Tier != score.TierStandard {
		t.Fatalf("the old passport: %+v %v", v, err)
	}
	fresh, err := s.client("").Certificate(ctx, "agent-s")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := s.client("").Score(ctx, "agent-s")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.client("").Verify(ctx, fresh.Raw, "agent-s"); err != nil || !v.Valid || len(v.Warnings) != 0 || v.Current.Score != sc.Score {
		t.Fatalf("the new passport (score %d): %+v %v", sc.Score, v, err)
	}
	s.stop()
}
