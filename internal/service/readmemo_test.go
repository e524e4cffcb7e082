package service

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

// TestScoreAndVerifyFromMemory runs two instances on one database, as two
// `serve` processes: B serves agent-1's certificate, then answers its
// score and verifies that certificate (L1 and L2) with no query while its
// watch vouches for the entry; after A records a report that changes the
// agent's counts, B's score is the new one (within notifyBound) and the
// old passport verifies as superseded, with the new score as current.
func TestScoreAndVerifyFromMemory(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testScoreAndVerifyFromMemory(t, func(ctx context.Context, dsn string) (Backend, error) { return sqlite.Open(ctx, dsn) },
			"sqlite:"+filepath.Join(t.TempDir(), "shared.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		testScoreAndVerifyFromMemory(t, func(ctx context.Context, dsn string) (Backend, error) { return postgres.Open(ctx, dsn) },
			pgtest.NewDatabase(t))
	})
}

func testScoreAndVerifyFromMemory(t *testing.T, open func(context.Context, string) (Backend, error), dsn string) {
	ctx := context.Background()
	c := &testClock{time.Now().UTC().Truncate(time.Second)}
	a, b, sb := twoInstances(t, open, dsn, c)
	ingest(t, a, append(conduit("agent-1", "c", 80, 76, c.t.Add(-24*time.Hour)), ap2("agent-1", "t", 40, 38, c.t.Add(-24*time.Hour))...))
	cert, err := b.Certificates.Certificate(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, wantScore int, wantWarnings []string) (queries int64) {
		t.Helper()
		before := sb.queries()
		e, err := b.Certificates.Score(ctx, "agent-1")
		if err != nil {
			t.Fatalf("%s: score: %v", name, err)
		}
		v, err := b.Verifier.Verify(ctx, cert.Passport, "agent-1")
		if err != nil {
			t.Fatalf("%s: verify: %v", name, err)
		}
		queries = sb.queries() - before
		if e.Result.Score != wantScore || !v.Valid || v.Current == nil || v.Current.Score != wantScore ||
			v.Checks.Result(CheckLedger) != CheckConfirmed || !slices.Equal(warningCodes(v), wantWarnings) {
			t.Fatalf("%s: score %d, verification %+v; want score %d, valid, ledger confirmed, warnings %v", name, e.Result.Score, v, wantScore, wantWarnings)
		}
		return queries
	}
	// The watch may take a moment to start (PostgreSQL's listener).
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n < 10; {
		if check("current", 760, nil) == 0 {
			n++
			continue
		}
		n = 0
		if time.Now().After(deadline) {
			t.Fatal("B still queries to answer the score and verify its current certificate")
		}
		time.Sleep(5 * time.Millisecond)
	}

	c.t = c.t.Add(time.Minute)
	ingest(t, a, conduit("agent-1", "late", 1, 1, c.t)) // one more VERIFIED session: 81/77, score 764
	deadline = time.Now().Add(notifyBound)
	for {
		e, err := b.Certificates.Score(ctx, "agent-1")
		if err != nil {
			t.Fatal(err)
		}
		if e.Result.Score != 760 {
			check("after a report", e.Result.Score, []string{CodeSuperseded})
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B still answers the old score %s after A's report", notifyBound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
