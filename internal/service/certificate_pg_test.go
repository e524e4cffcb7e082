package service

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
)

// notifyBound is how long another process's write may take to be seen on
// PostgreSQL (the notification's delivery; a millisecond in practice).
const notifyBound = 2 * time.Second

// TestCertificateTwoInstancesPostgres runs two UseCases instances on one
// PostgreSQL database, as two `serve` processes would: B serves its
// remembered certificate with no query while its listener vouches, sees A's
// write within notifyBound, and reads the stamp on every request while its
// listener is down, so that it sees A's writes at once even though their
// notifications never reach it.
func TestCertificateTwoInstancesPostgres(t *testing.T) {
	ctx := context.Background()
	c := &testClock{time.Now().UTC().Truncate(time.Second)}
	dsn := pgtest.NewDatabase(t)
	a, b, sb := twoInstances(t, func(ctx context.Context, dsn string) (Backend, error) { return postgres.Open(ctx, dsn) }, dsn, c)
	end := c.t.Add(-24 * time.Hour)
	ingest(t, a, append(conduit("agent-1", "c", 80, 76, end), ap2("agent-1", "t", 40, 38, end)...))

	cert := func(name string) Certificate {
		t.Helper()
		got, err := b.Certificates.Certificate(ctx, "agent-1")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return got
	}
	// fresh polls B until it serves another passport than old.
	fresh := func(name string, old []byte) Certificate {
		t.Helper()
		deadline := time.Now().Add(notifyBound)
		for {
			got := cert(name)
			if !bytes.Equal(got.Passport, old) {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: B still serves the old certificate after %s", name, notifyBound)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// fromMemory waits until B serves 10 requests in a row with no query.
	fromMemory := func(name string) Certificate {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			before := sb.stamps.Load()
			var got Certificate
			for range 10 {
				got = cert(name)
			}
			if sb.stamps.Load() == before {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: B never serves from memory", name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	b1 := fromMemory("B from memory")
	if p := verifyOK(t, a, b1.Passport, "agent-1"); p.Score.Value != 760 {
		t.Fatalf("score %d", p.Score.Value)
	}

	// A's terminal report reaches B by notification.
	ingest(t, a, conduit("agent-1", "late", 1, 0, end))
	b2 := fresh("after A's ingest", b1.Passport)
	if p := verifyOK(t, a, b2.Passport, "agent-1"); p.Counts().ConduitTotal != 81 {
		t.Fatalf("counts %+v", p.Counts())
	}
	b2 = fromMemory("B from memory again")

	// Take B's listener down and keep it down: the database refuses new
	// connections (the pools keep theirs) and the listeners are ended.
	admin := pgtest.NewAdmin(t, dsn)
	admin.AllowConnections(false)
	t.Cleanup(func() { admin.AllowConnections(true) })
	admin.Terminate(postgres.ListenerApplicationName)
	w := b.Certificates.certs.cacheWatch()
	deadline := time.Now().Add(2 * time.Second)
	for {
		if _, ok := w.Mark(); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("B's watch still vouches with its listener ended")
		}
		time.Sleep(time.Millisecond)
	}
	before := sb.stamps.Load()
	for range 3 {
		if got := cert("listener down"); !bytes.Equal(got.Passport, b2.Passport) {
			t.Fatal("listener down, nothing written: another certificate")
		}
	}
	if n := sb.stamps.Load() - before; n != 3 {
		t.Fatalf("listener down: 3 requests read %d stamps, want 3", n)
	}
	ingest(t, a, conduit("agent-1", "later", 1, 1, end))
	b3 := cert("listener down, after A's ingest")
	if bytes.Equal(b3.Passport, b2.Passport) {
		t.Fatal("B served its remembered certificate after A's write while its listener was down")
	}

	// Back up: B trusts its memory again.
	admin.AllowConnections(true)
	fromMemory("listener back")
	if _, ok := w.Mark(); !ok {
		t.Fatal("listener back: the watch does not vouch")
	}
}
