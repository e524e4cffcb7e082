package storetest

import (
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/score"
)

// testCacheVersion checks the guarantee that lets RecomputeAll and
// RefreshScore run without locking Ingest out: an entry is served only
// while its ledger_seq equals the agent's terminal_seq. It replays the race
// those writers lose deterministically: a refresh reads the ledger, a batch
// with a terminal report commits (and invalidates the entry), then the
// refresh writes the counts it read, restoring a valid_until that would
// serve them. Only the version may stop that entry.
func testCacheVersion(t *testing.T, h Harness) {
	s := h.Open(t)
	d := 24 * time.Hour
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	version := func(agent string) [2]int64 {
		t.Helper()
		c, a := h.Tamper.CacheVersion(t, s, agent)
		return [2]int64{c, a}
	}

	// seq 1 terminal, seq 2 not: the version is the terminal report's seq.
	ingest(t, s, "op-a",
		conduit("c1", "a", ledger.Verified, start, end),
		conduit("c2", "a", ledger.Running, start, time.Time{}),
		conduit("x1", "x", ledger.Verified, start, end))
	stale := refresh(t, s, "a", base)
	refresh(t, s, "x", base)
	if got := version("a"); got != [2]int64{1, 1} {
		t.Fatalf("after RefreshScore: (ledger_seq, terminal_seq) = %v, want [1 1]", got)
	}
	// A non-terminal report does not change the counts, nor the version.
	ingest(t, s, "op-a", conduit("c3", "a", ledger.Pending, start, time.Time{}))
	if got := version("a"); got != [2]int64{1, 1} {
		t.Errorf("after a non-terminal report: %v, want [1 1]", got)
	}
	if _, ok := cached(t, s, "a", base); !ok {
		t.Fatal("entry not served while the agent's version is unchanged")
	}

	// The batch: c2 becomes terminal at seq 4.
	ingest(t, s, "op-a", conduit("c2", "a", ledger.Failed, start, end))
	if got := version("a"); got != [2]int64{1, 4} {
		t.Fatalf("after a terminal transition: %v, want [1 4]", got)
	}
	// The refresh that read the ledger before the batch writes back.
	setCacheVersion(t, h, s, "a", 1, stale.ValidUntil)
	if e, ok := cached(t, s, "a", base); ok {
		t.Errorf("served an entry computed before a terminal report: %+v (ledger has %v)", e.Result.Counts, counts(t, s, "a", base))
	}
	listed := listed(t, s)
	if e, found := listed["a"]; !found || e.Answers(base) {
		t.Errorf("ListScores: entry for a found %v, answers %v; want listed but not answering", found, found && e.Answers(base))
	}
	if e := listed["x"]; !e.Answers(base) {
		t.Error("ListScores: another agent's current entry does not answer")
	}
	// Control: the entry is withheld by its version alone, and only an
	// equal version serves it.
	setCacheVersion(t, h, s, "a", 4, stale.ValidUntil)
	if _, ok := cached(t, s, "a", base); !ok {
		t.Fatal("control: an entry at the agent's version with a current valid_until is not served")
	}
	setCacheVersion(t, h, s, "a", 5, stale.ValidUntil)
	if _, ok := cached(t, s, "a", base); ok {
		t.Error("served an entry whose version is ahead of the agent's")
	}
	setCacheVersion(t, h, s, "a", 1, stale.ValidUntil)

	// onlyStale sees the version: a is stale although its valid_until is
	// current; x is not.
	if n, err := s.RecomputeAll(ctx(t), base, true); err != nil || n != 1 {
		t.Fatalf("RecomputeAll(onlyStale) wrote %d (%v), want 1", n, err)
	}
	if got := version("a"); got != [2]int64{4, 4} {
		t.Errorf("after RecomputeAll: %v, want [4 4]", got)
	}
	e, ok := cached(t, s, "a", base)
	wantResult(t, "a after RecomputeAll", e.Result, score.Counts{ConduitTotal: 2, ConduitSuccess: 1})
	if !ok {
		t.Error("entry written by RecomputeAll is not served")
	}

	// The same race against RefreshScore, then a full RecomputeAll.
	ingest(t, s, "op-a", ap2("t1", "a", ledger.Settled, start, end), ap2("t2", "x", ledger.Refunded, start, end))
	setCacheVersion(t, h, s, "a", 4, base.Add(7*d))
	if _, ok := cached(t, s, "a", base); ok {
		t.Error("served an entry computed before an AP2 terminal report")
	}
	if e := refresh(t, s, "a", base); e.Result.Counts.AP2Total != 1 {
		t.Errorf("RefreshScore counts %+v", e.Result.Counts)
	}
	if got := version("a"); got != [2]int64{5, 5} {
		t.Errorf("after RefreshScore: %v, want [5 5]", got)
	}
	if got := version("x"); got != [2]int64{1, 2} {
		t.Errorf("x before RecomputeAll: %v, want [1 2]", got)
	}
	if n, err := s.RecomputeAll(ctx(t), base.Add(time.Minute), false); err != nil || n != 2 {
		t.Fatalf("RecomputeAll wrote %d (%v), want 2", n, err)
	}
	for agent, want := range map[string][2]int64{"a": {5, 5}, "x": {2, 2}} {
		if got := version(agent); got != want {
			t.Errorf("%s after RecomputeAll: %v, want %v", agent, got, want)
		}
		if _, ok := cached(t, s, agent, base.Add(time.Minute)); !ok {
			t.Errorf("%s: entry written by RecomputeAll is not served", agent)
		}
	}
}

func listed(t *testing.T, s service.Backend) map[string]ledger.ScoreEntry {
	t.Helper()
	es, err := s.ListScores(ctx(t), ledger.ListQuery{Limit: 1000})
	if err != nil {
		t.Fatalf("ListScores: %v", err)
	}
	m := map[string]ledger.ScoreEntry{}
	for _, e := range es {
		m[e.AgentID] = e
	}
	return m
}
