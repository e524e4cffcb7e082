package service

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

var (
	anyone = Caller{}
	op     = OperatorCaller("op-1")
)

func agentCaller(id string) Caller {
	return Caller{Operator: "op-1", AgentID: id, TokenID: "tok-" + id}
}

// TestCallerRules: an operator and the agent's own token act for it;
// another agent's token is forbidden, nobody is unauthorized, and the
// refusal comes before the agent is looked up.
func TestCallerRules(t *testing.T) {
	a, _ := newUseCases(t)
	ctx := context.Background()
	ingest(t, a, conduit("agent-1", "c", 1, 1, t0))
	for _, c := range []struct {
		caller Caller
		agent  string
		want   error
	}{
		{op, "agent-1", nil},
		{agentCaller("agent-1"), "agent-1", nil},
		{agentCaller("agent-2"), "agent-1", errkind.ErrForbidden},
		{anyone, "agent-1", errkind.ErrUnauthorized},
		{agentCaller("agent-2"), "ghost", errkind.ErrForbidden},
		{anyone, "ghost", errkind.ErrUnauthorized},
		{op, "ghost", errkind.ErrNotFound},
		{op, "bad id", errkind.ErrInvalid},
	} {
		_, err1 := a.Rights.Consent(ctx, c.caller, c.agent)
		_, err2 := a.Rights.SetVisibility(ctx, c.caller, c.agent, ledger.VisibilityPublic)
		_, err3 := a.Rights.RecordConsent(ctx, c.caller, c.agent, "")
		_, err4 := a.Signals.Signals(ctx, c.caller, c.agent, time.Time{})
		for i, err := range []error{err1, err2, err3, err4} {
			if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
				t.Errorf("%+v on %s, use case %d: %v, want %v", c.caller, c.agent, i+1, err, c.want)
			}
		}
	}
}

// TestVisibilityAndConsent: visibility and consent are recorded with who
// gave it and which disclosure; the public routes follow at once.
func TestVisibilityAndConsent(t *testing.T) {
	a, c := newUseCases(t)
	ctx := context.Background()
	a.Certificates.StartCacheWatch()
	ingest(t, a, append(conduit("shy", "s", 10, 9, t0), conduit("open", "o", 10, 9, t0)...))

	// Public by default; the certificate is served to anyone (and now
	// remembered, with the agent's visibility).
	if _, err := a.Certificates.CertificateFor(ctx, anyone, "shy"); err != nil {
		t.Fatal(err)
	}
	st, err := a.Rights.SetVisibility(ctx, agentCaller("shy"), "shy", ledger.VisibilityUnlisted)
	if err != nil || st.Visibility != ledger.VisibilityUnlisted || st.Published || st.Consented() {
		t.Fatalf("unlisted: %+v %v", st, err)
	}
	_, errShy := a.Certificates.CertificateFor(ctx, anyone, "shy")
	_, errGhost := a.Certificates.CertificateFor(ctx, anyone, "ghost")
	_, errScore := a.Certificates.ScoreFor(ctx, agentCaller("open"), "shy")
	for _, err := range []error{errShy, errGhost, errScore} {
		if !errors.Is(err, errkind.ErrNotFound) {
			t.Fatalf("not public: %v", err)
		}
	}
	dShy, _ := errkind.PublicDetail(errShy)
	dGhost, _ := errkind.PublicDetail(errGhost)
	if dShy != `agent "shy" has no public score` || dGhost != `agent "ghost" has no public score` {
		t.Fatalf("details %q and %q must read alike", dShy, dGhost)
	}
	// The agent itself and operators still get its passport and score;
	// escrow still uses the score.
	if cert, err := a.Certificates.CertificateFor(ctx, agentCaller("shy"), "shy"); err != nil || len(cert.Passport) == 0 {
		t.Fatalf("own certificate: %v", err)
	}
	if e, err := a.Certificates.ScoreFor(ctx, op, "shy"); err != nil || e.Result.Counts.ConduitTotal != 10 {
		t.Fatalf("operator's score: %+v %v", e, err)
	}
	if e, err := a.Certificates.Escrow(ctx, "shy", 100000); err != nil || e.Score == 0 {
		t.Fatalf("escrow: %+v %v", e, err)
	}
	if _, err := a.Certificates.CertificateFor(ctx, op, "ghost"); !errors.Is(err, errkind.ErrNotFound) {
		t.Fatalf("operator, unknown agent: %v", err)
	}
	if _, err := a.Rights.SetVisibility(ctx, op, "shy", "hidden"); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("another visibility: %v", err)
	}

	// Consent: the current version by default, recorded with its author.
	c.t = c.t.Add(time.Minute)
	st, err = a.Rights.RecordConsent(ctx, agentCaller("open"), "open", "")
	if err != nil || st.DisclosureVersion != CurrentDisclosure().Version || st.By != "agent:tok-open" || !st.GivenAt.Equal(c.t) || !st.Published {
		t.Fatalf("consent: %+v %v", st, err)
	}
	if st, err = a.Rights.RecordConsent(ctx, op, "shy", "1"); err != nil || st.By != "operator:op-1" || st.Published {
		t.Fatalf("consent on the agent's behalf: %+v %v", st, err)
	}
	if _, err := a.Rights.RecordConsent(ctx, op, "shy", "0.9"); !errors.Is(err, errkind.ErrInvalid) || !strings.Contains(err.Error(), "never published") {
		t.Fatalf("an unknown version: %v", err)
	}
	if st, err = a.Rights.SetVisibility(ctx, op, "shy", ledger.VisibilityPublic); err != nil || !st.Published {
		t.Fatalf("public again: %+v %v", st, err)
	}
	if _, err := a.Certificates.CertificateFor(ctx, anyone, "shy"); err != nil {
		t.Fatalf("listed again: %v", err)
	}
}

// TestVisibilityAcrossProcesses: a second process sharing the SQLite
// database sees a visibility change at once (its watch sees the commit).
func TestVisibilityAcrossProcesses(t *testing.T) {
	a, _ := newUseCases(t)
	ctx := context.Background()
	dir := t.TempDir()
	open := func() *UseCases {
		st, err := sqlite.Open(ctx, "sqlite:"+filepath.Join(dir, "shared.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if _, err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		u := New(st, Config{Key: a.cfg.Key, Platform: a.cfg.Platform, Now: a.cfg.Now})
		u.Certificates.StartCacheWatch()
		return u
	}
	p1, p2 := open(), open()
	ingest(t, p1, conduit("agent-1", "c", 3, 3, t0))
	for range 2 {
		if _, err := p2.Certificates.CertificateFor(ctx, anyone, "agent-1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p1.Rights.SetVisibility(ctx, op, "agent-1", ledger.VisibilityUnlisted); err != nil {
		t.Fatal(err)
	}
	if _, err := p2.Certificates.CertificateFor(ctx, anyone, "agent-1"); !errors.Is(err, errkind.ErrNotFound) {
		t.Fatalf("the other process still publishes an unlisted agent: %v", err)
	}
}

// TestRequireConsent: with RequireConsent nothing of an agent is public
// until it consents (certificate, score, profile, ranking); it is still
// scored, and its own passport is issued.
func TestRequireConsent(t *testing.T) {
	a, _ := newUseCases(t)
	a.Certificates.pubs.require = true
	ctx := context.Background()
	var evs []ledger.Event
	for i := range 7 {
		evs = append(evs, conduit(fmt.Sprint("agent-", i), fmt.Sprint("c", i), 10+i, 10+i, t0)...)
	}
	ingest(t, a, evs)
	if _, err := a.Certificates.CertificateFor(ctx, anyone, "agent-1"); !errors.Is(err, errkind.ErrNotFound) {
		t.Fatalf("certificate before consent: %v", err)
	}
	if _, err := a.Certificates.ScoreFor(ctx, anyone, "agent-1"); !errors.Is(err, errkind.ErrNotFound) {
		t.Fatalf("score before consent: %v", err)
	}
	if _, err := a.Certificates.PublicProfile(ctx, "agent-1", false); !errors.Is(err, errkind.ErrNotFound) {
		t.Fatalf("profile before consent: %v", err)
	}
	if page, err := a.Certificates.Ranking(ctx, RankingQuery{Limit: 10}); err != nil || len(page.Agents) != 0 || page.Next != nil {
		t.Fatalf("ranking before consent: %+v %v", page, err)
	}
	if _, err := a.Certificates.CertificateFor(ctx, agentCaller("agent-1"), "agent-1"); err != nil {
		t.Fatalf("own certificate before consent: %v", err)
	}
	// agent-6 scores highest; agents 1, 3 and 5 consent, 3 then unlists.
	for _, id := range []string{"agent-1", "agent-3", "agent-5"} {
		if _, err := a.Rights.RecordConsent(ctx, agentCaller(id), id, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Rights.SetVisibility(ctx, agentCaller("agent-3"), "agent-3", ledger.VisibilityUnlisted); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Certificates.PublicProfile(ctx, "agent-1", false); err != nil {
		t.Fatalf("profile after consent: %v", err)
	}
	if _, err := a.Certificates.CertificateFor(ctx, anyone, "agent-3"); !errors.Is(err, errkind.ErrNotFound) {
		t.Fatalf("consented but unlisted: %v", err)
	}
	// Pages of one skip the unconsented agents between the published ones.
	var got []string
	q := RankingQuery{Limit: 1}
	for {
		page, err := a.Certificates.Ranking(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Agents {
			got = append(got, e.AgentID)
		}
		if page.Next == nil {
			break
		}
		q.After = page.Next
	}
	if strings.Join(got, " ") != "agent-5 agent-1" {
		t.Fatalf("ranking after consent: %v", got)
	}
}

// TestRecords: the events counting now and the passports issued; buyer
// ids masked for the agent's own token, by pseudonyms stable per agent.
func TestRecords(t *testing.T) {
	a, c := newUseCases(t)
	ctx := context.Background()
	a.Rights.pseudonymKey = []byte("0123456789abcdef0123456789abcdef")
	evs := ap2("agent-1", "t", 3, 2, t0)
	evs[2].BuyerID = "buyer-2"
	evs = append(evs, conduit("agent-1", "c", 2, 1, t0.Add(time.Hour))...)
	evs = append(evs, ap2("agent-2", "u", 1, 1, t0)...)
	// Not counted: a running session, and an offer.
	evs = append(evs, ledger.Event{Type: ledger.ConduitSession, ID: "run", AgentID: "agent-1", Status: ledger.Running, StartedAt: t0},
		ledger.Event{Type: ledger.TaskOffer, ID: "o", AgentID: "agent-1", BuyerID: "buyer-1", Status: ledger.Accepted, StartedAt: t0, EndedAt: t0})
	ingest(t, a, evs)
	cert, err := a.Certificates.CertificateFor(ctx, agentCaller("agent-1"), "agent-1")
	if err != nil {
		t.Fatal(err)
	}

	own, err := a.Rights.Records(ctx, agentCaller("agent-1"), "agent-1", time.Time{})
	if err != nil || !own.Masked || len(own.Events) != 5 || !own.AsOf.Equal(c.t) {
		t.Fatalf("own records: %+v %v", own, err)
	}
	mine := Pseudonym(a.Rights.pseudonymKey, "agent-1", "buyer-1")
	if !strings.HasPrefix(mine, "buyer-") || len(mine) != len("buyer-")+16 || mine == Pseudonym(a.Rights.pseudonymKey, "agent-2", "buyer-1") ||
		mine == Pseudonym(a.Rights.pseudonymKey, "agent-1", "buyer-2") || mine == Pseudonym([]byte("another key, just as long as that"), "agent-1", "buyer-1") {
		t.Fatalf("pseudonym %q is not per agent, buyer and key", mine)
	}
	buyers := map[string]int{}
	for _, e := range own.Events {
		buyers[e.BuyerID]++
		if strings.Contains(e.BuyerID, "buyer-1") && e.BuyerID != mine || e.BuyerID == "buyer-2" {
			t.Fatalf("an agent sees a buyer id: %+v", e)
		}
	}
	if buyers[mine] != 2 || buyers[""] != 2 || len(buyers) != 3 {
		t.Fatalf("buyers as the agent sees them: %v", buyers)
	}
	if len(own.Passports) != 1 || own.Passports[0].ID == "" || string(own.Passports[0].Document) != string(cert.Passport) {
		t.Fatalf("passports: %+v", own.Passports)
	}

	full, err := a.Rights.Records(ctx, op, "agent-1", time.Time{})
	if err != nil || full.Masked || len(full.Events) != 5 {
		t.Fatalf("operator's records: %+v %v", full, err)
	}
	seen := map[string]bool{}
	for _, e := range full.Events {
		seen[e.BuyerID] = true
		if e.AgentID != "agent-1" || e.Operator != "op-1" || e.Seq == 0 || e.Corrected || e.Status != e.ReportedStatus {
			t.Fatalf("record %+v", e)
		}
	}
	if !seen["buyer-1"] || !seen["buyer-2"] {
		t.Fatalf("the operator sees buyers %v", seen)
	}
	// As of before the sessions ended: the transactions only, and no
	// passport yet.
	past, err := a.Rights.Records(ctx, op, "agent-1", t0.Add(time.Minute))
	if err != nil || len(past.Events) != 3 || len(past.Passports) != 0 {
		t.Fatalf("records as of the past: %+v %v", past, err)
	}
	if _, err := a.Rights.Records(ctx, agentCaller("agent-2"), "agent-1", time.Time{}); !errors.Is(err, errkind.ErrForbidden) {
		t.Fatalf("another agent: %v", err)
	}
	if _, err := a.Rights.Records(ctx, op, "ghost", time.Time{}); !errors.Is(err, errkind.ErrNotFound) {
		t.Fatalf("unknown agent: %v", err)
	}
	a.Rights.pseudonymKey = nil
	if _, err := a.Rights.Records(ctx, agentCaller("agent-1"), "agent-1", time.Time{}); err == nil || errkind.Of(err) != errkind.Unknown {
		t.Fatalf("masking without a key: %v", err)
	}
}

func TestDisclosure(t *testing.T) {
	a, _ := newUseCases(t)
	d, err := a.Rights.Disclosure("")
	if err != nil || d != CurrentDisclosure() || d.Version == "" || !ledger.ValidID(d.Version) {
		t.Fatalf("current: %+v %v", d, err)
	}
	// §11.1's sample and §11.2's disclaimer, word for word.
	for _, want := range []string{"Your transactions on this marketplace are used to compute a SwarmScore, an open-standard reputation score.",
		"Your score affects escrow hold amounts and marketplace visibility. You may review your score and the data behind it at any time. Contact us to dispute errors."} {
		if !strings.Contains(d.Disclosure, want) {
			t.Errorf("the disclosure lacks %q", want)
		}
	}
	if d.Disclaimer != "SwarmScore is a historical performance metric computed from objective transaction data. It does not guarantee future performance. This marketplace is not liable for losses arising from transactions with any agent regardless of SwarmScore." {
		t.Errorf("disclaimer %q", d.Disclaimer)
	}
	if _, err := a.Rights.Disclosure("99"); !errors.Is(err, errkind.ErrNotFound) {
		t.Fatalf("unknown version: %v", err)
	}
}

// TestAsOfInTheFuture: an as_of later than now plus the clock-skew
// allowance is refused wherever one is taken; up to the allowance it is
// answered (issue 28).
func TestAsOfInTheFuture(t *testing.T) {
	a, c := newUseCases(t)
	ctx := context.Background()
	cfg := a.cfg
	cfg.PseudonymKey = []byte("0123456789abcdef0123456789abcdef")
	a = New(a.store, cfg)
	ingest(t, a, conduit("agent-1", "c", 2, 1, t0))
	op := OperatorCaller("acme")
	calls := map[string]func(time.Time) error{
		"Records":       func(at time.Time) error { _, err := a.Rights.Records(ctx, op, "agent-1", at); return err },
		"Signals":       func(at time.Time) error { _, err := a.Signals.Signals(ctx, op, "agent-1", at); return err },
		"FlaggedAgents": func(at time.Time) error { _, err := a.Signals.FlaggedAgents(ctx, at); return err },
		"AgentScore":    func(at time.Time) error { _, err := a.Certificates.AgentScore(ctx, "agent-1", at); return err },
	}
	for _, skew := range []time.Duration{0, time.Hour} {
		cfg.MaxClockSkew = skew
		a = New(a.store, cfg) // the calls use this a
		allowance := horizon{skew: skew}.allowance()
		for name, call := range calls {
			for _, at := range []time.Time{{}, c.t.Add(-time.Hour), c.t, c.t.Add(allowance)} {
				if err := call(at); err != nil {
					t.Errorf("%s as of %s (skew %s): %v", name, at, allowance, err)
				}
			}
			for _, at := range []time.Time{c.t.Add(allowance + time.Microsecond), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)} {
				err := call(at)
				if !errors.Is(err, errkind.ErrInvalid) || !strings.Contains(err.Error(), "is later than now") ||
					!strings.Contains(err.Error(), "plus the allowed clock skew ("+allowance.String()+")") {
					t.Errorf("%s as of %s (skew %s): %v, want ErrInvalid naming the allowance", name, at, allowance, err)
				}
			}
		}
	}
}
