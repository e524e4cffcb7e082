package e2e

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/client"
	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
)

// notifyBound is how long a serve process may take to see another
// process's write on PostgreSQL: the delivery of the write's notification,
// a millisecond in practice.
const notifyBound = 2 * time.Second

// freshCertificate polls c until it serves another certificate than old,
// for at most within.
func freshCertificate(t *testing.T, c *client.Client, agent string, old []byte, within time.Duration) *client.Certificate {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, err := c.Certificate(context.Background(), agent)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Raw, old) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the old certificate is still served %s after the write", within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTwoServersOnePostgres runs two `serve` processes on one PostgreSQL
// database: an event written through one invalidates the cached score and
// certificate that the other serves.
func TestTwoServersOnePostgres(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	env := []string{"SWARMSCORE_ADMIN_TOKEN=" + adminToken, "SWARMSCORE_SIGNING_KEY=" + signingKey}
	a := start(t, dsn, env...)
	b := start(t, dsn, env...)
	opA := a.client(adminToken)
	pubB := b.client("")

	if res, err := opA.IngestEvents(ctx, history("agent-pg")); err != nil || res.Accepted != 120 {
		t.Fatalf("ingest via A: %+v %v", res, err)
	}
	sc, err := pubB.Score(ctx, "agent-pg")
	if err != nil || sc.Score != 760 {
		t.Fatalf("score via B: %+v %v", sc, err)
	}
	cert, err := pubB.Certificate(ctx, "agent-pg")
	if err != nil {
		t.Fatal(err)
	}
	// B serves it again from memory (the stamp is unchanged); A reads the
	// passport B issued: the cache is shared.
	if again, err := pubB.Certificate(ctx, "agent-pg"); err != nil || !bytes.Equal(again.Raw, cert.Raw) {
		t.Fatalf("B serves another passport the second time: %v", err)
	}
	certA, err := a.client("").Certificate(ctx, "agent-pg")
	if err != nil || !bytes.Equal(certA.Raw, cert.Raw) {
		t.Fatalf("A serves another passport than B issued: %v", err)
	}
	if v, err := a.client("").Verify(ctx, cert.Raw, "agent-pg"); err != nil || !v.Valid {
		t.Fatalf("A does not verify B's passport: %+v %v", v, err)
	}

	// 20 more VERIFIED sessions via A: conduit 96/100 → 384 + 456 = 840.
	var more []client.Event
	end := time.Now().UTC().Add(-time.Second).Truncate(time.Second)
	for i := 0; i < 20; i++ {
		more = append(more, client.ConduitSession("agent-pg-more-"+string(rune('a'+i)), "agent-pg", "VERIFIED", t0, end))
	}
	if res, err := opA.IngestEvents(ctx, more); err != nil || res.Accepted != 20 {
		t.Fatalf("second ingest via A: %+v %v", res, err)
	}
	// B learns of A's write when its notification arrives (a millisecond
	// in practice), and serves a new certificate from then on.
	fresh := freshCertificate(t, pubB, "agent-pg", cert.Raw, notifyBound)
	sc, err = pubB.Score(ctx, "agent-pg")
	if err != nil || sc.Score != 840 || sc.Conduit().Total != 100 {
		t.Fatalf("B serves a stale score after A's write: %+v %v", sc, err)
	}
	if v, err := a.client("").Verify(ctx, fresh.Raw, "agent-pg"); err != nil || !v.Valid {
		t.Fatalf("fresh certificate: %+v %v", v, err)
	}
	a.stop()
	b.stop()
}

// TestPostgresListenerDown ends the cache listeners of two serve processes
// and keeps them from reconnecting: B then reads the store for every
// certificate, so A's write (whose notification B never receives) is
// served by B's very next request. Once the listeners are back, writes are
// seen by notification again.
func TestPostgresListenerDown(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	env := []string{"SWARMSCORE_ADMIN_TOKEN=" + adminToken, "SWARMSCORE_SIGNING_KEY=" + signingKey}
	a := start(t, dsn, env...)
	b := start(t, dsn, env...)
	opA := a.client(adminToken)
	pubB := b.client("")
	if res, err := opA.IngestEvents(ctx, history("agent-ld")); err != nil || res.Accepted != 120 {
		t.Fatalf("ingest via A: %+v %v", res, err)
	}
	cert, err := pubB.Certificate(ctx, "agent-ld")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 { // warm: B remembers it and its listener vouches
		if again, err := pubB.Certificate(ctx, "agent-ld"); err != nil || !bytes.Equal(again.Raw, cert.Raw) {
			t.Fatalf("B again: %v", err)
		}
	}

	admin := pgtest.NewAdmin(t, dsn)
	listeners := func() int { return admin.Sessions(postgres.ListenerApplicationName) }
	// Each listener connects in the background, so give them a moment.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n := listeners()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d listeners after 5 s, want one per serve process", n)
		}
	}
	admin.AllowConnections(false)
	t.Cleanup(func() { admin.AllowConnections(true) })
	admin.Terminate(postgres.ListenerApplicationName)
	// However the loss reaches B (at once here, as an end of stream), B
	// stops trusting its memory within the listener's liveness (1 s).
	time.Sleep(1500 * time.Millisecond)
	if n := listeners(); n != 0 {
		t.Fatalf("%d listeners reconnected to a database refusing connections", n)
	}

	// 20 more VERIFIED sessions via A: conduit 96/100 → 840.
	var more []client.Event
	end := time.Now().UTC().Add(-time.Second).Truncate(time.Second)
	for i := 0; i < 20; i++ {
		more = append(more, client.ConduitSession("agent-ld-more-"+string(rune('a'+i)), "agent-ld", "VERIFIED", t0, end))
	}
	if res, err := opA.IngestEvents(ctx, more[:10]); err != nil || res.Accepted != 10 {
		t.Fatalf("ingest via A, listeners down: %+v %v", res, err)
	}
	fresh, err := pubB.Certificate(ctx, "agent-ld")
	if err != nil || bytes.Equal(fresh.Raw, cert.Raw) {
		t.Fatalf("listeners down: B's next request serves the stale certificate: %v", err)
	}

	// Listeners back: a write is seen by notification again.
	admin.AllowConnections(true)
	deadline := time.Now().Add(10 * time.Second)
	for listeners() != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the listeners did not reconnect within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := pubB.Certificate(ctx, "agent-ld"); err != nil {
		t.Fatal(err)
	}
	if res, err := opA.IngestEvents(ctx, more[10:]); err != nil || res.Accepted != 10 {
		t.Fatalf("ingest via A, listeners back: %+v %v", res, err)
	}
	last := freshCertificate(t, pubB, "agent-ld", fresh.Raw, notifyBound)
	if v, err := a.client("").Verify(ctx, last.Raw, "agent-ld"); err != nil || !v.Valid {
		t.Fatalf("last certificate: %+v %v", v, err)
	}
	if sc, err := pubB.Score(ctx, "agent-ld"); err != nil || sc.Score != 840 {
		t.Fatalf("score via B: %+v %v", sc, err)
	}
	a.stop()
	b.stop()
}
