package service

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// countsStore counts the window counts a history takes.
type countsStore struct {
	Backend
	counts atomic.Int64
}

func (s *countsStore) Counts(ctx context.Context, agentID string, asOf time.Time) (score.Counts, error) {
	s.counts.Add(1)
	return s.Backend.Counts(ctx, agentID, asOf)
}

func TestPublicProfileHistory(t *testing.T) {
	a, c := newUseCases(t)
	cs := &countsStore{Backend: a.store}
	a = New(cs, a.cfg)
	ctx := context.Background()
	c.t = time.Date(2026, 6, 15, 13, 30, 0, 0, time.UTC)
	// Events spread over 120 days, so some leave the window within the
	// history and the score rises and falls; one lands on a day's last
	// microsecond and one on the next day's first.
	var evs []ledger.Event
	for d := 0; d < 120; d += 3 {
		end := c.t.AddDate(0, 0, -d).Add(-time.Duration(d) * time.Minute)
		evs = append(evs, conduit("agent-1", "c"+itoa(d), 2, 1+d%2, end)...)
		if d%9 == 0 {
			evs = append(evs, ap2("agent-1", "t"+itoa(d), 3, 2, end)...)
		}
	}
	edge := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	evs = append(evs, conduit("agent-1", "edge-a", 1, 1, edge.Add(-ledger.Resolution))...)
	evs = append(evs, conduit("agent-1", "edge-b", 1, 1, edge)...)
	ingest(t, a, evs)

	p, err := a.Certificates.PublicProfile(ctx, "agent-1", true)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Valid || len(p.Problems) != 0 || p.Info.ID != "agent-1" {
		t.Fatalf("profile: valid %v problems %v info %+v", p.Valid, p.Problems, p.Info)
	}
	if got := cs.counts.Load(); got != HistoryDays-1 {
		t.Fatalf("first history counted %d windows, want %d", got, HistoryDays-1)
	}
	// check compares p's history with the existing as-of use case, one
	// day at a time (it counts windows itself).
	check := func(p Profile) {
		t.Helper()
		if len(p.History) != HistoryDays {
			t.Fatalf("%d points", len(p.History))
		}
		today := c.t.Truncate(24 * time.Hour)
		for i, d := range p.History {
			wantDay := today.AddDate(0, 0, i-(HistoryDays-1))
			if !d.Day.Equal(wantDay) {
				t.Fatalf("point %d is day %s, want %s", i, d.Day, wantDay)
			}
			// The reference: the existing as-of use case, one day at a
			// time.
			asOf := wantDay.Add(24*time.Hour - ledger.Resolution)
			if i == HistoryDays-1 {
				asOf = c.t
			}
			ref, err := a.Certificates.AgentScore(ctx, "agent-1", asOf)
			if err != nil {
				t.Fatal(err)
			}
			if !d.AsOf.Equal(asOf) || d.Result != ref.Entry.Result {
				t.Fatalf("day %s: as of %s %+v, want as of %s %+v", wantDay.Format(time.DateOnly), d.AsOf, d.Result, asOf, ref.Entry.Result)
			}
		}
		if p.History[HistoryDays-1].Result != p.Result {
			t.Fatalf("today %+v, certificate %+v", p.History[HistoryDays-1].Result, p.Result)
		}
	}
	check(p)
	distinct := map[int]bool{}
	for _, d := range p.History {
		distinct[d.Result.Score] = true
	}
	if len(distinct) < 5 {
		t.Fatalf("the seeded history is too flat to test anything: %v", distinct)
	}

	// Again: nothing new, nothing counted.
	cs.counts.Store(0)
	p, err = a.Certificates.PublicProfile(ctx, "agent-1", true)
	if err != nil {
		t.Fatal(err)
	}
	if n := cs.counts.Load(); n != 0 {
		t.Fatalf("an unchanged agent's history counted %d windows", n)
	}
	check(p)
	// The next day: one new past day.
	c.t = c.t.Add(24 * time.Hour)
	cs.counts.Store(0)
	if p, err = a.Certificates.PublicProfile(ctx, "agent-1", true); err != nil {
		t.Fatal(err)
	}
	if n := cs.counts.Load(); n != 1 {
		t.Fatalf("a day later the history counted %d windows, want 1", n)
	}
	check(p)
	// A report dated in the past changes the past: everything is counted
	// again, and the new event shows on the days it counts.
	ingest(t, a, conduit("agent-1", "late", 1, 1, c.t.AddDate(0, 0, -40)))
	cs.counts.Store(0)
	if p, err = a.Certificates.PublicProfile(ctx, "agent-1", true); err != nil {
		t.Fatal(err)
	}
	if n := cs.counts.Load(); n != HistoryDays-1 {
		t.Fatalf("after a new report the history counted %d windows", n)
	}
	check(p)
	// Without history nothing is counted.
	cs.counts.Store(0)
	if p, err = a.Certificates.PublicProfile(ctx, "agent-1", false); err != nil || p.History != nil || cs.counts.Load() != 0 {
		t.Fatalf("no history: %d points, %d counts, %v", len(p.History), cs.counts.Load(), err)
	}
}

func TestPublicProfileHidesUnlisted(t *testing.T) {
	a, c := newUseCases(t)
	ctx := context.Background()
	ingest(t, a, append(conduit("shy", "c", 10, 9, t0), conduit("open", "o", 10, 9, t0)...))
	if err := a.store.SetVisibility(ctx, "shy", ledger.VisibilityUnlisted, c.t); err != nil {
		t.Fatal(err)
	}
	_, errShy := a.Certificates.PublicProfile(ctx, "shy", false)
	_, errGhost := a.Certificates.PublicProfile(ctx, "ghost", false)
	if !errors.Is(errShy, errkind.ErrNotFound) || !errors.Is(errGhost, errkind.ErrNotFound) {
		t.Fatalf("unlisted: %v; unknown: %v", errShy, errGhost)
	}
	// The same words for both, so the answer does not tell them apart.
	if want := `not found: agent "shy" has no public score`; errShy.Error() != want {
		t.Fatalf("unlisted: %q, want %q", errShy, want)
	}
	if want := `not found: agent "ghost" has no public score`; errGhost.Error() != want {
		t.Fatalf("unknown: %q, want %q", errGhost, want)
	}
	if _, err := a.Certificates.PublicProfile(ctx, "bad id", false); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("bad id: %v", err)
	}
	if p, err := a.Certificates.PublicProfile(ctx, "open", false); err != nil || p.Result.Counts.ConduitTotal != 10 {
		t.Fatalf("public agent: %+v %v", p.Result, err)
	}
}

func itoa(n int) string { return string(rune('a'+n/26)) + string(rune('a'+n%26)) }
