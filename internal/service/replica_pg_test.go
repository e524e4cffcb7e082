package service

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgcluster"
	"github.com/swarmscore/swarmscore/passport"
)

// TestCertificateReadReplica runs the certificate route's use case on a
// store whose public reads go to a real streaming replica (a cluster of
// its own and a pg_basebackup -R copy of it), and checks what a reader
// sees while the replica lags (its replay paused): never a certificate
// older than an invalidation this process has seen, whether it wrote it
// itself or heard of it from the primary, while agents with no such
// invalidation are still read from the replica.
func TestCertificateReadReplica(t *testing.T) {
	ctx := context.Background()
	primary := pgcluster.Start(t)
	replica := primary.Replica(t)
	primary.Exec(t, "postgres", "CREATE DATABASE swarmscore")
	dsn, readDSN := primary.DSN("swarmscore"), replica.DSN("swarmscore")
	caughtUp(t, primary.DSN("postgres"), replica.DSN("postgres"))

	c := &testClock{time.Now().UTC().Truncate(time.Second)}
	key, err := passport.NewKey([]byte(testKey))
	if err != nil {
		t.Fatal(err)
	}
	open := func() *postgres.Store {
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// other is another serving process, on the primary alone.
	other := New(open(), Config{Now: c.now, Key: key, Platform: "test.example"})
	st := open()
	if err := st.AttachReplica(ctx, dsn); err == nil {
		t.Fatal("AttachReplica accepted the primary as its replica")
	}
	if err := st.AttachReplica(ctx, readDSN); err != nil {
		t.Fatal(err)
	}
	u := New(st, Config{Now: c.now, Key: key, Platform: "test.example"})

	end := c.t.Add(-24 * time.Hour)
	for _, a := range []string{"agent-1", "agent-2", "agent-3"} {
		ingest(t, other, append(conduit(a, a+"-c", 80, 76, end), ap2(a, a+"-t", 40, 38, end)...))
		if _, err := other.Certificates.Certificate(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	caughtUp(t, dsn, readDSN)
	cert := func(api *UseCases, agent string) Certificate {
		t.Helper()
		got, err := api.Certificates.Certificate(ctx, agent)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// Once the listener has settled what it saw at subscription, reads go
	// to the replica: the passport other issued is served as it is.
	var first Certificate
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		before := readsOf(t, st).Replica
		fresh := New(st, Config{Now: c.now, Key: key, Platform: "test.example"})
		first = cert(fresh, "agent-1")
		if readsOf(t, st).Replica > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no read went to the replica: %+v", readsOf(t, st))
		}
	}
	if first.Issued {
		t.Fatal("the replica's passport was not served: a new one was issued")
	}
	if got := cert(u, "agent-1"); !bytes.Equal(got.Passport, first.Passport) {
		t.Fatal("u serves another passport than the one stored")
	}
	second := cert(u, "agent-2")

	replica.Exec(t, "postgres", "SELECT pg_wal_replay_pause()")
	t.Cleanup(func() { replica.Exec(t, "postgres", "SELECT pg_wal_replay_resume()") })

	// A write of this process: its very next read is held to it.
	ingest(t, u, conduit("agent-1", "own", 1, 0, end))
	mine := cert(u, "agent-1")
	if bytes.Equal(mine.Passport, first.Passport) || !mine.Issued {
		t.Fatal("after its own write, the process served the certificate the write invalidated")
	}
	if p := verifyOK(t, u, mine.Passport, "agent-1"); p.Counts().ConduitTotal != 81 {
		t.Fatalf("the new certificate counts %+v", p.Counts())
	}

	// Another process's write: seen when its notification arrives (u
	// serves agent-2's certificate from memory until then), and from then
	// on never the older certificate again, though the replica still has
	// only that one.
	ingest(t, other, conduit("agent-2", "theirs", 1, 0, end))
	var seen bool
	for deadline := time.Now().Add(notifyBound); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		got := cert(u, "agent-2")
		switch {
		case !bytes.Equal(got.Passport, second.Passport):
			seen = true
		case seen:
			t.Fatal("served a certificate older than an invalidation already seen")
		}
	}
	if !seen {
		t.Fatalf("the other process's write was never seen within %s", notifyBound)
	}

	// agent-3 was not invalidated: with replay still paused, a process that
	// remembers nothing reads its certificate from the replica.
	before := readsOf(t, st)
	fresh := New(st, Config{Now: c.now, Key: key, Platform: "test.example"})
	if got := cert(fresh, "agent-3"); got.Issued {
		t.Fatal("agent-3's stored passport was not served")
	}
	if after := readsOf(t, st); after.Replica <= before.Replica {
		t.Fatalf("agent-3 was not read from the replica: %+v then %+v", before, after)
	}
	if readsOf(t, st).Lagged == 0 {
		t.Fatal("no read was sent to the primary for lag")
	}

	// Replay resumes: agent-1's reads go back to the replica.
	replica.Exec(t, "postgres", "SELECT pg_wal_replay_resume()")
	caughtUp(t, dsn, readDSN)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		before := readsOf(t, st).Replica
		fresh := New(st, Config{Now: c.now, Key: key, Platform: "test.example"})
		cert(fresh, "agent-1")
		if readsOf(t, st).Replica > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent-1 is never read from the replica again: %+v", readsOf(t, st))
		}
	}
	t.Logf("reads: %+v", readsOf(t, st))
}

func readsOf(t *testing.T, s *postgres.Store) ledger.ReplicaStats {
	t.Helper()
	st, ok := s.ReplicaStats()
	if !ok {
		t.Fatal("no replica attached")
	}
	return st
}

// caughtUp waits until the replica has replayed the primary's current WAL.
func caughtUp(t *testing.T, primary, replica string) {
	t.Helper()
	ctx := context.Background()
	lsnOf := func(dsn, sql string) string {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var s string
		if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	want := lsnOf(primary, "SELECT pg_current_wal_lsn()::text")
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
