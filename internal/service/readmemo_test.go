package service

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/ledger"
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

// TestAgentPageFromMemory runs two instances on one database, as two
// `serve` processes: B serves agent-1's public page (PublicProfile with
// history, then ProfileWindow) with no store read at all while its watch
// vouches for what it remembers; an appeal A files against the agent's
// passport is named on B's page (within notifyBound), and is gone from it
// once A rejects it; and once B's page is served from memory again, no
// read is made.
func TestAgentPageFromMemory(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testAgentPageFromMemory(t, func(ctx context.Context, dsn string) (Backend, error) { return sqlite.Open(ctx, dsn) },
			"sqlite:"+filepath.Join(t.TempDir(), "shared.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		testAgentPageFromMemory(t, func(ctx context.Context, dsn string) (Backend, error) { return postgres.Open(ctx, dsn) },
			pgtest.NewDatabase(t))
	})
}

func testAgentPageFromMemory(t *testing.T, open func(context.Context, string) (Backend, error), dsn string) {
	ctx := context.Background()
	c := &testClock{time.Now().UTC().Truncate(time.Second)}
	a, b, sb := twoInstances(t, open, dsn, c)
	ingest(t, a, append(conduit("agent-1", "c", 80, 76, c.t.Add(-24*time.Hour)), ap2("agent-1", "t", 40, 38, c.t.Add(-24*time.Hour))...))
	page := func(name string) (w Window, queries int64) {
		t.Helper()
		before := sb.queries()
		p, err := b.Certificates.PublicProfile(ctx, "agent-1", true)
		if err != nil {
			t.Fatalf("%s: profile: %v", name, err)
		}
		if w, err = b.Certificates.ProfileWindow(ctx, &p); err != nil {
			t.Fatalf("%s: window: %v", name, err)
		}
		if p.Result.Score != 760 || len(p.History) != HistoryDays || w.Events() != 120 {
			t.Fatalf("%s: score %d, %d days, %d events; want 760, %d, 120", name, p.Result.Score, len(p.History), w.Events(), HistoryDays)
		}
		return w, sb.queries() - before
	}
	// untilQuiet serves B's page until ten in a row make no read.
	untilQuiet := func(name string, wantOpen int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second) // the watch may take a moment to start (PostgreSQL's listener)
		for n := 0; n < 10; {
			w, q := page(name)
			if len(w.OpenAppeals) != wantOpen {
				t.Fatalf("%s: %d open appeals, want %d", name, len(w.OpenAppeals), wantOpen)
			}
			if q == 0 {
				n++
				continue
			}
			n = 0
			if time.Now().After(deadline) {
				t.Fatalf("%s: B still reads the store to serve the page (%d reads)", name, q)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// untilOpen serves B's page until it names want open appeals.
	untilOpen := func(name string, want int) Window {
		t.Helper()
		deadline := time.Now().Add(notifyBound)
		for {
			w, _ := page(name)
			if len(w.OpenAppeals) == want {
				return w
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: B's page names %d open appeals %s after A's write, want %d", name, len(w.OpenAppeals), notifyBound, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	untilQuiet("before any appeal", 0)

	filed, err := a.Corrections.FileAppeal(ctx, OperatorCaller("market-1"), AppealFiling{PassportID: issued(t, a, "agent-1"),
		Grounds: appeal.IncorrectStatus, Statement: "c-77 was delivered", Events: []ledger.EventKey{{Type: ledger.ConduitSession, ID: "c-77"}}})
	if err != nil {
		t.Fatal(err)
	}
	if w := untilOpen("after A files", 1); w.OpenAppeals[0].ID != filed.ID || w.OpenAppeals[0].State != appeal.Submitted {
		t.Fatalf("after A files: open appeals %+v, want %s submitted", w.OpenAppeals, filed.ID)
	}
	untilQuiet("appeal open", 1)

	if _, _, err := a.Corrections.ActOnAppeal(ctx, filed.ID, OperatorCaller("ops-1"), AppealDecision{Action: appeal.Reject, Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	untilOpen("after A rejects", 0)
	untilQuiet("appeal closed", 0)
}
