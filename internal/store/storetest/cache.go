package storetest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/score"
)

func refresh(t *testing.T, s service.Backend, agent string, asOf time.Time) ledger.ScoreEntry {
	t.Helper()
	e, err := s.RefreshScore(ctx(t), agent, asOf, nil)
	if err != nil {
		t.Fatalf("RefreshScore(%s, %s): %v", agent, asOf, err)
	}
	return e
}

func cached(t *testing.T, s service.Backend, agent string, asOf time.Time) (ledger.ScoreEntry, bool) {
	t.Helper()
	e, ok, err := s.CachedScore(ctx(t), agent, asOf)
	if err != nil {
		t.Fatalf("CachedScore(%s, %s): %v", agent, asOf, err)
	}
	return e, ok
}

func wantResult(t *testing.T, name string, got score.Result, c score.Counts) {
	t.Helper()
	want, err := score.Compute(c)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("%s: result %+v, want %+v", name, got, want)
	}
}

func testCache(t *testing.T, h Harness) {
	s := h.Open(t)
	d := 24 * time.Hour
	us := time.Microsecond
	wantOutcomes(t, ingest(t, s, "op-a",
		conduit("a1", "a", ledger.Verified, base.Add(-11*d), base.Add(-10*d)), // oldest counted
		conduit("a2", "a", ledger.Failed, base.Add(-2*d), base.Add(-d)),
		ap2("a3", "a", ledger.Settled, base.Add(-2*d), base.Add(-d)),
		conduit("b1", "b", ledger.Verified, base.Add(-90*d), base.Add(-89*d)), // leaves in one day
		conduit("b2", "b", ledger.Error, base.Add(-90*d), base.Add(-89*d-time.Hour)),
		conduit("c1", "c", ledger.Verified, base.Add(-2*time.Hour), base.Add(-time.Hour)),
		conduit("e1", "e", ledger.Pending, base.Add(-time.Hour), time.Time{}),
	), ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted)

	if _, ok := cached(t, s, "a", base); ok {
		t.Error("cache hit before any computation")
	}
	a := refresh(t, s, "a", base)
	wantResult(t, "a", a.Result, score.Counts{ConduitTotal: 2, ConduitSuccess: 1, AP2Total: 1, AP2Success: 1})
	if !a.ComputedAt.Equal(base) || !a.ExpiresAt.Equal(base.Add(7*d)) || !a.ValidUntil.Equal(base.Add(7*d)) {
		t.Errorf("entry a: computed %s expires %s valid until %s", a.ComputedAt, a.ExpiresAt, a.ValidUntil)
	}
	for _, at := range []time.Time{base, base.Add(time.Hour), base.Add(7*d - us)} {
		if e, ok := cached(t, s, "a", at); !ok || e.Result != a.Result || !e.ValidUntil.Equal(a.ValidUntil) {
			t.Errorf("as of %s: hit %v entry %+v", at, ok, e)
		}
	}
	for _, at := range []time.Time{base.Add(-us), base.Add(7 * d)} {
		if _, ok := cached(t, s, "a", at); ok {
			t.Errorf("as of %s: cache hit outside [computed_at, valid_until)", at)
		}
	}

	// The oldest counted event leaves the window one microsecond after
	// ended_at + 90 days: the entry must stop there.
	b := refresh(t, s, "b", base)
	leave := base.Add(-89 * d).Add(ledger.Window + us)
	if !b.ValidUntil.Equal(leave) {
		t.Errorf("entry b valid until %s, want %s", b.ValidUntil, leave)
	}
	if _, ok := cached(t, s, "b", leave.Add(-us)); !ok {
		t.Error("entry b not served while its oldest event is still counted")
	}
	if _, ok := cached(t, s, "b", leave); ok {
		t.Error("entry b served after its oldest event left the window")
	}
	if got := counts(t, s, "b", leave); got != [4]int64{} {
		t.Errorf("counts at %s = %v, want none", leave, got)
	}

	e := refresh(t, s, "e", base)
	wantResult(t, "e", e.Result, score.Counts{})
	if !e.ValidUntil.Equal(base.Add(7 * d)) {
		t.Errorf("entry e valid until %s", e.ValidUntil)
	}

	// A later refresh replaces the entry.
	later := refresh(t, s, "a", base.Add(d))
	if got, ok := cached(t, s, "a", base.Add(d)); !ok || !got.ComputedAt.Equal(later.ComputedAt) {
		t.Errorf("refreshed entry not served: %v %+v", ok, got)
	}
	if _, ok := cached(t, s, "a", base); ok {
		t.Error("an entry computed later answered an earlier as_of")
	}
}

// testCacheFutureEvent: an event that ends after as_of is not counted, and
// the entry stops being served the instant it enters the window.
func testCacheFutureEvent(t *testing.T, h Harness) {
	s := h.Open(t)
	d := 24 * time.Hour
	future := base.Add(3*d + 17*time.Microsecond)
	wantOutcomes(t, ingest(t, s, "op-a",
		conduit("c1", "a", ledger.Verified, base.Add(-2*d), base.Add(-d)),
		ap2("t1", "a", ledger.Settled, base.Add(-d), future),
	), ledger.OutcomeAccepted, ledger.OutcomeAccepted)
	e := refresh(t, s, "a", base)
	wantResult(t, "a", e.Result, score.Counts{ConduitTotal: 1, ConduitSuccess: 1})
	if !e.ValidUntil.Equal(future) {
		t.Errorf("valid until %s, want %s (when t1 enters the window)", e.ValidUntil, future)
	}
	if _, ok := cached(t, s, "a", future.Add(-time.Microsecond)); !ok {
		t.Error("entry not served just before the future event")
	}
	if _, ok := cached(t, s, "a", future); ok {
		t.Error("entry served at the instant the future event is counted")
	}
	if got := counts(t, s, "a", future); got != [4]int64{1, 1, 1, 1} {
		t.Errorf("counts at %s = %v", future, got)
	}
}

func testCacheInvalidation(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	c1 := conduit("c1", "a", ledger.Verified, start, end)
	ingest(t, s, "op-a", c1, conduit("x1", "x", ledger.Verified, start, end))
	refresh(t, s, "a", base)
	refresh(t, s, "x", base)

	ingest(t, s, "op-a", conduit("c2", "a", ledger.Running, start, time.Time{}), c1)
	if _, ok := cached(t, s, "a", base); !ok {
		t.Error("a non-terminal report or a duplicate invalidated the cache")
	}
	ingest(t, s, "op-a", conduit("c3", "a", ledger.Error, start, end))
	if _, ok := cached(t, s, "a", base); ok {
		t.Error("a new terminal report (even an uncounted ERROR) did not invalidate the cache")
	}
	if _, ok := cached(t, s, "x", base); !ok {
		t.Error("another agent's report invalidated x's cache")
	}
	refresh(t, s, "a", base)
	ingest(t, s, "op-a", conduit("c2", "a", ledger.Verified, start, end)) // a transition to terminal
	if _, ok := cached(t, s, "a", base); ok {
		t.Error("a transition to a terminal status did not invalidate the cache")
	}
	if e := refresh(t, s, "a", base); e.Result.Counts.ConduitTotal != 2 {
		t.Errorf("refreshed counts %+v", e.Result.Counts)
	}
}

func testIssue(t *testing.T, h Harness) {
	s := h.Open(t)
	ingest(t, s, "op-a", conduit("c1", "a", ledger.Verified, base.Add(-2*time.Hour), base.Add(-time.Hour)))
	var seen ledger.ScoreEntry
	e, err := s.RefreshScore(ctx(t), "a", base, func(e *ledger.ScoreEntry) ([]byte, string, error) {
		seen = *e
		return []byte(`{"agent_id":"a"}`), "abc123", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen.AgentID != "a" || !seen.ComputedAt.Equal(base) || seen.Result.Counts.ConduitTotal != 1 || !seen.ValidUntil.Equal(e.ValidUntil) {
		t.Errorf("issue saw %+v", seen)
	}
	got, ok := cached(t, s, "a", base)
	if !ok || string(got.Passport) != `{"agent_id":"a"}` || got.Signature != "abc123" {
		t.Errorf("cached passport %q %q (hit %v)", got.Passport, got.Signature, ok)
	}
	boom := errors.New("signing failed")
	if _, err := s.RefreshScore(ctx(t), "a", base.Add(time.Hour), func(*ledger.ScoreEntry) ([]byte, string, error) { return nil, "", boom }); !errors.Is(err, boom) {
		t.Errorf("RefreshScore returned %v, want the issue error", err)
	}
	if got, ok := cached(t, s, "a", base); !ok || got.Signature != "abc123" {
		t.Error("a failed issue replaced the previous entry")
	}
}

// agentSpec is an agent with given in-window counts for RecomputeAll.
type agentSpec struct {
	id                 string
	ct, cs, at, asx    int
	oldest, next, none bool // add uncounted old events, a future event, a PENDING event
}

func testRecomputeAll(t *testing.T, h Harness) {
	s := h.Open(t)
	d := 24 * time.Hour
	var specs []agentSpec
	for i, c := range [][2]int{{0, 0}, {1, 1}, {100, 95}, {101, 77}, {150, 149}} {
		for j, a := range [][2]int{{0, 0}, {25, 25}, {50, 47}, {51, 50}} {
			specs = append(specs, agentSpec{id: fmt.Sprintf("agent-%d-%d", i, j), ct: c[0], cs: c[1], at: a[0], asx: a[1],
				oldest: (i+j)%2 == 0, next: (i+j)%3 == 0})
		}
	}
	specs = append(specs, agentSpec{id: "agent-pending", none: true})
	var evs []ledger.Event
	want := map[string]time.Time{} // ValidUntil per agent

	for k, sp := range specs {
		id := func(kind string, n int) string { return fmt.Sprintf("%s-%s%d", sp.id, kind, n) }
		end := base.Add(-time.Duration(k+1) * time.Hour)
		for n := range sp.ct {
			st := ledger.Failed
			if n < sp.cs {
				st = ledger.Verified
			}
			evs = append(evs, conduit(id("c", n), sp.id, st, end.Add(-time.Hour), end))
		}
		for n := range sp.at {
			st := []ledger.Status{ledger.Disputed, ledger.Refunded}[n%2]
			if n < sp.asx {
				st = ledger.Settled
			}
			evs = append(evs, ap2(id("t", n), sp.id, st, end.Add(-time.Hour), end))
		}
		var oldest, next time.Time
		if sp.ct+sp.at > 0 {
			oldest = end
		}
		if sp.oldest { // an older counted event, still in the window
			old := base.Add(-80*d - time.Duration(k)*time.Minute)
			evs = append(evs, ap2(id("old", 0), sp.id, ledger.Cancelled, old.Add(-time.Hour), old)) // uncounted
			evs = append(evs, conduit(id("old", 1), sp.id, ledger.Timeout, old.Add(-time.Hour), old))
			evs = append(evs, conduit(id("old", 2), sp.id, ledger.Failed, old.Add(-21*d), old.Add(-d*20))) // outside
		}
		if sp.next {
			nx := base.Add(time.Duration(k+1) * time.Hour)
			evs = append(evs, conduit(id("next", 0), sp.id, ledger.Verified, base, nx))
			next = nx
		}
		if sp.none {
			evs = append(evs, conduit(id("p", 0), sp.id, ledger.Pending, base, time.Time{}))
		}
		want[sp.id] = ledger.ValidUntil(base, oldest, next)
	}
	for len(evs) > 0 {
		n := min(len(evs), 500)
		for _, o := range ingest(t, s, "op-a", evs[:n]...) {
			if o.Status != ledger.OutcomeAccepted {
				t.Fatalf("setup: %v %v", o.Status, o.Err)
			}
		}
		evs = evs[n:]
	}
	// One agent already holds a passport; RecomputeAll replaces it.
	if _, err := s.RefreshScore(ctx(t), specs[3].id, base.Add(-time.Hour), func(*ledger.ScoreEntry) ([]byte, string, error) {
		return []byte("{}"), "sig", nil
	}); err != nil {
		t.Fatal(err)
	}
	n, err := s.RecomputeAll(ctx(t), base, false)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(specs)) {
		t.Errorf("RecomputeAll wrote %d entries, want %d", n, len(specs))
	}
	for _, sp := range specs {
		e, ok := cached(t, s, sp.id, base)
		if !ok {
			t.Errorf("%s: no entry after RecomputeAll", sp.id)
			continue
		}
		c := score.Counts{ConduitTotal: int64(sp.ct), ConduitSuccess: int64(sp.cs), AP2Total: int64(sp.at), AP2Success: int64(sp.asx)}
		wantResult(t, sp.id, e.Result, c)
		if !e.ValidUntil.Equal(want[sp.id]) {
			t.Errorf("%s: valid until %s, want %s", sp.id, e.ValidUntil, want[sp.id])
		}
		if e.Passport != nil || e.Signature != "" {
			t.Errorf("%s: RecomputeAll kept a passport", sp.id)
		}
		// RecomputeAll and RefreshScore agree exactly.
		r := refresh(t, s, sp.id, base)
		if r.Result != e.Result || !r.ValidUntil.Equal(e.ValidUntil) || !r.ExpiresAt.Equal(e.ExpiresAt) || !r.ComputedAt.Equal(e.ComputedAt) {
			t.Errorf("%s: RecomputeAll entry %+v, RefreshScore entry %+v", sp.id, e, r)
		}
	}
	// onlyStale rewrites exactly the entries that no longer answer as_of.
	ingest(t, s, "op-a", conduit("late", specs[0].id, ledger.Verified, base.Add(-time.Hour), base.Add(-time.Minute)))
	if n, err := s.RecomputeAll(ctx(t), base, true); err != nil || n != 1 {
		t.Errorf("RecomputeAll(onlyStale) after one invalidation wrote %d (%v), want 1", n, err)
	}
	if n, err := s.RecomputeAll(ctx(t), base, true); err != nil || n != 0 {
		t.Errorf("RecomputeAll(onlyStale) with nothing stale wrote %d (%v), want 0", n, err)
	}
	if e, ok := cached(t, s, specs[0].id, base); !ok || e.Result.Counts.ConduitTotal != 1 {
		t.Errorf("stale entry not refreshed: %v %+v", ok, e.Result.Counts)
	}
}

func testListScores(t *testing.T, h Harness) {
	s := h.Open(t)
	var evs []ledger.Event
	// agent k has k VERIFIED sessions (score 4k) and some ties.
	for k := range 12 {
		agent := fmt.Sprintf("agent-%02d", k)
		sessions := k
		if k >= 10 {
			sessions = 5 // ties with agent-05
		}
		for n := range sessions {
			evs = append(evs, conduit(fmt.Sprintf("%s-%d", agent, n), agent, ledger.Verified, base.Add(-2*time.Hour), base.Add(-time.Hour)))
		}
		if sessions == 0 {
			evs = append(evs, conduit(agent+"-p", agent, ledger.Pending, base.Add(-2*time.Hour), time.Time{}))
		}
	}
	ingest(t, s, "op-a", evs...)
	if _, err := s.RecomputeAll(ctx(t), base, false); err != nil {
		t.Fatal(err)
	}
	if err := s.SetVisibility(ctx(t), "agent-03", ledger.VisibilityUnlisted, base); err != nil {
		t.Fatal(err)
	}
	var got []string
	var after *ledger.Cursor
	for page := 0; ; page++ {
		es, err := s.ListScores(ctx(t), ledger.ListQuery{Limit: 5, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			got = append(got, fmt.Sprintf("%s:%d", e.AgentID, e.Result.Score))
		}
		if len(es) < 5 {
			break
		}
		last := es[len(es)-1]
		after = &ledger.Cursor{Score: last.Result.Score, AgentID: last.AgentID}
		if page > 5 {
			t.Fatal("pagination does not end")
		}
	}
	want := []string{"agent-09:36", "agent-08:32", "agent-07:28", "agent-06:24", "agent-05:20", "agent-10:20", "agent-11:20",
		"agent-04:16", "agent-02:8", "agent-01:4", "agent-00:0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ranking %v\nwant    %v", got, want)
	}
	es, err := s.ListScores(ctx(t), ledger.ListQuery{Limit: 100, MinScore: 21})
	if err != nil || len(es) != 4 {
		t.Errorf("min_score 21: %d entries (%v), want 4", len(es), err)
	}
	if es, err := s.ListScores(ctx(t), ledger.ListQuery{Limit: 100, MinTier: score.TierStandard}); err != nil || len(es) != 0 {
		t.Errorf("tier STANDARD: %d entries (%v), want 0", len(es), err)
	}
	for _, q := range []ledger.ListQuery{{Limit: 0}, {Limit: 1001}, {Limit: 1, MinScore: -1}, {Limit: 1, After: &ledger.Cursor{AgentID: "bad id"}}} {
		if _, err := s.ListScores(ctx(t), q); err == nil {
			t.Errorf("ListScores(%+v) accepted an invalid query", q)
		}
	}
	a, err := s.Agent(ctx(t), "agent-03")
	if err != nil || a.Visibility != ledger.VisibilityUnlisted {
		t.Errorf("agent-03 visibility %q (%v)", a.Visibility, err)
	}
	if err := s.SetVisibility(ctx(t), "agent-03", "hidden", base); err == nil {
		t.Error("SetVisibility accepted an unknown visibility")
	}
}

// testListScoresBy ranks by each key, a page of two at a time, against the
// order score.Compute's results give: the key descending, then the id.
// The agents' sessions and transactions are mixed so that the three
// orders differ, with ties in each, and some are past the volume targets
// (the contribution's other branch).
func testListScoresBy(t *testing.T, h Harness) {
	s := h.Open(t)
	var evs []ledger.Event
	mix := []struct{ ct, cs, at, as int }{
		{120, 90, 0, 0}, {10, 10, 60, 30}, {100, 100, 5, 5}, {3, 3, 50, 49}, {0, 0, 7, 7}, {30, 30, 2, 2}, {150, 149, 55, 54}, {8, 4, 10, 6},
	}
	for k, m := range mix {
		agent := fmt.Sprintf("mix-%02d", k)
		for n := range m.ct {
			st := ledger.Verified
			if n >= m.cs {
				st = ledger.Failed
			}
			evs = append(evs, conduit(fmt.Sprintf("%s-c%d", agent, n), agent, st, base.Add(-2*time.Hour), base.Add(-time.Hour)))
		}
		for n := range m.at {
			st := ledger.Settled
			if n >= m.as {
				st = ledger.Refunded
			}
			evs = append(evs, ap2(fmt.Sprintf("%s-t%d", agent, n), agent, st, base.Add(-2*time.Hour), base.Add(-time.Hour)))
		}
	}
	ingest(t, s, "op-a", evs...)
	if _, err := s.RecomputeAll(ctx(t), base, false); err != nil {
		t.Fatal(err)
	}
	all, err := s.ListScores(ctx(t), ledger.ListQuery{Limit: 100})
	if err != nil || len(all) != len(mix) {
		t.Fatalf("%d entries (%v), want %d", len(all), err, len(mix))
	}
	for _, by := range []ledger.RankBy{ledger.RankScore, ledger.RankConduit, ledger.RankAP2} {
		want := slices.Clone(all)
		slices.SortStableFunc(want, func(a, b ledger.ScoreEntry) int {
			if c := cmp.Compare(by.Key(b.Result), by.Key(a.Result)); c != 0 {
				return c
			}
			return strings.Compare(a.AgentID, b.AgentID)
		})
		var got []ledger.ScoreEntry
		var after *ledger.Cursor
		for page := 0; ; page++ {
			es, err := s.ListScores(ctx(t), ledger.ListQuery{Limit: 2, By: by, After: after})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, es...)
			if len(es) < 2 {
				break
			}
			last := es[len(es)-1]
			after = &ledger.Cursor{Score: by.Key(last.Result), AgentID: last.AgentID}
			if page > len(mix) {
				t.Fatal("pagination does not end")
			}
		}
		ids := func(es []ledger.ScoreEntry) (out []string) {
			for _, e := range es {
				out = append(out, fmt.Sprintf("%s:%d", e.AgentID, by.Key(e.Result)))
			}
			return out
		}
		if fmt.Sprint(ids(got)) != fmt.Sprint(ids(want)) {
			t.Errorf("by %d: %v\nwant  %v", by, ids(got), ids(want))
		}
	}
	if _, err := s.ListScores(ctx(t), ledger.ListQuery{Limit: 1, By: ledger.RankAP2 + 1}); err == nil {
		t.Error("ListScores accepted an unknown ranking key")
	}
}
