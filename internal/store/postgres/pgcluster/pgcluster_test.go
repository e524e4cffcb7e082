package pgcluster

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestReplica: a row written on the primary reaches the replica, which
// refuses writes; with replay paused it does not, until replay resumes.
func TestReplica(t *testing.T) {
	p := Start(t)
	r := p.Replica(t)
	if r.Port == p.Port {
		t.Fatalf("replica on the primary's port %d", p.Port)
	}
	ctx := context.Background()
	p.Exec(t, "postgres", "CREATE TABLE t (v int); INSERT INTO t VALUES (1)")
	seen := func() int {
		var n int
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if err := query(ctx, r.DSN("postgres"), "SELECT count(*) FROM t", &n); err == nil || time.Now().After(deadline) {
				return n
			}
		}
	}
	if n := seen(); n != 1 {
		t.Fatalf("replica sees %d rows, want 1", n)
	}
	var ro bool
	if err := query(ctx, r.DSN("postgres"), "SELECT pg_is_in_recovery()", &ro); err != nil || !ro {
		t.Fatalf("replica in recovery: %v %v", ro, err)
	}
	r.Exec(t, "postgres", "SELECT pg_wal_replay_pause()")
	p.Exec(t, "postgres", "INSERT INTO t VALUES (2)")
	time.Sleep(200 * time.Millisecond)
	if n := seen(); n != 1 {
		t.Fatalf("replay paused, replica sees %d rows, want 1", n)
	}
	r.Exec(t, "postgres", "SELECT pg_wal_replay_resume()")
	for deadline := time.Now().Add(10 * time.Second); seen() != 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("replay resumed, the second row never arrived")
		}
	}
}

// TestDropped: a cluster is gone, directory and configuration, after its
// test.
func TestDropped(t *testing.T) {
	var c *Cluster
	t.Run("make", func(t *testing.T) { c = Start(t) })
	if c == nil {
		t.Skip("no cluster was made")
	}
	for _, p := range []string{c.Dir, "/etc/postgresql/" + Version + "/" + c.Name} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there after the test: %v", p, err)
		}
	}
}
