// Package e2e runs the real swarmscore binary: it builds it once, starts
// `swarmscore serve` on random loopback ports over temporary databases, and
// talks to it with the public client package, as a marketplace would.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/swarmscore/swarmscore/score"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/client"
)

var bin string // the built binary

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "swarmscore-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "swarmscore")
	build := exec.Command("go", "build", "-o", bin, "github.com/swarmscore/swarmscore/cmd/swarmscore")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building swarmscore:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const (
	adminToken = "e2e-admin-token-0123456789abcdefghijklmnop"
	signingKey = "e2e-signing-key-0123456789abcdefghijklmnop"
)

// server is one running `swarmscore serve`.
type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	logs *syncBuffer
	done chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs `swarmscore serve --addr 127.0.0.1:0 --db dsn` with env added
// to a minimal environment, and waits for its "listening" log line.
func start(t *testing.T, dsn string, env ...string) *server {
	t.Helper()
	return startArgs(t, dsn, nil, env...)
}

// startArgs is start with more serve flags. With --log-level there may be
// no "listening" line: the server gets a free port picked here and is
// waited for on /healthz.
func startArgs(t *testing.T, dsn string, args []string, env ...string) *server {
	t.Helper()
	return startBinary(t, bin, dsn, args, env...)
}

// startBinary is startArgs with another build of the binary.
func startBinary(t *testing.T, bin, dsn string, args []string, env ...string) *server {
	t.Helper()
	addr := "127.0.0.1:0"
	quiet := slices.Contains(args, "--log-level")
	if quiet {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		addr = ln.Addr().String()
		ln.Close()
	}
	cmd := exec.Command(bin, append([]string{"serve", "--addr", addr, "--db", dsn, "--rate-limit", "0"}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	cmd.Dir = t.TempDir()
	pr, pw := io.Pipe()
	logs := &syncBuffer{}
	cmd.Stderr = io.MultiWriter(pw, logs)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, logs: logs, done: make(chan error, 1)}
	go func() { err := cmd.Wait(); pw.Close(); s.done <- err }()
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				listening <- line.Addr
			}
		}
		io.Copy(io.Discard, pr)
	}()
	if quiet {
		go func() {
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
					resp.Body.Close()
					listening <- addr
					return
				}
			}
		}()
	}
	select {
	case a := <-listening:
		s.url = "http://" + a
	case err := <-s.done:
		t.Fatalf("serve exited before listening: %v\n%s", err, logs)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("serve did not start within 30s:\n%s", logs)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop() {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.wait()
}

// wait waits for a clean exit after a signal was sent. A second SIGTERM
// would kill the process (the first restores the default handling).
func (s *server) wait() {
	s.t.Helper()
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Fatalf("serve exited with %v after SIGTERM:\n%s", err, s.logs)
		}
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		s.t.Fatalf("serve did not stop within 30s of SIGTERM:\n%s", s.logs)
	}
}

// logged waits until the server's log holds all of want (the log reaches
// the test through a pipe, after the response it belongs to) and reports
// whether it did within a few seconds.
func (s *server) logged(want ...string) bool {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		logs, all := s.logs.String(), true
		for _, w := range want {
			all = all && strings.Contains(logs, w)
		}
		if all {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func (s *server) client(token string) *client.Client {
	s.t.Helper()
	var opts []client.Option
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	c, err := client.New(s.url, opts...)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

var t0 = time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)

// history is 80 Conduit sessions (76 VERIFIED) and 40 AP2 transactions (38
// SETTLED) for agent: score 304 + 456 = 760, STANDARD, escrow 0.392.
func history(agent string) []client.Event {
	var evs []client.Event
	for i := 0; i < 80; i++ {
		st := "VERIFIED"
		if i >= 76 {
			st = "FAILED"
		}
		evs = append(evs, client.ConduitSession(fmt.Sprintf("%s-c%d", agent, i), agent, st, t0, t0.Add(time.Minute)))
	}
	for i := 0; i < 40; i++ {
		st := "SETTLED"
		if i >= 38 {
			st = "DISPUTED"
		}
		evs = append(evs, client.AP2Transaction(fmt.Sprintf("%s-t%d", agent, i), agent, "buyer-1", st, 100000, t0, t0.Add(time.Minute)))
	}
	return evs
}

func TestEndToEnd(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := start(t, "sqlite:"+filepath.Join(dir, "swarmscore.db"), "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	// No key configured: one was generated and sealed in the database
	// under a master key generated beside it, private.
	fi, err := os.Stat(filepath.Join(dir, "swarmscore.master-key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("generated master key file: %v %v", fi, err)
	}
	op := s.client(adminToken)
	anon := s.client("")

	if err := anon.Ready(ctx); err != nil {
		t.Fatalf("readyz: %v", err)
	}
	res, err := op.IngestEvents(ctx, history("agent-1"))
	if err != nil || res.Accepted != 120 || len(res.Rejected) != 0 {
		t.Fatalf("ingest: %+v %v", res, err)
	}
	// Re-sending is a no-op, an earlier status is superseded, and a final
	// status changed to another final one is rejected alone.
	back := client.ConduitSession("agent-1-c0", "agent-1", "RUNNING", t0, time.Time{})
	flip := client.ConduitSession("agent-1-c1", "agent-1", "FAILED", t0, t0.Add(time.Minute))
	res, err = op.IngestEvents(ctx, append(history("agent-1")[:2], back, flip))
	if err != nil || res.Duplicates != 2 || res.Superseded != 1 || len(res.Rejected) != 1 || res.Rejected[0].Index != 3 ||
		res.Rejected[0].ID != "agent-1-c1" {
		t.Fatalf("re-send: %+v %v", res, err)
	}
	if _, err := anon.IngestEvents(ctx, history("x")); !client.IsProblem(err, client.ProblemUnauthorized) {
		t.Fatalf("ingest without a token: %v", err)
	}

	sc, err := anon.Score(ctx, "agent-1")
	if err != nil || sc.Score != 760 || sc.Tier != score.TierStandard || sc.Escrow.String() != "0.392" || sc.AgentID != "agent-1" {
		t.Fatalf("score: %+v %v", sc, err)
	}
	cert, err := anon.Certificate(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := anon.Certificate(ctx, "agent-1")
	if err != nil || !bytes.Equal(again.Raw, cert.Raw) || again.ETag != cert.ETag {
		t.Fatalf("the cached certificate changed: %v", err)
	}
	if nm, err := anon.CertificateIfNoneMatch(ctx, "agent-1", cert.ETag); err != nil || !nm.NotModified {
		t.Fatalf("If-None-Match: %+v %v", nm, err)
	}
	v, err := anon.Verify(ctx, cert.Raw, "agent-1")
	if err != nil || !v.Valid || !v.SignatureValid || !v.ScoreValid || v.DetectedTampering || v.ExpiresAt == nil {
		t.Fatalf("verify: %+v %v", v, err)
	}

	// Tampering: raise the score and keep everything else.
	tampered := bytes.Replace(cert.Raw, []byte(`"value":760`), []byte(`"value":990`), 1)
	if bytes.Equal(tampered, cert.Raw) {
		t.Fatalf("no score value in %s", cert.Raw)
	}
	v, err = anon.Verify(ctx, tampered, "agent-1")
	if err != nil || v.Valid || v.SignatureValid || !v.DetectedTampering {
		t.Fatalf("tampered passport: %+v %v", v, err)
	}
	// Presenting agent-1's passport as another agent's is tampering too.
	v, err = anon.Verify(ctx, cert.Raw, "agent-2")
	if err != nil || v.Valid || !v.DetectedTampering || !hasCode(v, "agent_mismatch") {
		t.Fatalf("wrong agent: %+v %v", v, err)
	}

	e, err := op.Escrow(ctx, "agent-1", 100000)
	if err != nil || e.HoldCents != 39200 || e.ReleasedCents != 60800 || e.Score != 760 {
		t.Fatalf("escrow: %+v %v", e, err)
	}
	page, err := op.Agents(ctx, client.AgentsQuery{Tier: "STANDARD"})
	if err != nil || len(page.Agents) != 1 || page.Agents[0].AgentID != "agent-1" || page.NextCursor != nil {
		t.Fatalf("agents: %+v %v", page, err)
	}
	if _, err := anon.Certificate(ctx, "ghost"); !client.IsProblem(err, client.ProblemNotFound) {
		t.Fatalf("unknown agent: %v", err)
	}

	// A new event invalidates the cache: a fresh passport with the new
	// counts; the old one no longer matches the ledger as of its own
	// computed_at only if the event ended before it, which it did not.
	res, err = op.IngestEvents(ctx, []client.Event{client.ConduitSession("agent-1-new", "agent-1", "VERIFIED", t0, time.Now().UTC().Add(-time.Second).Truncate(time.Second))})
	if err != nil || res.Accepted != 1 {
		t.Fatalf("ingest: %+v %v", res, err)
	}
	fresh, err := anon.Certificate(ctx, "agent-1")
	if err != nil || bytes.Equal(fresh.Raw, cert.Raw) || fresh.ETag == cert.ETag {
		t.Fatalf("certificate after a new event is the old one: %v", err)
	}
	if v, err := anon.Verify(ctx, fresh.Raw, "agent-1"); err != nil || !v.Valid {
		t.Fatalf("fresh certificate: %+v %v", v, err)
	}

	m, err := anon.Metrics(ctx)
	if err != nil || !strings.Contains(m, "swarmscore_passports_issued_total 2") ||
		!strings.Contains(m, `swarmscore_verifications_total{result="tampered"} 2`) {
		t.Fatalf("metrics: %v\n%s", err, m)
	}
	s.stop()
	if logs := s.logs.String(); strings.Contains(logs, adminToken) || strings.Contains(logs, signingKey) {
		t.Fatal("the log contains a secret")
	}
}

func hasCode(v *client.Verification, code string) bool {
	for _, e := range v.Errors {
		if e.Code == code {
			return true
		}
	}
	return false
}

// TestTokenCommands mints and revokes a token with the CLI against the
// database a running server uses.
func TestTokenCommands(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "swarmscore.db")
	s := start(t, dsn)
	out, err := exec.Command(bin, "token", "create", "--operator", "acme", "--db", dsn, "--json").Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	var tok struct{ ID, Operator, Token string }
	if err := json.Unmarshal(out, &tok); err != nil || tok.Operator != "acme" || !strings.HasPrefix(tok.Token, "sst_") {
		t.Fatalf("token create printed %s: %v", out, err)
	}
	c := s.client(tok.Token)
	if _, err := c.IngestEvents(ctx, history("agent-9")[:1]); err != nil {
		t.Fatalf("minted token refused: %v", err)
	}
	if out, err := exec.Command(bin, "token", "revoke", tok.ID, "--db", dsn).CombinedOutput(); err != nil {
		t.Fatalf("token revoke: %v %s", err, out)
	}
	if _, err := c.IngestEvents(ctx, history("agent-9")[:1]); !client.IsProblem(err, client.ProblemUnauthorized) {
		t.Fatalf("revoked token accepted: %v", err)
	}
	if strings.Contains(s.logs.String(), tok.Token) {
		t.Fatal("the server log contains the token")
	}
}

// TestStartupErrors: bad configuration stops the server with one clear line
// and a usage status, before it listens.
func TestStartupErrors(t *testing.T) {
	for _, c := range []struct {
		dsn, env, want string
	}{
		{"sqlite:" + filepath.Join(t.TempDir(), "a.db"), "SWARMSCORE_SIGNING_KEY=short", "at least 32"},
		{"sqlite:" + filepath.Join(t.TempDir(), "b.db"), "SWARMSCORE_ADMIN_TOKEN=short", "at least 32"},
		{"postgres://postgres@127.0.0.1:1/none?sslmode=disable", "", "sealed under SWARMSCORE_MASTER_KEY"},
	} {
		cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", c.dsn)
		if c.env != "" {
			cmd.Env = []string{c.env}
		} else {
			cmd.Env = []string{}
		}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) || strings.Contains(string(out), "short\n") {
			t.Errorf("%s %s: %v\n%s", c.dsn, c.env, err, out)
		}
	}
}

// run runs the binary with env added to a minimal environment and stdin,
// and returns its exit status and output.
func run(t *testing.T, env []string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}
