package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/client"
)

// export is a marketplace's daily export: every event's whole history,
// partly out of order (s-2 and t-2 list their final status first).
func export(agent string) string {
	ts := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }
	c := func(id, status, end string) string {
		s := fmt.Sprintf(`{"type":"conduit_session","id":"%s","agent_id":"%s","status":"%s","started_at":"%s"`, id, agent, status, ts(0))
		if end != "" {
			s += `,"completed_at":"` + end + `"`
		}
		return s + "}\n"
	}
	a := func(id, status, end string) string {
		s := fmt.Sprintf(`{"type":"ap2_transaction","id":"%s","provider_id":"%s","buyer_id":"buyer-1","status":"%s","escrow_amount_cents":25000,"started_at":"%s"`, id, agent, status, ts(0))
		if end != "" {
			s += `,"settled_at":"` + end + `"`
		}
		return s + "}\n"
	}
	end := ts(time.Hour)
	return c("s-1", "RUNNING", "") + c("s-1", "VERIFIED", end) +
		c("s-2", "FAILED", end) + c("s-2", "RUNNING", "") +
		a("t-1", "HELD", "") + a("t-1", "EXECUTING", "") + a("t-1", "SETTLED", end) +
		a("t-2", "SETTLED", end) + a("t-2", "DELIVERED", "")
}

// ledgerState is what `ledger verify --json` and `agent show --json` say,
// to show that an ingest changed nothing.
func ledgerState(t *testing.T, db, agent string) string {
	t.Helper()
	code, verify, errs := run(t, nil, "", "ledger", "verify", "--json", "--db", db)
	if code != 0 {
		t.Fatalf("ledger verify: %d %s%s", code, verify, errs)
	}
	code, show, errs := run(t, nil, "", "agent", "show", agent, "--json", "--as-of", time.Now().UTC().Format(time.RFC3339), "--db", db)
	if code != 0 {
		t.Fatalf("agent show: %d %s%s", code, show, errs)
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(show), &s); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s score=%v conduit=%v ap2=%v", strings.TrimSpace(verify), s["score"], s["conduit"], s["ap2"])
}

// TestReSentExport: a re-sent export of whole histories exits 0 with the
// earlier statuses counted as superseded and changes nothing; a final
// status changed to another still fails and changes nothing. Locally and
// through `ingest --server`.
func TestReSentExport(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "export.ndjson")
	if err := os.WriteFile(file, []byte(export("agent-x")), 0o600); err != nil {
		t.Fatal(err)
	}
	conflict := filepath.Join(dir, "conflict.ndjson")
	flipped := strings.NewReplacer(`"VERIFIED"`, `"FAILED"`, `"status":"SETTLED"`, `"status":"REFUNDED"`).Replace(export("agent-x"))
	flips := strings.Split(flipped, "\n")
	if err := os.WriteFile(conflict, []byte(flips[1]+"\n"+flips[6]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := "sqlite:" + filepath.Join(dir, "local.db")

	code, out, errs := run(t, nil, "", "ingest", file, "--db", db, "--operator", "market-1")
	if code != 0 || out != file+": 7 accepted, 0 duplicates, 2 superseded, 0 rejected\n" || errs != "" {
		t.Fatalf("first ingest: %d\n%s%s", code, out, errs)
	}
	before := ledgerState(t, db, "agent-x")
	code, out, errs = run(t, nil, "", "ingest", file, "--db", db, "--operator", "market-1", "--json")
	if code != 0 || out != `{"accepted":0,"duplicates":4,"superseded":5,"rejected":[]}`+"\n" || errs != "" {
		t.Fatalf("re-sent export: %d\n%s%s", code, out, errs)
	}
	if after := ledgerState(t, db, "agent-x"); after != before {
		t.Fatalf("the re-sent export changed the ledger:\n%s\n%s", before, after)
	}
	code, out, errs = run(t, nil, "", "ingest", conflict, "--db", db, "--operator", "market-1")
	if code != 1 || !strings.Contains(out, "0 accepted, 0 duplicates, 0 superseded, 2 rejected") ||
		!strings.Contains(out, "line 1: ") || !strings.Contains(out, "line 2: ") || errs != "swarmscore: 2 line(s) rejected; nothing was recorded\n" {
		t.Fatalf("conflict: %d\n%s%s", code, out, errs)
	}
	if after := ledgerState(t, db, "agent-x"); after != before {
		t.Fatalf("the conflict changed the ledger:\n%s\n%s", before, after)
	}

	// The same through a running server.
	sdb := "sqlite:" + filepath.Join(dir, "served.db")
	s := start(t, sdb, "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	env := []string{"SWARMSCORE_TOKEN=" + adminToken}
	for i, want := range []string{": 7 accepted, 0 duplicates, 2 superseded, 0 rejected\n", ": 0 accepted, 4 duplicates, 5 superseded, 0 rejected\n"} {
		code, out, errs := run(t, env, "", "ingest", file, "--server", s.url, "--batch-size", "2")
		if code != 0 || out != file+want || errs != "" {
			t.Fatalf("remote ingest %d: %d\n%s%s", i+1, code, out, errs)
		}
	}
	code, out, errs = run(t, env, "", "ingest", conflict, "--server", s.url)
	if code != 1 || !strings.Contains(out, "2 rejected") || !strings.Contains(errs, "nothing was recorded") {
		t.Fatalf("remote conflict: %d\n%s%s", code, out, errs)
	}
	sc, err := s.client("").Score(context.Background(), "agent-x")
	if err != nil || sc.Conduit().Total != 2 || sc.Conduit().Success != 1 || sc.AP2().Total != 2 || sc.AP2().Success != 2 {
		t.Fatalf("score after the conflict: %+v %v", sc, err)
	}
	s.stop()
	if strings.Contains(s.logs.String(), adminToken) {
		t.Fatal("the server log holds the token")
	}
}

// TestRemoteIngestRetries: `ingest --server` rides out a 503, a 429 with
// Retry-After and a dropped connection, sending the same batch again, and
// exits 4 when the server stays away.
func TestRemoteIngestRetries(t *testing.T) {
	s := start(t, "sqlite:"+filepath.Join(t.TempDir(), "swarmscore.db"), "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	target, _ := url.Parse(s.url)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var n atomic.Int32
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(503)
			io.WriteString(w, `{"type":"https://swarmscore.dev/problems/unavailable","title":"Service unavailable","status":503}`)
		case 2:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(429)
		case 3:
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	defer flaky.Close()
	env := []string{"SWARMSCORE_TOKEN=" + adminToken}
	started := time.Now()
	code, out, errs := run(t, env, export("agent-r"), "ingest", "--server", flaky.URL)
	if code != 0 || out != "standard input: 7 accepted, 0 duplicates, 2 superseded, 0 rejected\n" || n.Load() != 4 {
		t.Fatalf("through a flaky proxy: %d after %d requests\n%s%s", code, n.Load(), out, errs)
	}
	if d := time.Since(started); d < time.Second {
		t.Fatalf("Retry-After: 1 was not waited for (%s)", d)
	}
	s.stop()
	code, out, errs = run(t, env, export("agent-r"), "ingest", "--server", s.url, "--attempts", "2")
	if code != 4 || !strings.Contains(errs, "lines 1-9 not recorded after 2 attempt(s): cannot reach") ||
		out != "standard input: 0 accepted, 0 duplicates, 0 superseded, 0 rejected\n" {
		t.Fatalf("server gone: %d\n%s%s", code, out, errs)
	}
}

// TestClockSkew: through the real server, an event dated 2031 is rejected
// with the reason and its id; one within the allowance is recorded; the
// allowance is --max-clock-skew.
func TestClockSkew(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "swarmscore.db")
	s := start(t, dsn, "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	op := s.client(adminToken)
	soon := time.Now().Add(2 * time.Minute)
	far := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	res, err := op.IngestEvents(ctx, []client.Event{
		client.ConduitSession("soon", "agent-s", "VERIFIED", time.Now(), soon),
		client.ConduitSession("far", "agent-s", "VERIFIED", time.Now(), far),
	})
	if err != nil || res.Accepted != 1 || len(res.Rejected) != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	r := res.Rejected[0]
	if r.Index != 1 || r.ID != "far" || !strings.HasPrefix(r.Reason, "completed_at: 2031-01-01T00:00:00Z is later than the server's clock") ||
		!strings.Contains(r.Reason, "allowed clock skew of 5m0s") {
		t.Fatalf("rejection %+v", r)
	}
	s.stop()

	s = startArgs(t, dsn, []string{"--max-clock-skew", "30s"}, "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	res, err = s.client(adminToken).IngestEvents(ctx, []client.Event{client.ConduitSession("soon-2", "agent-s", "RUNNING", soon, time.Time{})})
	if err != nil || res.Accepted != 0 || len(res.Rejected) != 1 || !strings.Contains(res.Rejected[0].Reason, "started_at") ||
		!strings.Contains(res.Rejected[0].Reason, "clock skew of 30s") {
		t.Fatalf("30 s allowance: %+v %v", res, err)
	}
	if !strings.Contains(s.logs.String(), `"max_clock_skew":"30s"`) {
		t.Fatalf("the start-up line does not say the allowance:\n%s", s.logs)
	}
	s.stop()
}

// TestEventsBOM: a body that starts with a UTF-8 byte-order mark (as some
// editors save NDJSON and JSON files) is accepted.
func TestEventsBOM(t *testing.T) {
	s := start(t, "sqlite:"+filepath.Join(t.TempDir(), "swarmscore.db"), "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	lines := strings.Split(strings.TrimSpace(export("agent-bom")), "\n")
	for _, body := range []string{"\xef\xbb\xbf" + lines[0] + "\n" + lines[1] + "\n", "\xef\xbb\xbf[" + lines[4] + "]"} {
		req, _ := http.NewRequest("POST", s.url+"/swarmscore/events", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var res client.IngestResult
		if err := json.Unmarshal(b, &res); err != nil || resp.StatusCode != 200 || len(res.Rejected) != 0 || res.Accepted == 0 {
			t.Errorf("%q: %d %s", body[:12], resp.StatusCode, b)
		}
	}
	s.stop()
}
