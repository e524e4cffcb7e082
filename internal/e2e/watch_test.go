package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSQLiteIngestProcess writes with `swarmscore ingest`, another process
// on the file a serve process is serving: serve's very next certificate
// request sees the write (the WAL index it watches changes at commit).
func TestSQLiteIngestProcess(t *testing.T) {
	ctx := context.Background()
	db := "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	env := []string{"SWARMSCORE_ADMIN_TOKEN=" + adminToken, "SWARMSCORE_SIGNING_KEY=" + signingKey}
	s := start(t, db, env...)
	op, pub := s.client(adminToken), s.client("")
	if res, err := op.IngestEvents(ctx, history("agent-sq")); err != nil || res.Accepted != 120 {
		t.Fatalf("ingest via serve: %+v %v", res, err)
	}
	cert, err := pub.Certificate(ctx, "agent-sq")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if again, err := pub.Certificate(ctx, "agent-sq"); err != nil || !bytes.Equal(again.Raw, cert.Raw) {
			t.Fatalf("served again: %v", err)
		}
	}

	// Two rounds: the second shows that the first ingest process, closing
	// its connection, left serve watching the live WAL index (SQLite would
	// delete and recreate it only if serve's connections were all closed).
	end := time.Now().UTC().Add(-time.Second).Truncate(time.Second).Format(time.RFC3339)
	for round, n := range []int{20, 1} {
		var lines bytes.Buffer
		for i := range n {
			fmt.Fprintf(&lines, `{"type":"conduit_session","id":"agent-sq-cli-%d-%d","agent_id":"agent-sq","status":"VERIFIED","started_at":%q,"completed_at":%q}`+"\n",
				round, i, t0.Format(time.RFC3339), end)
		}
		file := filepath.Join(t.TempDir(), "events.ndjson")
		if err := os.WriteFile(file, lines.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "ingest", "--db", db, file)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("swarmscore ingest: %v\n%s", err, out)
		}
		fresh, err := pub.Certificate(ctx, "agent-sq")
		if err != nil || bytes.Equal(fresh.Raw, cert.Raw) {
			t.Fatalf("round %d: serve's next request after another process's ingest serves the stale certificate: %v", round, err)
		}
		cert = fresh
		for range 3 { // remembered again
			if again, err := pub.Certificate(ctx, "agent-sq"); err != nil || !bytes.Equal(again.Raw, cert.Raw) {
				t.Fatalf("round %d: served again: %v", round, err)
			}
		}
	}
	// 76+20+1 VERIFIED of 101 sessions, 38/40 AP2: 385 + 456 = 841.
	if sc, err := pub.Score(ctx, "agent-sq"); err != nil || sc.Conduit().Total != 101 {
		t.Fatalf("score: %+v %v", sc, err)
	}
	s.stop()
}
