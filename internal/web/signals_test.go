package web

import (
	"context"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/httpapi"
	"github.com/swarmscore/swarmscore/internal/service"
)

// TestGamingFlagsPage: the console lists the flagged agents with each
// figure under its threshold, and shows one agent's signals by id.
func TestGamingFlagsPage(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	if r := s.get("/operator/signals"); r.code == 200 && strings.Contains(r.body, "Gaming flags</h1>") {
		t.Fatal("the gaming flags are shown without signing in")
	}
	c := signIn(t, s, "192.0.2.1:1000")
	get := func(target string, status int) string {
		t.Helper()
		return s.get(target, "Cookie", c.String()).page(t, status)
	}
	// The seed is a back-filled history from one AP2 buyer: every agent
	// with ten transactions is concentrated and undiverse, and every
	// report arrived long after its event ended.
	body := get("/operator/signals", 200)
	mustContain(t, body, `<a href="/operator/signals" aria-current="page">Gaming flags</a>`,
		"<code>ap2_top5_buyer_share</code><br><span class=\"muted\">above 70%</span>",
		"<code>ap2_buyer_diversity</code><br><span class=\"muted\">below 10%</span>",
		"<code>report_lag</code><br><span class=\"muted\">above 24.0 h</span>",
		"<code>conduit_burst</code><br><span class=\"muted\">above 20</span>",
		`<th scope="row" class="id-cell"><a href="/operator/signals?q=agent-7" title="agent-7">agent-7</a></th><td class="num" data-label="`,
		`<td class="num" data-label="ap2_top5_buyer_share"><strong>100% flagged</strong></td><td class="num" data-label="ap2_buyer_diversity"><strong>2% flagged</strong></td>`,
		"none by this server since it started")
	if _, err := s.u.Signals.VerifyLedger(context.Background()); err != nil {
		t.Fatal(err)
	}
	body = get("/operator/signals?q=agent-7", 200)
	mustContain(t, body, `<caption id="found-caption">Signals of agent-7</caption>`,
		`<tr><th scope="row"><code>conduit_top_buyer_share</code></th><td class="num" data-label="Figure">0%</td><td data-label="Flagged when">above 50%</td><td data-label="Flagged">no</td></tr>`,
		`<tr><th scope="row"><code>ap2_top5_buyer_share</code></th><td class="num" data-label="Figure"><strong>100%</strong></td><td data-label="Flagged when">above 70%</td><td data-label="Flagged"><strong>flagged</strong></td></tr>`,
		`<tr><th scope="row"><code>chain_break</code></th><td class="num" data-label="Figure">intact</td><td data-label="Flagged when">any break</td><td data-label="Flagged">no</td></tr>`,
		`<tr><th scope="row"><code>acceptance_rate</code></th><td class="num" data-label="Figure">0%</td><td data-label="Flagged when">below 30%</td><td data-label="Flagged">no <span class="muted">(no task offers reported)</span></td></tr>`,
		`<tr><th scope="row"><code>conduit_burst</code></th><td class="num" data-label="Figure">`,
		"this server's, 2026-06-15 12:00 UTC")
	// The thresholds are the deployment's.
	th := s.u.Signals.Thresholds()
	th.AP2Top5BuyerShare = 1
	cfg := s.cfg
	cfg.SignalThresholds = th
	s.pages.svc.Signals = service.New(s.store, cfg).Signals
	mustContain(t, get("/operator/signals?q=agent-7", 200), `<td class="num" data-label="Figure">100%</td><td data-label="Flagged when">above 100%</td><td data-label="Flagged">no</td>`)
	mustContain(t, get("/operator/signals?q=ghost", 200), "No agent has the id “ghost”.")
	mustContain(t, get("/operator/signals?q=a+b", 400), "An agent id is")
}

// TestPagesRequireConsent: with consent required, an agent's page, badge
// and leaderboard row appear only once it has consented.
func TestPagesRequireConsent(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{}, func(_ service.Backend, cfg *service.Config, _ *clock) { cfg.RequireConsent = true })
	mustContain(t, s.get("/agents/agent-7").page(t, 404), "No agent with a public SwarmScore has the id “agent-7”.")
	if s.get("/badge/agent-7.svg").code != 404 {
		t.Fatal("the badge of an agent that has not consented is served")
	}
	mustContain(t, s.get("/").page(t, 200), "No listed agent has a score yet.")
	mustNotContain(t, s.get("/").body, "agent-7", "elite-1")
	if _, err := s.u.Rights.RecordConsent(context.Background(), service.Caller{Operator: "op", AgentID: "agent-7"}, "agent-7", ""); err != nil {
		t.Fatal(err)
	}
	s.get("/agents/agent-7").page(t, 200)
	if r := s.get("/badge/agent-7.svg"); r.code != 200 {
		t.Fatalf("badge after consent: %d", r.code)
	}
	home := s.get("/").page(t, 200)
	if ids := rows(home); len(ids) != 1 || ids[0] != "agent-7" {
		t.Fatalf("leaderboard after one consent: %v", ids)
	}
}
