package storetest

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/score"
)

// smallLedger fills s with three agents' events, one of them with
// transitions, and returns it.
func smallLedger(t *testing.T, s service.Backend) {
	start, end := base.Add(-48*time.Hour), base.Add(-24*time.Hour)
	for _, a := range []string{"a", "b", "c"} {
		wantOutcomes(t, ingest(t, s, "op-a",
			conduit(a+"-c1", a, ledger.Running, start, time.Time{}),
			conduit(a+"-c1", a, ledger.Verified, start, end),
			ap2(a+"-t1", a, ledger.Settled, start, end),
			conduit(a+"-c2", a, ledger.Failed, start, end),
		), ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted)
	}
}

func testVerify(t *testing.T, h Harness) {
	s := h.Open(t)
	r := mustVerify(t, s)
	if r.Agents != 0 || r.Records != 0 {
		t.Errorf("empty ledger report %+v", r)
	}
	smallLedger(t, s)
	r = mustVerify(t, s)
	if r.Agents != 3 || r.Records != 12 || r.Events != 9 {
		t.Errorf("report %+v, want 3 agents, 12 records, 9 events", r)
	}
}

func testVerifyTampering(t *testing.T, h Harness) {
	cases := []struct {
		name    string
		tamper  func(t *testing.T, s service.Backend)
		seq     int64
		eventID string
	}{
		{"back-dated completion", func(t *testing.T, s service.Backend) {
			setEndedAt(t, h, s, ledger.ConduitSession, "b-c1", base.Add(-47*time.Hour))
		}, 2, "b-c1"},
		{"back-dated settlement", func(t *testing.T, s service.Backend) {
			setEndedAt(t, h, s, ledger.AP2Transaction, "b-t1", base.Add(-time.Hour))
		}, 3, "b-t1"},
		{"deleted event", func(t *testing.T, s service.Backend) {
			deleteEvent(t, h, s, ledger.ConduitSession, "b-c2")
		}, 4, "b-c2"},
		{"rewritten record", func(t *testing.T, s service.Backend) {
			r := ledger.Record{Event: conduit("b-c1", "b", ledger.Verified, base.Add(-48*time.Hour), base.Add(-time.Hour)), Operator: "op-a", Seq: 2}
			setRecordContent(t, h, s, r)
		}, 2, "b-c1"},
		{"rewritten first record", func(t *testing.T, s service.Backend) {
			r := ledger.Record{Event: conduit("b-c1", "b", ledger.Pending, base.Add(-48*time.Hour), time.Time{}), Operator: "op-a", Seq: 1}
			setRecordContent(t, h, s, r)
		}, 1, "b-c1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := h.Open(t)
			smallLedger(t, s)
			tc.tamper(t, s)
			r, err := s.VerifyLedger(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Broken) != 1 {
				t.Fatalf("broken links %v, want exactly one (agent b)", r.Broken)
			}
			b := r.Broken[0]
			if b.AgentID != "b" || b.Seq != tc.seq || b.EventID != tc.eventID || b.Reason == "" {
				t.Errorf("broken link %+v, want agent b seq %d event %s", b, tc.seq, tc.eventID)
			}
		})
	}
}

func testTokens(t *testing.T, h Harness) {
	s := h.Open(t)
	sum := sha256.Sum256([]byte("secret-token-1"))
	tok := auth.Token{ID: "tok-1", Operator: "op-a", SHA256: sum, CreatedAt: base}
	if err := s.CreateToken(ctx(t), tok); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx(t), tok); err != nil {
		t.Errorf("re-creating the same token: %v", err)
	}
	other := sha256.Sum256([]byte("secret-token-2"))
	wantKind(t, s.CreateToken(ctx(t), auth.Token{ID: "tok-1", Operator: "op-a", SHA256: other, CreatedAt: base}), errkind.Conflict)
	wantKind(t, s.CreateToken(ctx(t), auth.Token{ID: "tok-2", Operator: "op-b", SHA256: sum, CreatedAt: base}), errkind.Conflict)
	wantKind(t, s.CreateToken(ctx(t), auth.Token{ID: "bad id", Operator: "op-a", SHA256: other, CreatedAt: base}), errkind.Invalid)
	if err := s.CreateToken(ctx(t), auth.Token{ID: "tok-2", Operator: "op-b", SHA256: other, CreatedAt: base.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if tok, err := s.Authenticate(ctx(t), sum); err != nil || tok.Operator != "op-a" || tok.ID != "tok-1" || tok.AgentID != "" || tok.SHA256 != ([32]byte{}) {
		t.Errorf("Authenticate = %+v, %v", tok, err)
	}
	_, err := s.Authenticate(ctx(t), sha256.Sum256([]byte("nope")))
	wantKind(t, err, errkind.Unauthorized)
	if err := s.RevokeToken(ctx(t), "tok-1", base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeToken(ctx(t), "tok-1", base.Add(2*time.Hour)); err != nil {
		t.Errorf("revoking twice: %v", err)
	}
	_, err = s.Authenticate(ctx(t), sum)
	wantKind(t, err, errkind.Unauthorized)
	wantKind(t, s.RevokeToken(ctx(t), "tok-9", base), errkind.NotFound)
	list, err := s.ListTokens(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "tok-1" || !list[0].RevokedAt.Equal(base.Add(time.Hour)) || list[1].ID != "tok-2" ||
		!list[1].RevokedAt.IsZero() || list[1].Operator != "op-b" || list[0].SHA256 != ([32]byte{}) {
		t.Errorf("ListTokens = %+v", list)
	}
	// An agent's token names its agent.
	agentSum := sha256.Sum256([]byte("secret-token-3"))
	if err := s.CreateToken(ctx(t), auth.Token{ID: "tok-3", Operator: "op-a", AgentID: "agent-7", SHA256: agentSum, CreatedAt: base}); err != nil {
		t.Fatal(err)
	}
	wantKind(t, s.CreateToken(ctx(t), auth.Token{ID: "tok-3", Operator: "op-a", AgentID: "agent-8", SHA256: agentSum, CreatedAt: base}), errkind.Conflict)
	wantKind(t, s.CreateToken(ctx(t), auth.Token{ID: "tok-4", Operator: "op-a", AgentID: "bad agent", SHA256: sha256.Sum256([]byte("x")), CreatedAt: base}), errkind.Invalid)
	if tok, err := s.Authenticate(ctx(t), agentSum); err != nil || tok.AgentID != "agent-7" || tok.Operator != "op-a" {
		t.Errorf("Authenticate(agent token) = %+v, %v", tok, err)
	}
	if list, _ := s.ListTokens(ctx(t)); len(list) != 3 || list[1].ID != "tok-3" || list[1].AgentID != "agent-7" {
		t.Errorf("ListTokens = %+v", list)
	}
	// A token's operator can report events.
	wantOutcomes(t, ingest(t, s, "op-b", conduit("c1", "a", ledger.Verified, base.Add(-time.Hour), base)), ledger.OutcomeAccepted)
}

// testProperty: for random histories, the store's counts equal a brute-force
// count over the same events at random as_of instants and at every exact
// window boundary; every cache entry is sound (its counts hold for every
// instant it is served) and RecomputeAll agrees with the brute force.
func testProperty(t *testing.T, h Harness) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x5357))
	const histories = 4
	for hist := range histories {
		s := h.Open(t)
		final := randomHistory(t, rng, s, fmt.Sprintf("h%d", hist))
		agents := []string{"p-0", "p-1", "p-2"}
		var instants []time.Time
		for range 20 {
			instants = append(instants, base.Add(time.Duration(rng.Int64N(int64(140*24*time.Hour)))-100*24*time.Hour).Truncate(time.Microsecond))
		}
		for range 20 {
			e := final[rng.IntN(len(final))]
			if e.EndedAt.IsZero() {
				continue
			}
			instants = append(instants, e.EndedAt, e.EndedAt.Add(-time.Microsecond), e.EndedAt.Add(ledger.Window), e.EndedAt.Add(ledger.Window+time.Microsecond))
		}
		for _, at := range instants {
			for _, a := range agents {
				want := bruteCounts(final, a, at)
				got, err := s.Counts(ctx(t), a, at)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("seed %d history %d agent %s as of %s: counts %+v, brute force %+v", seed, hist, a, at, got, want)
				}
			}
		}
		// Cache soundness and agreement with the brute-force validity bound.
		for _, at := range instants[:10] {
			for _, a := range agents {
				e := refresh(t, s, a, at)
				if want := bruteValidUntil(final, a, at); !e.ValidUntil.Equal(want) {
					t.Fatalf("seed %d: %s as of %s valid until %s, brute force %s", seed, a, at, e.ValidUntil, want)
				}
				for _, later := range []time.Time{e.ValidUntil.Add(-time.Microsecond), at.Add(time.Duration(rng.Int64N(int64(e.ValidUntil.Sub(at)))))} {
					if c := bruteCounts(final, a, later); c != e.Result.Counts {
						t.Fatalf("seed %d: entry for %s computed at %s served at %s has counts %+v, true counts %+v", seed, a, at, later, e.Result.Counts, c)
					}
					if _, ok := cached(t, s, a, later); !ok {
						t.Fatalf("seed %d: entry for %s not served at %s < valid_until %s", seed, a, later, e.ValidUntil)
					}
				}
			}
			if _, err := s.RecomputeAll(ctx(t), at, false); err != nil {
				t.Fatal(err)
			}
			for _, a := range agents {
				e, ok := cached(t, s, a, at)
				want, _ := score.Compute(bruteCounts(final, a, at))
				if !ok || e.Result != want || !e.ValidUntil.Equal(bruteValidUntil(final, a, at)) {
					t.Fatalf("seed %d: RecomputeAll(%s) entry for %s = %+v (hit %v), want %+v until %s", seed, at, a, e, ok, want, bruteValidUntil(final, a, at))
				}
			}
		}
		if r := mustVerify(t, s); r.Agents != int64(len(agents)) {
			t.Errorf("verify walked %d agents", r.Agents)
		}
	}
}

// randomHistory ingests a random history (reports in random batches, some
// through intermediate statuses, with duplicates) and returns each event's
// final state.
func randomHistory(t *testing.T, rng *rand.Rand, s service.Backend, prefix string) []ledger.Event {
	d := int64(24 * time.Hour)
	// End times cluster on a few instants so that boundaries coincide.
	anchors := make([]time.Time, 6)
	for i := range anchors {
		anchors[i] = base.Add(time.Duration(rng.Int64N(130*d) - 110*d)).Truncate(time.Microsecond)
	}
	var final []ledger.Event
	var reports []ledger.Event
	for i := range 150 {
		agent := fmt.Sprintf("p-%d", rng.IntN(3))
		var end time.Time
		if rng.IntN(3) == 0 {
			end = anchors[rng.IntN(len(anchors))].Add(time.Duration(rng.IntN(3)-1) * time.Microsecond)
		} else {
			end = base.Add(time.Duration(rng.Int64N(130*d) - 110*d)).Truncate(time.Microsecond)
		}
		start := end.Add(-time.Duration(rng.Int64N(d))).Truncate(time.Microsecond)
		var path []ledger.Status
		var e ledger.Event
		if rng.IntN(2) == 0 {
			e = conduit(fmt.Sprintf("%s-c%d", prefix, i), agent, "", start, time.Time{})
			terminal := []ledger.Status{ledger.Verified, ledger.Verified, ledger.Failed, ledger.Error, ledger.Timeout}[rng.IntN(5)]
			path = []ledger.Status{ledger.Pending, ledger.Running, terminal}
		} else {
			e = ap2(fmt.Sprintf("%s-t%d", prefix, i), agent, "", start, time.Time{})
			terminal := []ledger.Status{ledger.Settled, ledger.Settled, ledger.Disputed, ledger.Refunded, ledger.Cancelled}[rng.IntN(5)]
			path = []ledger.Status{ledger.Negotiating, ledger.Held, ledger.Executing, ledger.Delivered, terminal}
		}
		// Report a random forward subsequence ending at a random stage.
		stop := len(path) - 1
		if rng.IntN(6) == 0 {
			stop = rng.IntN(len(path) - 1)
		}
		for k := 0; k <= stop; k++ {
			if k != stop && rng.IntN(2) == 0 {
				continue
			}
			r := e
			r.Status = path[k]
			if r.Status.Terminal() {
				r.EndedAt = end
			}
			reports = append(reports, r)
			if rng.IntN(10) == 0 {
				reports = append(reports, r) // duplicate
			}
			if k == stop {
				final = append(final, r)
			}
		}
	}
	// Reports of one event stay in order; events interleave.
	for len(reports) > 0 {
		n := min(len(reports), 1+rng.IntN(40))
		for i, o := range ingest(t, s, "op-a", reports[:n]...) {
			if o.Status == ledger.OutcomeRejected {
				t.Fatalf("random history report %d rejected: %v", i, o.Err)
			}
		}
		reports = reports[n:]
	}
	return final
}

func bruteCounts(final []ledger.Event, agent string, asOf time.Time) score.Counts {
	var c score.Counts
	for _, e := range final {
		if e.AgentID != agent || !e.Status.CountsTotal() || e.EndedAt.Before(asOf.Add(-ledger.Window)) || e.EndedAt.After(asOf) {
			continue
		}
		if e.Type == ledger.ConduitSession {
			c.ConduitTotal++
			if e.Status.CountsSuccess() {
				c.ConduitSuccess++
			}
		} else {
			c.AP2Total++
			if e.Status.CountsSuccess() {
				c.AP2Success++
			}
		}
	}
	return c
}

// bruteValidUntil is min(asOf + 7 days, oldest counted + 90 days + 1µs, first
// counted end after asOf), found by scanning every event.
func bruteValidUntil(final []ledger.Event, agent string, asOf time.Time) time.Time {
	until := asOf.Add(7 * 24 * time.Hour)
	for _, e := range final {
		if e.AgentID != agent || !e.Status.CountsTotal() {
			continue
		}
		if ledger.InWindow(e.EndedAt, asOf) {
			if leave := e.EndedAt.Add(90*24*time.Hour + time.Microsecond); leave.Before(until) {
				until = leave
			}
		} else if e.EndedAt.After(asOf) && e.EndedAt.Before(until) {
			until = e.EndedAt
		}
	}
	return until
}
