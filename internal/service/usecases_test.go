package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const testKey = "0123456789abcdef0123456789abcdef-test-key"

// testClock is a settable clock for the use cases.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time { return c.t }

func newUseCases(t *testing.T) (*UseCases, *testClock) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key, err := passport.NewKey([]byte(testKey))
	if err != nil {
		t.Fatal(err)
	}
	c := &testClock{t0.Add(10 * 24 * time.Hour)}
	return New(st, Config{Key: key, Platform: "test.example", Now: c.now}), c
}

// conduit returns n Conduit sessions for agent ending at end, the first ok
// of them VERIFIED and the rest FAILED.
func conduit(agent, prefix string, n, ok int, end time.Time) []ledger.Event {
	var evs []ledger.Event
	for i := 0; i < n; i++ {
		st := ledger.Verified
		if i >= ok {
			st = ledger.Failed
		}
		evs = append(evs, ledger.Event{Type: ledger.ConduitSession, ID: fmt.Sprintf("%s-%d", prefix, i), AgentID: agent,
			Status: st, StartedAt: end.Add(-time.Hour), EndedAt: end})
	}
	return evs
}

func ap2(agent, prefix string, n, ok int, end time.Time) []ledger.Event {
	var evs []ledger.Event
	for i := 0; i < n; i++ {
		st := ledger.Settled
		if i >= ok {
			st = ledger.Disputed
		}
		evs = append(evs, ledger.Event{Type: ledger.AP2Transaction, ID: fmt.Sprintf("%s-%d", prefix, i), AgentID: agent,
			BuyerID: "buyer-1", Status: st, EscrowAmountCents: 10000, StartedAt: end.Add(-time.Hour), EndedAt: end})
	}
	return evs
}

func ingest(t *testing.T, a *UseCases, evs []ledger.Event) {
	t.Helper()
	out, err := a.Ingest.Ingest(context.Background(), "op-1", evs)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out {
		if o.Status != ledger.OutcomeAccepted {
			t.Fatalf("event %d (%s): %v %v", i, evs[i].ID, o.Status, o.Err)
		}
	}
}

func TestCertificateCachedThenFresh(t *testing.T) {
	a, c := newUseCases(t)
	ctx := context.Background()
	if _, err := a.Certificates.Certificate(ctx, "nobody"); !errors.Is(err, errkind.ErrNotFound) {
		t.Fatalf("unknown agent: %v", err)
	}
	if _, err := a.Certificates.Certificate(ctx, "bad id"); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("bad id: %v", err)
	}
	ingest(t, a, append(conduit("agent-1", "c", 80, 76, t0), ap2("agent-1", "t", 40, 38, t0)...))
	c1, err := a.Certificates.Certificate(ctx, "agent-1")
	if err != nil || !c1.Issued {
		t.Fatalf("first certificate: %+v %v", c1, err)
	}
	p := verifyOK(t, a, c1.Passport, "agent-1")
	if p.Score.Value != 760 || p.Issuer.Platform != "test.example" || !p.Issuer.ComputedAt.Equal(c.t) || !c1.ExpiresAt.Equal(c.t.Add(7*24*time.Hour)) {
		t.Fatalf("passport %+v", p)
	}

	// Later, with nothing new, the same document is served.
	c.t = c.t.Add(time.Hour)
	c2, err := a.Certificates.Certificate(ctx, "agent-1")
	if err != nil || c2.Issued || !bytes.Equal(c2.Passport, c1.Passport) {
		t.Fatalf("cached certificate differs: issued=%v %v\n%s\n%s", c2.Issued, err, c1.Passport, c2.Passport)
	}
	// The score route shares the entry and does not disturb the passport.
	if e, err := a.Certificates.Score(ctx, "agent-1"); err != nil || e.Result.Score != 760 {
		t.Fatalf("score %+v %v", e, err)
	}
	if c3, _ := a.Certificates.Certificate(ctx, "agent-1"); !bytes.Equal(c3.Passport, c1.Passport) {
		t.Fatal("Score replaced the passport")
	}

	// A new terminal event invalidates it: a fresh passport, new score.
	ingest(t, a, conduit("agent-1", "late", 1, 0, c.t.Add(-time.Minute)))
	c4, err := a.Certificates.Certificate(ctx, "agent-1")
	if err != nil || !c4.Issued || bytes.Equal(c4.Passport, c1.Passport) {
		t.Fatalf("after a new event: issued=%v %v", c4.Issued, err)
	}
	if p := verifyOK(t, a, c4.Passport, "agent-1"); p.Counts().ConduitTotal != 81 {
		t.Fatalf("counts %+v", p.Counts())
	}

	// After the 7-day lifetime a new one is issued too.
	c.t = c.t.Add(8 * 24 * time.Hour)
	c5, err := a.Certificates.Certificate(ctx, "agent-1")
	if err != nil || !c5.Issued || bytes.Equal(c5.Passport, c4.Passport) {
		t.Fatalf("after expiry: issued=%v %v", c5.Issued, err)
	}
}

// verifyOK checks doc verifies as of the use cases' clock and returns it parsed.
func verifyOK(t *testing.T, a *UseCases, doc []byte, agent string) *passport.Passport {
	t.Helper()
	v, err := a.Verifier.Verify(context.Background(), doc, agent)
	if err != nil || !v.Valid || !v.SignatureValid || !v.ScoreValid || v.DetectedTampering {
		t.Fatalf("verify: %+v %v\n%s", v, err, doc)
	}
	vv := passport.Verify(doc, []passport.Key{a.cfg.Key}, a.Certificates.clock.now())
	if vv.Passport == nil {
		t.Fatal("no parsed passport")
	}
	return vv.Passport
}

func TestScoreAndEscrow(t *testing.T) {
	a, _ := newUseCases(t)
	ctx := context.Background()
	ingest(t, a, append(conduit("agent-1", "c", 80, 76, t0), ap2("agent-1", "t", 40, 38, t0)...))
	e, err := a.Certificates.Escrow(ctx, "agent-1", 100000)
	if err != nil || e != (Escrow{Score: 760, Modifier: 3920, HoldCents: 39200, ReleasedCents: 60800}) {
		t.Fatalf("escrow %+v %v", e, err)
	}
	// Rounded up to the cent, in the buyer's favour: 0.392 × 3 = 1.176.
	if e, _ := a.Certificates.Escrow(ctx, "agent-1", 3); e.HoldCents != 2 || e.ReleasedCents != 1 {
		t.Fatalf("escrow of 3 cents %+v", e)
	}
	if _, err := a.Certificates.Escrow(ctx, "agent-1", -1); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("negative amount: %v", err)
	}
	// A provider with no history: score 0, the whole payment held.
	if e, err := a.Certificates.Escrow(ctx, "ghost", 100001); err != nil || e != (Escrow{Score: 0, Modifier: 10000, HoldCents: 100001, ReleasedCents: 0}) {
		t.Fatalf("unknown agent: %+v %v", e, err)
	}
	if _, err := a.Certificates.Escrow(ctx, "a b", 1); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("malformed agent id: %v", err)
	}
	// An unknown agent's score is not found, with a detail that names no
	// layer of the back end.
	_, err = a.Certificates.Score(ctx, "ghost")
	detail, ok := errkind.PublicDetail(err)
	if !errors.Is(err, errkind.ErrNotFound) || !ok || detail != `agent "ghost" is unknown: no event has been recorded for it` {
		t.Fatalf("unknown agent: %v (public detail %q)", err, detail)
	}
	for _, f := range []func() error{
		func() error { _, err := a.Certificates.Certificate(ctx, "ghost"); return err },
		func() error { _, err := a.Certificates.Agent(ctx, "ghost"); return err },
		func() error { _, err := a.Certificates.AgentScore(ctx, "ghost", t0); return err },
	} {
		if d, _ := errkind.PublicDetail(f()); d != detail {
			t.Errorf("public detail %q, want %q", d, detail)
		}
	}
}

func TestRanking(t *testing.T) {
	a, _ := newUseCases(t)
	ctx := context.Background()
	// Scores: a1 4·k for k VERIFIED sessions (k < 100).
	for i, k := range []int{10, 30, 30, 20, 0} {
		ingest(t, a, conduit(fmt.Sprintf("a%d", i), fmt.Sprintf("s%d", i), max(k, 1), k, t0))
	}
	ingest(t, a, append(conduit("elite", "e", 100, 100, t0), ap2("elite", "et", 50, 50, t0)...))
	var got []string
	q := RankingQuery{Limit: 2}
	for pages := 0; ; pages++ {
		p, err := a.Certificates.Ranking(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Agents {
			got = append(got, fmt.Sprintf("%s:%d", e.AgentID, e.Result.Score))
		}
		if p.Next == nil {
			break
		}
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		q.After = p.Next
	}
	want := "[elite:1000 a1:120 a2:120 a3:80 a0:40 a4:0]"
	if fmt.Sprint(got) != want {
		t.Fatalf("ranking %v, want %s", got, want)
	}
	p, err := a.Certificates.Ranking(ctx, RankingQuery{Limit: 10, MinScore: 80})
	if err != nil || len(p.Agents) != 4 || p.Next != nil {
		t.Fatalf("min_score 80: %d agents, next %v, %v", len(p.Agents), p.Next, err)
	}
	p, err = a.Certificates.Ranking(ctx, RankingQuery{Limit: 10, MinTier: score.TierElite})
	if err != nil || len(p.Agents) != 1 || p.Agents[0].AgentID != "elite" {
		t.Fatalf("tier ELITE: %+v %v", p.Agents, err)
	}
	if _, err := a.Certificates.Ranking(ctx, RankingQuery{Limit: 0}); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("limit 0: %v", err)
	}
}

func TestTokens(t *testing.T) {
	a, _ := newUseCases(t)
	ctx := context.Background()
	nt, err := a.Tokens.CreateToken(ctx, "acme", "")
	if err != nil || len(nt.Secret) < 40 || nt.Operator != "acme" || nt.Role != auth.Operator {
		t.Fatalf("create %+v %v", nt, err)
	}
	if op, err := a.Tokens.Authenticate(ctx, nt.Secret); err != nil || op.Operator != "acme" || op.Role != auth.Operator || op.TokenID != nt.ID {
		t.Fatalf("authenticate %+v %v", op, err)
	}
	if _, err := a.Tokens.CreateToken(ctx, "acme", "root"); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("bad role: %v", err)
	}
	if _, err := a.Tokens.Authenticate(ctx, nt.Secret+"x"); !errors.Is(err, errkind.ErrUnauthorized) {
		t.Fatalf("wrong token: %v", err)
	}
	if _, err := a.Tokens.CreateToken(ctx, "bad name", auth.Viewer); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("bad operator: %v", err)
	}
	toks, err := a.Tokens.ListTokens(ctx)
	if err != nil || len(toks) != 1 || toks[0].ID != nt.ID || toks[0].SHA256 != ([32]byte{}) {
		t.Fatalf("list %+v %v", toks, err)
	}
	if err := a.Tokens.RevokeToken(ctx, nt.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Tokens.Authenticate(ctx, nt.Secret); !errors.Is(err, errkind.ErrUnauthorized) {
		t.Fatalf("revoked token: %v", err)
	}
	if err := a.Tokens.RevokeToken(ctx, "tok-nope"); !errors.Is(err, errkind.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	// An agent's token speaks for its agent and never acts as an operator.
	if _, err := a.Tokens.CreateAgentToken(ctx, "acme", "nobody"); !errors.Is(err, errkind.ErrNotFound) {
		t.Fatalf("token for an unknown agent: %v", err)
	}
	if _, err := a.Ingest.Ingest(ctx, "acme", conduit("agent-1", "z", 1, 1, t0)); err != nil {
		t.Fatal(err)
	}
	at, err := a.Tokens.CreateAgentToken(ctx, "acme", "agent-1")
	if err != nil || at.AgentID != "agent-1" {
		t.Fatalf("agent token %+v %v", at, err)
	}
	if _, err := a.Tokens.Authenticate(ctx, at.Secret); !errors.Is(err, errkind.ErrForbidden) {
		t.Fatalf("an agent's token on an operator route: %v", err)
	}
	if p, err := a.Tokens.Principal(ctx, at.Secret); err != nil || p.AgentID != "agent-1" || p.Operator != "acme" {
		t.Fatalf("principal %+v %v", p, err)
	}
}

func TestBootstrap(t *testing.T) {
	a, _ := newUseCases(t)
	ctx := context.Background()
	short := "too-short-secret"
	_, err := a.Tokens.BootstrapAdminToken(ctx, short)
	if !errors.Is(err, errkind.ErrInvalid) || bytes.Contains([]byte(err.Error()), []byte(short)) {
		t.Fatalf("short admin token: %v", err)
	}
	first := "first-admin-token-0123456789abcdefghij"
	id1, err := a.Tokens.BootstrapAdminToken(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := a.Tokens.BootstrapAdminToken(ctx, first); err != nil || id != id1 {
		t.Fatalf("restart with the same token: %q %v", id, err)
	}
	if op, err := a.Tokens.Authenticate(ctx, first); err != nil || op.Operator != AdminOperator || op.Role != auth.Admin {
		t.Fatalf("admin: %+v %v", op, err)
	}
	second := "second-admin-token-0123456789abcdefghij"
	if _, err := a.Tokens.BootstrapAdminToken(ctx, second); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Tokens.Authenticate(ctx, first); !errors.Is(err, errkind.ErrUnauthorized) {
		t.Fatalf("rotated-out admin token still works: %v", err)
	}
	if _, err := a.Tokens.Authenticate(ctx, second); err != nil {
		t.Fatal(err)
	}
	// A revoked token cannot be brought back by setting it again.
	if _, err := a.Tokens.BootstrapAdminToken(ctx, first); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("revoked admin token re-bootstrapped: %v", err)
	}
}

// TestCertificateSubSecond issues a certificate a fraction of a second after
// an event ended in the same second. The passport's computed_at has whole
// seconds, so its counts must be the counts as of that second, or L2 would
// later find the ledger disagreeing with an honest passport.
func TestCertificateSubSecond(t *testing.T) {
	a, c := newUseCases(t)
	ctx := context.Background()
	ingest(t, a, append(conduit("agent-1", "c", 80, 76, t0), ap2("agent-1", "t", 40, 38, t0)...))
	second := c.t.Truncate(time.Second)
	ingest(t, a, conduit("agent-1", "late", 1, 1, second.Add(300*time.Millisecond)))
	c.t = second.Add(700 * time.Millisecond)
	cert, err := a.Certificates.Certificate(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	p := verifyOK(t, a, cert.Passport, "agent-1")
	if !p.Issuer.ComputedAt.Equal(second) || p.Counts().ConduitTotal != 80 {
		t.Fatalf("computed_at %s, conduit total %d; want %s and 80 (the late event ends after computed_at)",
			p.Issuer.ComputedAt, p.Counts().ConduitTotal, second)
	}
	// A second later the event is inside the window and a new passport counts it.
	c.t = second.Add(1500 * time.Millisecond)
	cert2, err := a.Certificates.Certificate(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	if p := verifyOK(t, a, cert2.Passport, "agent-1"); p.Counts().ConduitTotal != 81 {
		t.Fatalf("conduit total %d, want 81", p.Counts().ConduitTotal)
	}
}
