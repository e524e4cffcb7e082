package e2e

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/client"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
)

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
	// A serves the passport B issued: the cache is shared.
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
	sc, err = pubB.Score(ctx, "agent-pg")
	if err != nil || sc.Score != 840 || sc.Conduit.Total != 100 {
		t.Fatalf("B serves a stale score after A's write: %+v %v", sc, err)
	}
	fresh, err := pubB.Certificate(ctx, "agent-pg")
	if err != nil || bytes.Equal(fresh.Raw, cert.Raw) {
		t.Fatalf("B serves the stale certificate after A's write: %v", err)
	}
	if v, err := a.client("").Verify(ctx, fresh.Raw, "agent-pg"); err != nil || !v.Valid {
		t.Fatalf("fresh certificate: %+v %v", v, err)
	}
	a.stop()
	b.stop()
}
