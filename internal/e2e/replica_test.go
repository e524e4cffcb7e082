package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/client"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgcluster"
)

// TestServeReadReplica runs `serve --db PRIMARY --db-read REPLICA` on a
// real streaming replica (pgcluster: pg_createcluster and pg_basebackup
// -R on ports of their own): certificates are served and verify; with the
// replica's replay paused, an operator's ingest is still seen by the very
// next certificate request (read from the primary), while the replica
// answers for the agents nobody wrote. A --db-read that is not a standby,
// or beside an SQLite --db, is refused at start.
func TestServeReadReplica(t *testing.T) {
	ctx := context.Background()
	primary := pgcluster.Start(t)
	replica := primary.Replica(t)
	primary.Exec(t, "postgres", "CREATE DATABASE swarmscore")
	dsn, readDSN := primary.DSN("swarmscore"), replica.DSN("swarmscore")
	waitReplayed(t, primary.DSN("postgres"), replica.DSN("postgres"))

	s := startArgs(t, dsn, []string{"--db-read", readDSN}, serverEnv...)
	if !s.logged(`"db_read":"postgres://postgres@127.0.0.1:`) {
		t.Errorf("the listening line does not name the replica:\n%s", s.logs)
	}
	op, pub := s.client(adminToken), s.client("")
	for _, a := range []string{"replica-1", "replica-2"} {
		if _, err := op.IngestEvents(ctx, history(a)); err != nil {
			t.Fatal(err)
		}
		c, err := pub.Certificate(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := pub.Verify(ctx, c.Raw, a); err != nil || !v.Valid {
			t.Fatalf("verify %s: %+v %v", a, v, err)
		}
	}
	waitReplayed(t, dsn, readDSN)
	before, err := pub.Certificate(ctx, "replica-1")
	if err != nil {
		t.Fatal(err)
	}
	// Once the replica has replayed the writes this process made (their
	// LSNs are settled within a listener round trip), a verify's reads (the
	// passport by id, the agent's counts) go to it.
	for deadline := time.Now().Add(10 * time.Second); replicaReads(t, s)["replica"] == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no read went to the replica: %v", replicaReads(t, s))
		}
		if v, err := pub.Verify(ctx, before.Raw, "replica-1"); err != nil || !v.Valid {
			t.Fatalf("verify: %+v %v", v, err)
		}
	}

	replica.Exec(t, "postgres", "SELECT pg_wal_replay_pause()")
	t.Cleanup(func() { replica.Exec(t, "postgres", "SELECT pg_wal_replay_resume()") })
	late := client.ConduitSession("replica-1-late", "replica-1", "FAILED", t0, t0.Add(time.Minute))
	if res, err := op.IngestEvents(ctx, []client.Event{late}); err != nil || res.Accepted != 1 {
		t.Fatalf("ingest: %+v %v", res, err)
	}
	after, err := pub.Certificate(ctx, "replica-1")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(after.Raw, before.Raw) {
		t.Fatalf("the certificate after an ingest is the one before it: read from the lagging replica; reads %v\n%s\n%s", replicaReads(t, s), before.Raw, s.logs)
	}
	if v, err := pub.Verify(ctx, after.Raw, "replica-1"); err != nil || !v.Valid {
		t.Fatalf("verify the new certificate: %+v %v", v, err)
	}
	if _, err := pub.Certificate(ctx, "replica-2"); err != nil {
		t.Fatalf("replica-2 with replay paused: %v", err)
	}
	// The ranking reads from the replica too, and /metrics says so.
	if _, err := op.Agents(ctx, client.AgentsQuery{}); err != nil {
		t.Fatal(err)
	}
	if reads := replicaReads(t, s); reads["lagged"] == 0 {
		t.Errorf("swarmscore_db_replica_reads_total: %v; want reads sent to the primary for lag", reads)
	}

	// Refused at start, with one line on stderr.
	for _, tc := range []struct {
		name, db, read, want string
		code                 int
	}{
		{"not a standby", dsn, dsn, "is not a standby", 2},
		{"SQLite", "sqlite:" + filepath.Join(t.TempDir(), "s.db"), readDSN, "read replicas need PostgreSQL", 2},
	} {
		cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", tc.db, "--db-read", tc.read)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, serverEnv...)
		cmd.Dir = t.TempDir()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("%s: %v, stderr %q; want exit %d and %q", tc.name, err, stderr.String(), tc.code, tc.want)
			}
			if strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
				t.Errorf("%s: more than one line on stderr: %q", tc.name, stderr.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("%s: serve did not refuse to start", tc.name)
		}
	}
}

// replicaReads reads swarmscore_db_replica_reads_total by destination.
func replicaReads(t *testing.T, s *server) map[string]int {
	t.Helper()
	m, err := s.client("").Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, v := range regexp.MustCompile(`(?m)^swarmscore_db_replica_reads_total\{to="(\w+)"\} (\d+)$`).FindAllStringSubmatch(m, -1) {
		out[v[1]], _ = strconv.Atoi(v[2])
	}
	if len(out) != 4 {
		t.Fatalf("swarmscore_db_replica_reads_total: %v", out)
	}
	return out
}

// waitReplayed waits until the replica has replayed the primary's current
// WAL.
func waitReplayed(t *testing.T, primary, replica string) {
	t.Helper()
	ctx := context.Background()
	var want string
	conn, err := pgx.Connect(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	err = conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&want)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var ok bool
		conn, err := pgx.Connect(ctx, replica)
		if err == nil {
			err = conn.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", want).Scan(&ok)
			conn.Close(ctx)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not replay up to %s: %v", want, err)
		}
	}
}
