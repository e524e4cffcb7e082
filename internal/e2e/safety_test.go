package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/client"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
)

// TestOutageDetail: while PostgreSQL refuses connections, anonymous
// clients learn that the service is unavailable and nothing about the
// database (user, name, host, port, SQLSTATE); the log has it, under the
// first refused request's id and in the outage's one line. A 404 carries
// no layer prefix.
func TestOutageDetail(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	s := start(t, dsn, "SWARMSCORE_ADMIN_TOKEN="+adminToken, "SWARMSCORE_SIGNING_KEY="+signingKey)
	anon := s.client("")
	if _, err := s.client(adminToken).IngestEvents(ctx, history("agent-o")); err != nil {
		t.Fatal(err)
	}
	_, err = anon.Score(ctx, "ghost")
	var p *client.Problem
	if !client.IsProblem(err, client.ProblemNotFound) || !errorsAs(err, &p) ||
		p.Detail != `agent "ghost" has no public score` {
		t.Fatalf("unknown agent: %v", err)
	}

	admin := pgtest.NewAdmin(t, dsn)
	admin.AllowConnections(false)
	t.Cleanup(func() { admin.AllowConnections(true) })
	admin.Terminate("swarmscore")
	for _, path := range []string{"/swarmscore/agent-o", "/readyz"} {
		var body []byte
		var status int
		// The pool notices its connections are gone on first use.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			resp, err := http.Get(s.url + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if status = resp.StatusCode; status == 503 || time.Now().After(deadline) {
				break
			}
		}
		var prob client.Problem
		if err := json.Unmarshal(body, &prob); err != nil || status != 503 || prob.Type != client.ProblemUnavailable || prob.RequestID == "" {
			t.Fatalf("%s during the outage: %d %s", path, status, body)
		}
		for _, leak := range []string{dbName, "postgres", "127.0.0.1", "5432", "SQLSTATE", "55000", "57P01", "FATAL"} {
			if strings.Contains(string(body), leak) {
				t.Errorf("%s: the problem reveals %q: %s", path, leak, body)
			}
		}
		// The first refused request of the outage is logged with the reason
		// under its request id; then the outage is, once, and the
		// requests only at DEBUG.
		if path == "/swarmscore/agent-o" && !s.logged(`"request_id":"`+prob.RequestID+`","method":"GET","path":"`+path+`","problem":"unavailable","err":"`, "SQLSTATE") {
			t.Errorf("%s: the log lacks the reason under request id %s:\n%s", path, prob.RequestID, s.logs)
		}
		// The reason is whichever failure the probe met first: the
		// terminated connection (57P01) or the refused one (55000).
		if path == "/readyz" && !s.logged(`"msg":"database unavailable: answering 503 until it recovers","err":"`, "SQLSTATE 5") {
			t.Errorf("%s: the log lacks the outage and its reason:\n%s", path, s.logs)
		}
	}
	admin.AllowConnections(true)
	s.stop()
}

func errorsAs(err error, p **client.Problem) bool {
	pp, ok := err.(*client.Problem)
	*p = pp
	return ok
}

// TestSaferDefaults: the SQLite files are private, CORS on the public
// routes, an escrow quote for a new provider, /metrics for allowed
// networks only, and the access log.
func TestSaferDefaults(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "swarmscore.db")
	s := start(t, "sqlite:"+db, "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	op := s.client(adminToken)
	if _, err := op.IngestEvents(ctx, history("agent-d")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{db, db + "-wal", db + "-shm", filepath.Join(dir, "swarmscore.master-key")} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", f, fi.Mode(), err)
		}
	}

	// A marketplace page on another origin reads certificates and
	// verifies them.
	get := func(method, path string, hdr ...string) *http.Response {
		req, _ := http.NewRequest(method, s.url+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := get("GET", "/swarmscore/agent-d/certificate", "Origin", "https://market.example")
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "ETag") ||
		resp.Header.Get("Cache-Control") != "no-cache" || etag == "" {
		t.Fatalf("certificate: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := get("GET", "/swarmscore/agent-d/certificate", "Origin", "https://market.example", "If-None-Match", etag); resp.StatusCode != 304 ||
		resp.Header.Get("ETag") != etag || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("revalidation: %d %v", resp.StatusCode, resp.Header)
	}
	resp = get("OPTIONS", "/swarmscore/verify", "Origin", "https://market.example", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type")
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Access-Control-Allow-Methods") != "POST" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := get("OPTIONS", "/swarmscore/events", "Origin", "https://market.example", "Access-Control-Request-Method", "POST"); resp.StatusCode == 204 ||
		resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight of an operator route: %d %v", resp.StatusCode, resp.Header)
	}

	// A provider's first payment: score 0, the whole amount held.
	e, err := op.Escrow(ctx, "brand-new-provider", 12345)
	if err != nil || e.Score != 0 || e.EscrowModifier.String() != "1" || e.HoldCents != 12345 || e.ReleasedCents != 0 {
		t.Fatalf("escrow for a new provider: %+v %v", e, err)
	}

	// /metrics: loopback by default (this client), refused through an
	// unnamed proxy.
	if _, err := s.client("").Metrics(ctx); err != nil {
		t.Fatalf("metrics from loopback: %v", err)
	}
	if resp := get("GET", "/metrics", "X-Forwarded-For", "203.0.113.7"); resp.StatusCode != 403 {
		t.Fatalf("metrics forwarded by an unnamed proxy: %d", resp.StatusCode)
	}
	s.stop()
	logs := s.logs.String()
	if !strings.Contains(logs, `"route":"POST /swarmscore/events"`) || !strings.Contains(logs, `"operator":"admin"`) || !strings.Contains(logs, `"duration_ms":`) {
		t.Fatalf("the access log lacks the operator or duration_ms:\n%s", logs)
	}

	// Elsewhere, and quieter: /metrics only to 10/8, warnings only.
	s = startArgs(t, "sqlite:"+db, []string{"--metrics-allow", "10.0.0.0/8", "--log-level", "warn"})
	if _, err := s.client("").Metrics(ctx); !client.IsProblem(err, client.ProblemForbidden) {
		t.Fatalf("metrics outside --metrics-allow: %v", err)
	}
	if _, err := s.client("").Score(ctx, "agent-d"); err != nil {
		t.Fatal(err)
	}
	s.stop()
	if logs := s.logs.String(); strings.Contains(logs, `"msg":"request"`) || strings.Contains(logs, `"msg":"stopped"`) {
		t.Fatalf("--log-level warn wrote info lines:\n%s", logs)
	}
}

// TestCommandLineDefaults: a port in use, the version, token commands on a
// mistyped database, a keyword/value PostgreSQL DSN (and one with a
// password that cannot connect), and --json on the commands that report.
func TestCommandLineDefaults(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "swarmscore.db")
	s := start(t, db)
	addr := strings.TrimPrefix(s.url, "http://")
	code, _, errs := run(t, nil, "", "serve", "--addr", addr, "--db", "sqlite:"+filepath.Join(dir, "other.db"))
	if code != 4 || !strings.Contains(errs, "already in use") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("port in use: %d %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "other.db")); err == nil {
		t.Fatal("serve on a port in use created its database")
	}
	s.stop()

	if code, out, _ := run(t, nil, "", "--version"); code != 0 || !strings.HasPrefix(out, "swarmscore ") {
		t.Fatalf("--version: %d %q", code, out)
	}

	typo := filepath.Join(dir, "swarmscroe.db")
	if code, _, errs := run(t, nil, "", "token", "create", "--operator", "acme", "--db", "sqlite:"+typo); code != 3 || !strings.Contains(errs, "does not exist") {
		t.Fatalf("token create on a missing database: %d %q", code, errs)
	}
	if _, err := os.Stat(typo); err == nil {
		t.Fatal("token create created a database")
	}
	code, out, errs := run(t, nil, "", "token", "list", "--db", db, "--json")
	if code != 0 || out != "[]\n" {
		t.Fatalf("token list --json: %d %q %q", code, out, errs)
	}

	pg := pgtest.NewDatabase(t)
	u, _ := url.Parse(pg)
	pass, _ := u.User.Password()
	kv := "host=" + u.Hostname() + " port=" + u.Port() + " user=" + u.User.Username() + " dbname=" + strings.TrimPrefix(u.Path, "/") + " sslmode=disable"
	if pass != "" {
		kv += " password=" + pass
	}
	code, out, errs = run(t, nil, "", "migrate", "--db", kv, "--json")
	var m struct {
		Database string
		Applied  []string
	}
	if err := json.Unmarshal([]byte(out), &m); code != 0 || err != nil || len(m.Applied) == 0 || !strings.Contains(m.Database, "dbname=") {
		t.Fatalf("migrate with a keyword/value DSN: %d %v %q %q", code, err, out, errs)
	}
	code, _, errs = run(t, nil, "", "ledger", "verify", "--db", "host=127.0.0.1 port=1 user=app password=hunter2-secret dbname=x connect_timeout=2")
	if code != 4 || strings.Contains(errs, "hunter2-secret") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("unreachable keyword/value DSN: %d %q", code, errs)
	}
}
