package web

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/httpapi"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/web/webtest"
	"github.com/swarmscore/swarmscore/score"
)

// maxPageBytes is the limit on any page.
const maxPageBytes = 100 << 10

// page asserts r is a complete HTML page with the site's security headers,
// within the size limit, whose script carries the response's nonce, whose
// every form control has a label, and that loads nothing from another
// origin. It returns the body.
func (r response) page(t *testing.T, status int) string {
	t.Helper()
	if r.code != status {
		t.Fatalf("status %d, want %d\n%s", r.code, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
	if len(r.body) > maxPageBytes {
		t.Fatalf("page is %d bytes, over %d", len(r.body), maxPageBytes)
	}
	nonce := checkSecurityHeaders(t, r.header)
	if !strings.HasPrefix(r.body, "<!doctype html>\n<html lang=\"en\">") || !strings.HasSuffix(r.body, "</html>\n") {
		t.Fatalf("not a whole page: %.80q … %q", r.body, r.body[max(0, len(r.body)-40):])
	}
	scripts := regexp.MustCompile(`<script[^>]*>`).FindAllString(r.body, -1)
	for _, s := range scripts {
		if !strings.Contains(s, `nonce="`+nonce+`"`) || !strings.Contains(s, `src="/assets/`) {
			t.Fatalf("script without the response's nonce or not from this origin: %s (nonce %s)", s, nonce)
		}
	}
	// Resources (not links to follow) come from this origin only.
	for _, m := range regexp.MustCompile(`(?:src|<link[^>]*href)="([^"]*)"`).FindAllStringSubmatch(r.body, -1) {
		if !strings.HasPrefix(m[1], "/") || strings.HasPrefix(m[1], "//") {
			t.Fatalf("a resource from elsewhere: %s", m[0])
		}
	}
	checkLabels(t, r.body)
	return r.body
}

// checkSecurityHeaders asserts the headers every response of the site
// carries and returns the policy's script nonce.
func checkSecurityHeaders(t *testing.T, h http.Header) string {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	m := regexp.MustCompile(`^default-src 'none'; script-src 'nonce-([A-Za-z0-9_-]{22})'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'$`).FindStringSubmatch(csp)
	if m == nil {
		t.Fatalf("Content-Security-Policy %q", csp)
	}
	for k, v := range map[string]string{
		"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY",
		"Cross-Origin-Opener-Policy": "same-origin",
	} {
		if got := h.Get(k); got != v {
			t.Fatalf("%s: %q, want %q", k, got, v)
		}
	}
	return m[1]
}

// checkLabels asserts that every visible form control has a label naming
// its id.
func checkLabels(t *testing.T, body string) {
	t.Helper()
	for _, c := range regexp.MustCompile(`<(input|select|textarea)\b[^>]*>`).FindAllString(body, -1) {
		if strings.Contains(c, `type="hidden"`) {
			continue
		}
		id := regexp.MustCompile(`\bid="([^"]+)"`).FindStringSubmatch(c)
		if id == nil || !strings.Contains(body, `<label for="`+id[1]+`">`) {
			t.Fatalf("form control without a label: %s", c)
		}
	}
}

func mustContain(t *testing.T, body string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Fatalf("page lacks %q", w)
		}
	}
}

func mustNotContain(t *testing.T, body string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(body, b) {
			t.Fatalf("page holds %q", b)
		}
	}
}

// rows returns the agent ids of a table's rows, in order.
func rows(body string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`<th scope="row" class="id-cell"><a href="/agents/([^"]+)" title="[^"]*">`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func TestHome(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	body := s.get("/").page(t, 200)
	mustContain(t, body,
		"SwarmScore is an open reputation score for AI agents",
		`<label for="agent">Find an agent by id</label>`,
		`<a href="https://datatracker.ietf.org/doc/draft-stone-swarmscore-v1/">draft-stone-swarmscore-v1</a>`,
		"400 × rate × min(1, sessions/100)", "1 − score/1250",
		disclaimer,
		`<td class="num" data-label="Score">983</td><td data-label="Tier"><span class="tier tier-elite">ELITE</span></td>`,
		`<td class="num" data-label="Score">760</td><td data-label="Tier"><span class="tier tier-standard">STANDARD</span></td>`,
		`<td class="num" data-label="Escrow hold">39.2%</td>`)
	mustNotContain(t, body, "shy-agent")
	first := rows(body)
	if len(first) != leaderboardSize || first[0] != "elite-1" || first[1] != "agent-7" {
		t.Fatalf("first page %v", first)
	}
	if !strings.Contains(body, "<tr><td data-label=\"#\">1</td><th scope=\"row\" class=\"id-cell\"><a href=\"/agents/elite-1\"") {
		t.Fatal("ranks do not start at 1")
	}
	next := regexp.MustCompile(`<a href="([^"]+)" rel="next">Next page</a>`).FindStringSubmatch(body)
	if next == nil {
		t.Fatal("no next page link")
	}
	href := strings.ReplaceAll(next[1], "&amp;", "&")
	body = s.get(href).page(t, 200)
	second := rows(body)
	// 3 agents and 28 fillers are listed; the unlisted one is not.
	if len(first)+len(second) != 31 || strings.Contains(body, "Next page") || !strings.Contains(body, `<a href="/">First page</a>`) {
		t.Fatalf("second page %v", second)
	}
	if !strings.Contains(body, fmt.Sprintf("<tr><td data-label=\"#\">%d</td>", leaderboardSize+1)) {
		t.Fatal("ranks do not continue on the second page")
	}
	for _, id := range second {
		for _, f := range first {
			if id == f {
				t.Fatalf("%s on both pages", id)
			}
		}
	}

	// Filtered by tier: at least STANDARD, then ELITE only.
	if ids := rows(s.get("/?tier=STANDARD").page(t, 200)); fmt.Sprint(ids) != "[elite-1 agent-7]" {
		t.Fatalf("STANDARD and above: %v", ids)
	}
	body = s.get("/?tier=ELITE").page(t, 200)
	if ids := rows(body); fmt.Sprint(ids) != "[elite-1]" || !strings.Contains(body, `<option value="ELITE" selected>`) {
		t.Fatalf("ELITE: %v", ids)
	}
	mustContain(t, s.get("/?tier=bogus").page(t, 400), "Unknown tier")
	mustContain(t, s.get("/?after=nonsense").page(t, 400), "start again from the first page")

	// The search box goes to the agent's page, or says what an id is.
	r := s.get("/?agent=+agent-7+")
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/agents/agent-7" {
		t.Fatalf("search: %d %q", r.code, r.header.Get("Location"))
	}
	body = s.get("/?agent="+url.QueryEscape("no spaces <b>")).page(t, 400)
	mustContain(t, body, `aria-invalid="true"`, "An agent id is 1 to 128", `value="no spaces &lt;b&gt;"`)
}

// TestLeaderboardSort: the leaderboard orders by score, Conduit points,
// AP2 points or escrow hold through links (no script), server-side and
// across pages, keeps the order with the tier filter, and says as of when.
func TestLeaderboardSort(t *testing.T) { onBothBackEnds(t, testLeaderboardSort) }

func testLeaderboardSort(t *testing.T, s *site) {
	body := s.get("/").page(t, 200)
	mustContain(t, body, `scores as of <time datetime="2026-06-15T12:00:00Z">2026-06-15 12:00 UTC</time>`,
		`<th scope="col" class="num sort" aria-sort="descending"><a href="/" aria-current="true">Score</a></th>`,
		`<a href="/?sort=conduit">Conduit points</a>`, `<a href="/?sort=ap2">AP2 points</a>`, `<a href="/?sort=escrow">Escrow hold</a>`,
		`<td class="num" data-label="Conduit points (sessions)">304 <span class="muted">(80)</span></td>`)
	// Every order, read page by page, against the cache's entries sorted here.
	all, err := s.u.Certificates.Ranking(t.Context(), service.RankingQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range sortOptions {
		want := slices.Clone(all.Agents)
		slices.SortStableFunc(want, func(a, b ledger.ScoreEntry) int {
			if c := cmp.Compare(o.By.Key(b.Result), o.By.Key(a.Result)); c != 0 {
				return c
			}
			return strings.Compare(a.AgentID, b.AgentID)
		})
		var wantIDs, got []string
		for _, e := range want {
			wantIDs = append(wantIDs, e.AgentID)
		}
		href := "/?sort=" + o.Value
		for page := 0; href != ""; page++ {
			body := s.get(href).page(t, 200)
			mustContain(t, body, "Agents "+o.Caption)
			got = append(got, rows(body)...)
			href = ""
			if m := regexp.MustCompile(`<a href="([^"]+)" rel="next">`).FindStringSubmatch(body); m != nil {
				href = strings.ReplaceAll(m[1], "&amp;", "&")
				if o.Value != "score" && !strings.Contains(href, "sort="+o.Value) {
					t.Fatalf("next page %q loses the order", href)
				}
			}
			if page > 3 {
				t.Fatal("pages do not end")
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(wantIDs) {
			t.Errorf("sort=%s: %v\nwant %v", o.Value, got, wantIDs)
		}
	}
	// Escrow is the lowest hold first (the score order, checked above), marked ascending.
	body = s.get("/?sort=escrow").page(t, 200)
	mustContain(t, body, `aria-sort="ascending"><a href="/?sort=escrow" aria-current="true">Escrow hold</a>`)
	// AP2 points with the STANDARD filter: the filter form keeps the order.
	body = s.get("/?sort=ap2&tier=STANDARD").page(t, 200)
	mustContain(t, body, `<input type="hidden" name="sort" value="ap2">`, "Agents by AP2 points, highest first")
	if ids := rows(body); fmt.Sprint(ids) != "[elite-1 agent-7]" {
		t.Fatalf("STANDARD by AP2: %v", ids)
	}
	mustContain(t, s.get("/?sort=bogus").page(t, 400), "Unknown order")
}

func TestAgentPage(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	body := s.get("http://scores.example:8443/agents/agent-7").page(t, 200)
	mustContain(t, body,
		`<span class="score-value">760</span>`, `<span class="tier tier-large tier-standard">STANDARD</span>`,
		// The dimensions against their maxima, with counts and rates.
		"<strong>304</strong> of 400 points", "<strong>456</strong> of 600 points",
		`<rect width="76" height="8" rx="1" class="bar-fill"/>`,
		"76 of 80 sessions verified (95%) in 90 days · volume factor 0.8",
		"38 of 40 transactions settled (95%) in 90 days · volume factor 0.8",
		// The gaps in words.
		"To reach <strong>ELITE</strong>", "<li>90 more points</li>", "<li>20 more Conduit sessions</li>", "<li>10 more AP2 transactions</li>",
		// The escrow sentence and the agent's point on the curve: x = 64 +
		// 760·548/1000 = 480.5, y = 16 + (1 − 0.392)·240 = 161.9; the
		// floor starts at 937.5, x = 577.75.
		"a $1,000 payment holds $392 in escrow (39.2%) and releases $608",
		`<path class="curve" d="M64 16 L577.8 196 L612 196"/>`, `<circle class="point" cx="480.5" cy="161.9" r="6"/>`,
		// The passport.
		"Signature valid: signed by this server on 2026-06-15 12:00 UTC, expires 2026-06-22 12:00 UTC (in 7 days).", `<p class="status status-neutral">`,
		`href="/swarmscore/agent-7/certificate" download="agent-7-passport.json"`,
		// The badge and its snippet for this host.
		`<img src="/badge/agent-7.svg" alt="SwarmScore 760 STANDARD" height="20">`,
		"[![SwarmScore](http://scores.example:8443/badge/agent-7.svg)](http://scores.example:8443/agents/agent-7)",
		disclaimer)

	// The history: one daily point from the agent's first counted day
	// (not 90 with a flat 0 before it), each the ledger's score as of that
	// day (the service's reference, AgentScore as of the day's end).
	line := regexp.MustCompile(`<polyline class="line" points="([^"]+)"/>`).FindStringSubmatch(body)
	days := regexp.MustCompile(`<tr><th scope="row">(\d{4}-\d\d-\d\d)</th><td class="num">(\d+)</td><td>(\w+)</td></tr>`).FindAllStringSubmatch(body, -1)
	if line == nil || len(strings.Fields(line[1])) != len(days) {
		t.Fatalf("history line: %v, %d rows", line, len(days))
	}
	last := len(days) - 1
	if len(days) != 83 || days[last][1] != "2026-06-15" || days[last][2] != "760" || days[0][1] != "2026-03-25" {
		t.Fatalf("%d daily rows, first %v, last %v", len(days), days[0], days[last])
	}
	first, _ := time.Parse(time.DateOnly, days[0][1])
	before, err := s.u.Certificates.AgentScore(t.Context(), "agent-7", first.Add(-ledger.Resolution))
	if err != nil {
		t.Fatal(err)
	}
	if c := before.Entry.Result; c.Conduit().Total+c.AP2().Total != 0 {
		t.Fatalf("the chart starts on %s, but the day before already counts %+v", days[0][1], c)
	}
	for _, i := range []int{0, 30, 60, last - 1} {
		day, _ := time.Parse(time.DateOnly, days[i][1])
		ref, err := s.u.Certificates.AgentScore(t.Context(), "agent-7", day.Add(24*time.Hour-ledger.Resolution))
		if err != nil {
			t.Fatal(err)
		}
		if days[i][2] != fmt.Sprint(ref.Entry.Result.Score) || days[i][3] != ref.Entry.Result.Tier.String() {
			t.Fatalf("%s: page %s %s, ledger %d %s", days[i][1], days[i][2], days[i][3], ref.Entry.Result.Score, ref.Entry.Result.Tier)
		}
	}
	// Context: as of, the change over 30 days (against the table's row of
	// 30 days ago), the events behind the score, dated axes with ticks,
	// tier labels right of the plot, and the escrow chart's 0% tick.
	month := days[last-30]
	mustContain(t, body, `as of <time datetime="2026-06-15T12:00:00Z">2026-06-15 12:00 UTC</time>`,
		fmt.Sprintf("in 30 days <span class=\"muted\">(from %s on %s)</span>", month[2], month[1]),
		"Based on 120 events since 2026-03-25 (the last 90 days).",
		"38 settled, 2 disputed, 0 refunded", "2 disputed and 0 refunded transactions in 90 days.", "No chargebacks.", "No corrections.", "No open appeal.",
		`text-anchor="middle">Jun 15</text>`, `<text x="538" y="`, ">ELITE</text>", ">0%</text>")
	mustNotContain(t, body, "Not enough history yet", "Low score")
	if n := strings.Count(body, `<line x1="`) - strings.Count(body, `<line x1="52" x2="532"`); n < 10 {
		t.Fatalf("%d axis and tick lines", n)
	}
	if days[0][2] == days[last][2] {
		t.Fatal("the seeded history is flat")
	}

	// ELITE has no next tier; a low agent needs STANDARD in words.
	mustContain(t, s.get("/agents/elite-1").page(t, 200), "ELITE is the highest tier", "a $1,000 payment holds $250 in escrow (25%)")
	mustContain(t, s.get("/agents/newbie").page(t, 200), "To reach <strong>STANDARD</strong>", "<li>47 more Conduit sessions</li>", "<li>24 more AP2 transactions</li>")

	// Unknown, unlisted and malformed agents are the same 404 page.
	ghost := s.get("/agents/ghost").page(t, 404)
	shy := s.get("/agents/shy-agent").page(t, 404)
	mustContain(t, ghost, "No agent with a public SwarmScore has the id “ghost”.")
	mustContain(t, shy, "No agent with a public SwarmScore has the id “shy-agent”.")
	requestID := regexp.MustCompile(`request id <code>[0-9a-f]+</code>|nonce="[^"]+"`)
	if requestID.ReplaceAllString(strings.ReplaceAll(ghost, "ghost", "X"), "") != requestID.ReplaceAllString(strings.ReplaceAll(shy, "shy-agent", "X"), "") {
		t.Fatal("an unlisted agent's 404 differs from an unknown agent's")
	}
	body = s.get("/agents/"+url.PathEscape("bad <id>"+strings.Repeat("x", 200))).page(t, 404)
	mustContain(t, body, "That is not an agent id")
	mustNotContain(t, body, "bad", "xxxxxxxx")
}

// TestAgentPageStates: an agent below the volume a tier needs is "not
// enough history yet", apart from a low score; no transactions is said in
// words; a chargeback, a correction and an open appeal are shown; the
// escrow calculator answers any amount without a script.
func TestAgentPageStates(t *testing.T) { onBothBackEnds(t, testAgentPageStates) }

func testAgentPageStates(t *testing.T, s *site) {
	body := s.get("/agents/newbie").page(t, 200)
	mustContain(t, body, `<span class="tier tier-large tier-new">Not enough history yet</span>`,
		"This agent needs 47 more Conduit sessions and 24 more AP2 transactions before it can be rated STANDARD.")
	mustNotContain(t, body, "Low score", "in 30 days")

	// fill-00 has sessions and two transactions but never reaches STANDARD's volume.
	mustContain(t, s.get("/agents/fill-00").page(t, 200), "This agent needs 40 more Conduit sessions and 23 more AP2 transactions")

	// Seen once (and so remembered), then a chargeback (settled, then
	// refunded) and an open appeal of agent-7: the page shows them at once.
	mustContain(t, s.get("/agents/agent-7").page(t, 200), "No chargebacks.", "No corrections.", "No open appeal.")
	if _, _, err := s.u.Corrections.Correct(t.Context(), ledger.CorrectionRequest{
		EventType: ledger.AP2Transaction, EventID: "agent-7-t0", Action: ledger.ActionStatus, Status: ledger.Refunded,
		Reason: "chargeback reported by the card network", By: "market-1", At: testNow,
	}); err != nil {
		t.Fatal(err)
	}
	a, err := webtest.SeedAppeal(t.Context(), s.u)
	if err != nil {
		t.Fatal(err)
	}
	body = s.get("/agents/agent-7").page(t, 200)
	mustContain(t, body, "37 of 40 transactions settled", "37 settled, 2 disputed, 1 refunded",
		"2 disputed and 1 refunded transactions in 90 days.", "1 chargeback: settled payment later reversed.",
		"1 event corrected by the operator", "An appeal filed "+a.FiledAt.UTC().Format(time.DateOnly)+" is open (submitted).")
	mustNotContain(t, body, a.Statement)
	// Another appeal changes no certificate, yet the page (cached by its
	// inputs) shows it.
	if _, err := webtest.SeedAppeal(t.Context(), s.u); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(s.get("/agents/agent-7").page(t, 200), "is open (submitted)."); n != 2 {
		t.Fatalf("%d open appeals shown, want 2", n)
	}

	// The calculator: an amount in dollars, rounded in the buyer's favour.
	res, err := s.u.Certificates.PublicProfile(t.Context(), "agent-7", false)
	if err != nil {
		t.Fatal(err)
	}
	hold, released, _ := score.HoldCents(123456, res.Result.Score)
	body = s.get("/agents/agent-7?amount="+url.QueryEscape("$1,234.56")).page(t, 200)
	mustContain(t, body, `value="$1,234.56"`, fmt.Sprintf("A $1,234.56 payment holds <strong>$%d.%02d</strong> in escrow and releases $%d.%02d at once.",
		hold/100, hold%100, released/100, released%100))
	for _, bad := range []string{"12.345", "-5", "abc", "1e9", "10000000000000", ""} {
		body = s.get("/agents/agent-7?amount="+url.QueryEscape(bad)).page(t, 400)
		mustContain(t, body, `aria-invalid="true"`, `<p class="error" role="alert" id="amount-error">`)
	}
}

func TestParseDollars(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1": 100, "$1,000": 100000, "12.5": 1250, "12.05": 1205, " 7.99 ": 799, "1000000000000": 100000000000000} {
		if got, msg := parseDollars(in); got != want || msg != "" {
			t.Errorf("parseDollars(%q) = %d %q, want %d", in, got, msg, want)
		}
	}
	for _, in := range []string{"", ".", "1.", ".5", "1.234", "1e3", "-1", "1 000", "１", "1000000000001", "$$1"} {
		if _, msg := parseDollars(in); msg == "" {
			t.Errorf("parseDollars(%q) accepted", in)
		}
	}
}

func TestBadge(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	// Issued now, served an hour later.
	s.get("/badge/agent-7.svg")
	s.clock.advance(time.Hour)
	r := s.get("/badge/agent-7.svg")
	if r.code != 200 || r.header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("badge: %d %q", r.code, r.header.Get("Content-Type"))
	}
	checkSecurityHeaders(t, r.header)
	if err := xml.Unmarshal([]byte(r.body), new(struct{})); err != nil {
		t.Fatalf("the badge is not well-formed XML: %v\n%s", err, r.body)
	}
	mustContain(t, r.body, `aria-label="SwarmScore: 760 STANDARD"`, ">SwarmScore</text>", ">760 STANDARD</text>", `fill="#0969da"`)
	// Its freshness is the certificate's.
	cert := s.get("/swarmscore/agent-7/certificate")
	for _, h := range []string{"Cache-Control", "Expires"} {
		if r.header.Get(h) != cert.header.Get(h) {
			t.Fatalf("%s: badge %q, certificate %q", h, r.header.Get(h), cert.header.Get(h))
		}
	}
	if r.header.Get("Cache-Control") == "" {
		t.Fatal("the badge has no Cache-Control")
	}
	etag := r.header.Get("ETag")
	if !strings.HasPrefix(etag, `"badge`+badgeVersion+"-") || !strings.Contains(etag, strings.Trim(cert.header.Get("ETag"), `"`)) {
		t.Fatalf("ETag %q, certificate's %q", etag, cert.header.Get("ETag"))
	}
	if nm := s.get("/badge/agent-7.svg", "If-None-Match", etag); nm.code != http.StatusNotModified || nm.body != "" {
		t.Fatalf("If-None-Match: %d", nm.code)
	}
	// A new certificate (a new event) is a new badge.
	events := `{"type":"conduit_session","id":"late-1","agent_id":"agent-7","status":"VERIFIED","started_at":"2026-06-15T12:00:00Z","completed_at":"2026-06-15T12:30:00Z"}`
	if _, err := s.u.Ingest.IngestEvents(t.Context(), "market-1", strings.NewReader(events)); err != nil {
		t.Fatal(err)
	}
	// 81 sessions, 77 verified: conduit 4·77 = 308, score 308 + 456.
	if r2 := s.get("/badge/agent-7.svg", "If-None-Match", etag); r2.code != 200 || r2.header.Get("ETag") == etag || !strings.Contains(r2.body, ">764 STANDARD</text>") {
		t.Fatalf("after a new event: %d %q\n%s", r2.code, r2.header.Get("ETag"), r2.body)
	}
	mustContain(t, s.get("/badge/elite-1.svg").body, ">983 ELITE</text>", `fill="#1a7f37"`)
	// No public score: a grey "not found" badge, for unknown and unlisted alike.
	for _, id := range []string{"ghost", "shy-agent"} {
		nf := s.get("/badge/" + id + ".svg")
		if nf.code != 404 || nf.header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(nf.body, ">not found</text>") {
			t.Fatalf("%s: %d %s", id, nf.code, nf.body)
		}
	}
	// Every other URL under /badge/ is a badge too, never a page.
	for _, path := range []string{"/badge/agent-7.png", "/badge/", "/badge/a/b.svg", "/badge/bad%20id.svg", "/badge/" + strings.Repeat("x", 129) + ".svg"} {
		nf := s.get(path)
		if nf.code != 404 || nf.header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(nf.body, ">not found</text>") {
			t.Fatalf("%s: %d %q %s", path, nf.code, nf.header.Get("Content-Type"), nf.body)
		}
		checkSecurityHeaders(t, nf.header)
	}

	// Options: flat-square has square corners and no gradient; a label is
	// escaped, stripped of control characters and bounded; an unknown
	// style is a badge saying so.
	sq := s.get("/badge/agent-7.svg?style=flat-square&label=" + url.QueryEscape("<b>Trust\x00 me</b>"))
	if sq.code != 200 || strings.Contains(sq.body, `rx="3"`) || strings.Contains(sq.body, "linearGradient") ||
		!strings.Contains(sq.body, ">&lt;b&gt;Trust me&lt;/b&gt;</text>") || sq.header.Get("ETag") == etag {
		t.Fatalf("flat-square with a label: %d %q\n%s", sq.code, sq.header.Get("ETag"), sq.body)
	}
	if err := xml.Unmarshal([]byte(sq.body), new(struct{})); err != nil {
		t.Fatalf("not well-formed: %v", err)
	}
	long := s.get("/badge/agent-7.svg?label=" + strings.Repeat("L", 100))
	mustContain(t, long.body, ">"+strings.Repeat("L", 31)+"…</text>")
	if flat := s.get("/badge/agent-7.svg?style=flat"); !strings.Contains(flat.body, `rx="3"`) {
		t.Fatalf("flat: %s", flat.body)
	}
	bad := s.get("/badge/agent-7.svg?style=plastic")
	if bad.code != 400 || bad.header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(bad.body, ">unknown style</text>") {
		t.Fatalf("unknown style: %d %s", bad.code, bad.body)
	}

	// The shields.io endpoint.
	js := s.get("/badge/elite-1.json?label=score")
	var e map[string]any
	if err := json.Unmarshal([]byte(js.body), &e); err != nil || js.code != 200 || js.header.Get("Content-Type") != "application/json" {
		t.Fatalf("endpoint: %d %v %s", js.code, err, js.body)
	}
	want := map[string]any{"schemaVersion": 1.0, "label": "score", "message": "983 ELITE", "color": "1a7f37", "cacheSeconds": 300.0}
	if !reflect.DeepEqual(e, want) {
		t.Fatalf("endpoint %v, want %v", e, want)
	}
	checkSecurityHeaders(t, js.header)
	if js.header.Get("ETag") == "" || js.header.Get("ETag") == s.get("/badge/elite-1.svg?label=score").header.Get("ETag") {
		t.Fatal("the JSON and the SVG share an ETag")
	}
	for path, code := range map[string]int{"/badge/ghost.json": 404, "/badge/bad%20id.json": 404, "/badge/elite-1.json?style=x": 400} {
		r := s.get(path)
		var e shieldsEndpoint
		if r.code != code || json.Unmarshal([]byte(r.body), &e) != nil || e.SchemaVersion != 1 || !e.IsError {
			t.Fatalf("%s: %d %s", path, r.code, r.body)
		}
	}
}

// A badge whose passport has expired, or no longer verifies, says so in
// grey.
func TestBadgeStale(t *testing.T) {
	prof := service.Profile{Valid: true, Certificate: service.Certificate{ExpiresAt: testNow.Add(time.Hour)},
		Result: score.Result{Score: 760, Tier: score.TierStandard}}
	if m, c, stale := badgeFace(prof, testNow); m != "760 STANDARD" || c != "#0969da" || stale {
		t.Fatalf("fresh: %q %q %v", m, c, stale)
	}
	if m, c, stale := badgeFace(prof, testNow.Add(time.Hour)); m != "760 STANDARD (stale)" || c != staleColor || !stale {
		t.Fatalf("expired: %q %q %v", m, c, stale)
	}
	prof.Valid = false
	if _, _, stale := badgeFace(prof, testNow); !stale {
		t.Fatal("a passport that does not verify is not stale")
	}
}

// NONE is two things (E70): a badge says "new agent" below STANDARD's
// volume, and the score and tier once the agent has it.
func TestBadgeNewAgent(t *testing.T) {
	compute := func(c score.Counts) score.Result {
		r, err := score.Compute(c)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	prof := service.Profile{Valid: true, Certificate: service.Certificate{ExpiresAt: testNow.Add(time.Hour)},
		Result: compute(score.Counts{ConduitTotal: 2, ConduitSuccess: 1, AP2Total: 1, AP2Success: 1})}
	if m, c, _ := badgeFace(prof, testNow); m != "new agent" || c != tierColor(score.TierNone) {
		t.Errorf("new: %q %q", m, c)
	}
	if m, _, _ := badgeFace(prof, testNow.Add(time.Hour)); m != "new agent (stale)" {
		t.Errorf("new, expired: %q", m)
	}
	prof.Result = compute(score.Counts{ConduitTotal: 50, ConduitSuccess: 10, AP2Total: 25, AP2Success: 5})
	want := fmt.Sprint(prof.Result.Score) + " NONE"
	if m, _, _ := badgeFace(prof, testNow); m != want || prof.Result.Tier != score.TierNone {
		t.Errorf("low: %q, want %q", m, want)
	}
}

// certificate returns agent's current passport from the API.
func (s *site) certificate(t *testing.T, agent string) string {
	t.Helper()
	r := s.get("/swarmscore/" + agent + "/certificate")
	if r.code != 200 {
		t.Fatalf("certificate: %d %s", r.code, r.body)
	}
	return r.body
}

// checks reads the checks of a verify page: name → state.
func checks(body string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`<li class="check status-(\w+)">.*?<strong>([^<]+)</strong>`).FindAllStringSubmatch(body, -1) {
		out[m[2]] = m[1]
	}
	return out
}

func multipartBody(t *testing.T, fields map[string]string, file string) (io.Reader, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	if file != "" {
		fw, err := mw.CreateFormFile("passport_file", "passport.json")
		if err != nil {
			t.Fatal(err)
		}
		fw.Write([]byte(file))
	}
	mw.Close()
	return &b, mw.FormDataContentType()
}

func TestVerifyPage(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	body := s.get("/verify").page(t, 200)
	mustContain(t, body, `enctype="multipart/form-data"`, `<label for="passport">Passport (JSON)</label>`, `type="file"`)
	mustNotContain(t, body, `class="check`)

	doc := s.certificate(t, "agent-7")
	body = s.postForm("/verify", url.Values{"passport": {doc}}).page(t, 200)
	mustContain(t, body, "Valid passport for agent-7")
	mustNotContain(t, body, "Tampering detected")
	if c := checks(body); fmt.Sprint(c) != "map[Agent:skip Expiry:pass Ledger:pass Score consistency:pass Signature:pass]" {
		t.Fatalf("checks of a valid passport: %v", c)
	}
	mustContain(t, body, "No agent id was given: the passport was checked for the agent it names.")
	// Named for its own agent, the agent check passes too.
	body = s.postForm("/verify", url.Values{"passport": {doc}, "agent_id": {"agent-7"}}).page(t, 200)
	if c := checks(body); c["Agent"] != "pass" || !strings.Contains(body, "The passport is for agent “agent-7”.") {
		t.Fatalf("checks for its own agent: %v", c)
	}

	// The tampered passport of the README, uploaded: the signature and the
	// score fail, as POST /swarmscore/verify says.
	tampered := strings.Replace(doc, `"value":760`, `"value":900`, 1)
	mb, ct := multipartBody(t, map[string]string{"passport": ""}, tampered)
	body = s.do("POST", "/verify", mb, "Content-Type", ct).page(t, 200)
	mustContain(t, body, "Not valid for agent-7</h2>", "Tampering detected", "score.value is 900; the counts give 760",
		"the signature does not match the document")
	if c := checks(body); fmt.Sprint(c) != "map[Agent:skip Expiry:pass Ledger:pass Score consistency:fail Signature:fail]" {
		t.Fatalf("checks of a tampered passport: %v", c)
	}
	req, _ := json.Marshal(map[string]any{"certificate": json.RawMessage(tampered), "agent_id": "agent-7"})
	var api struct {
		Valid             bool `json:"valid"`
		DetectedTampering bool `json:"detected_tampering"`
		Errors            []struct{ Code, Message string }
	}
	if r := s.do("POST", "/swarmscore/verify", bytes.NewReader(req)); json.Unmarshal([]byte(r.body), &api) != nil || api.Valid || !api.DetectedTampering {
		t.Fatalf("the API disagrees: %s", r.body)
	}
	for _, e := range api.Errors {
		mustContain(t, body, e.Code)
	}

	// Presented for another agent: the agent check fails, as tampering.
	body = s.postForm("/verify", url.Values{"passport": {doc}, "agent_id": {"elite-1"}}).page(t, 200)
	if c := checks(body); c["Agent"] != "fail" || c["Signature"] != "pass" || !strings.Contains(body, "Tampering detected") {
		t.Fatalf("another agent's passport: %v", c)
	}
	// Another server's agent: the ledger check does not apply.
	s.clock.advance(8 * 24 * time.Hour)
	expired := s.postForm("/verify", url.Values{"passport": {doc}}).page(t, 200)
	if c := checks(expired); c["Expiry"] != "fail" || !strings.Contains(expired, "expired at 2026-06-22T12:00:00Z") {
		t.Fatalf("an expired passport: %v", c)
	}
	foreign := strings.ReplaceAll(doc, `"agent_id":"agent-7"`, `"agent_id":"elsewhere-1"`)
	if c := checks(s.postForm("/verify", url.Values{"passport": {foreign}}).page(t, 200)); c["Ledger"] != "skip" {
		t.Fatalf("a passport for an agent this server does not hold: %v", c)
	}
	// Not a passport at all.
	body = s.postForm("/verify", url.Values{"passport": {`{"hello": "world"`}}).page(t, 200)
	if c := checks(body); c["Signature"] != "fail" || c["Score consistency"] != "fail" || c["Ledger"] != "skip" {
		t.Fatalf("not JSON: %v", c)
	}
	mustContain(t, body, "invalid_json", `{&#34;hello&#34;: &#34;world&#34;</textarea>`)

	// Nothing to verify, an impossible agent id, too much.
	mustContain(t, s.postForm("/verify", url.Values{"passport": {"  "}}).page(t, 400), "Paste a passport or choose a passport file.")
	mustContain(t, s.postForm("/verify", url.Values{"passport": {doc}, "agent_id": {"a b"}}).page(t, 400), "An agent id is")
	huge := `{"pad":"` + strings.Repeat("x", 70<<10) + `"}`
	body = s.postForm("/verify", url.Values{"passport": {huge}}).page(t, 413)
	mustNotContain(t, body, "xxxxxxxxxx")
	mb, ct = multipartBody(t, nil, strings.Repeat("y", 300<<10))
	s.do("POST", "/verify", mb, "Content-Type", ct).page(t, 413)
	// The largest passport shown again still fits in a page.
	big := `{"pad":"` + strings.Repeat("z", 64<<10-10) + `"}`
	s.postForm("/verify", url.Values{"passport": {big}}).page(t, 200)
}

func TestAssets(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	for _, name := range []string{"style.css", "app.js", "favicon.svg"} {
		r := s.get(assetURL(name))
		if r.code != 200 || r.header.Get("Cache-Control") != "public, max-age=31536000, immutable" || len(r.body) == 0 {
			t.Fatalf("%s: %d %q", name, r.code, r.header.Get("Cache-Control"))
		}
		checkSecurityHeaders(t, r.header)
		if stale := s.get("/assets/" + name); stale.header.Get("Cache-Control") != "no-cache" {
			t.Fatalf("%s without its version: %q", name, stale.header.Get("Cache-Control"))
		}
		if nm := s.get(assetURL(name), "If-None-Match", r.header.Get("ETag")); nm.code != 304 {
			t.Fatalf("%s revalidated: %d", name, nm.code)
		}
	}
	if ct := s.get(assetURL("style.css")).header.Get("Content-Type"); !strings.HasPrefix(ct, "text/css") {
		t.Fatalf("style.css: %q", ct)
	}
	s.get("/assets/nothing.js").page(t, 404)
}

func TestPublicRateLimit(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{RateLimit: 1, RateBurst: 2})
	s.get("/").page(t, 200)
	s.get("/agents/agent-7").page(t, 200)
	r := s.get("/verify")
	body := r.page(t, http.StatusTooManyRequests)
	if r.header.Get("Retry-After") != "1" || !strings.Contains(body, "Wait 1 second and try again.") {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// The API shares the bucket: it is empty for this client there too.
	if api := s.get("/swarmscore/agent-7"); api.code != http.StatusTooManyRequests {
		t.Fatalf("API after the pages used the bucket: %d", api.code)
	}
	// Assets are not limited.
	if a := s.get(assetURL("style.css")); a.code != 200 {
		t.Fatalf("asset: %d", a.code)
	}
}

// unavailable is use cases whose database is gone: every one fails as the
// back ends do, naming their internals.
type unavailable struct {
	ScoreService
	ConsoleService
}

func (unavailable) err() error {
	return fmt.Errorf("%w: sqlite: open /var/lib/swarmscore/ledger.db: disk I/O error", errkind.ErrUnavailable)
}
func (u unavailable) Ranking(context.Context, service.RankingQuery) (service.RankingPage, error) {
	return service.RankingPage{}, u.err()
}
func (u unavailable) PublicProfile(context.Context, string, bool) (service.Profile, error) {
	return service.Profile{}, u.err()
}
func (u unavailable) SignIn(context.Context, string, string, string, service.SessionPolicy) (service.NewSession, error) {
	return service.NewSession{}, u.err()
}

func TestErrorPages(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	// The database gone: a friendly 503 that names nothing internal.
	logs := &syncBuffer{}
	api := httpapi.New(httpapi.ServicesOf(s.u), httpapi.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	defer api.Close()
	svc := ServicesOf(s.u)
	down := unavailable{svc.Certificates, svc.Console}
	svc.Certificates, svc.Console = down, down
	Mount(api, svc, Options{})
	s.handler = api
	for _, path := range []string{"/", "/agents/agent-7"} {
		body := s.get(path).page(t, http.StatusServiceUnavailable)
		mustContain(t, body, "Temporarily unavailable", "request id <code>")
		mustNotContain(t, body, "sqlite", "ledger.db", "disk I/O")
	}
	// A sign-in that cannot be judged is a 503 and counts as no failure.
	for range signinBurst + 1 {
		form := openSignIn(t, s, "198.51.100.9:1000")
		body := form.submit(t, s, testToken).page(t, http.StatusServiceUnavailable)
		mustNotContain(t, body, testToken, "ledger.db")
	}
	s.get("/operator/nothing").page(t, 404)
	// Each 503 is counted and logged as the API's are: the first of the
	// outage at WARN, with its request id.
	mustContain(t, s.get("/metrics", "RemoteAddr", "127.0.0.1:1").body,
		`swarmscore_db_unavailable_responses_total{reason="refused"} `+itoa(2+signinBurst+1))
	mustContain(t, logs.String(), `"level":"WARN","msg":"request failed","request_id":"`, `"path":"/","problem":"unavailable"`)
	// Pages answer HEAD like GET, without a body.
	s2 := newSite(t, testNow, httpapi.Options{})
	if r := s2.do("HEAD", "/agents/agent-7", nil); r.code != 200 || r.body != "" || r.header.Get("Content-Length") == "" {
		t.Fatalf("HEAD: %d %q", r.code, r.body)
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{dollars(39200), "$392"}, {dollars(100000), "$1,000"}, {dollars(39250), "$392.50"}, {dollars(5), "$0.05"},
		{dollars(123456789), "$1,234,567.89"},
		{percent(76, 80), "95%"}, {percent(2, 3), "66.6%"}, {percent(9999, 10000), "99.9%"}, {percent(0, 0), "0%"},
		{modifierPercent(score.EscrowModifier(760)), "39.2%"}, {modifierPercent(score.EscrowModifier(0)), "100%"},
		{gapWords(score.Gap{Requirement: score.RequirementScore, Required: 850, Actual: 849}), "1 more point"},
		{gapWords(score.Gap{Requirement: score.RequirementAP2, Required: 25, Actual: 24}), "1 more AP2 transaction"},
		{gapWords(score.Gap{Requirement: score.RequirementConduit, Required: 1000, Actual: 0}), "1,000 more Conduit sessions"},
		{until(testNow, testNow.Add(7*24*time.Hour)), "in 7 days"}, {until(testNow, testNow.Add(5*time.Hour)), "in 5 hours"},
		{until(testNow, testNow.Add(-3*24*time.Hour)), "3 days ago"}, {until(testNow, testNow.Add(30*time.Second)), "in a moment"},
		{thousands(-1234), "-1,234"}, {plural(1, "second"), "1 second"}, {plural(2, "second"), "2 seconds"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// gone is use cases whose caller hung up: they fail with the request's
// cancellation, as a back end does when its query is cancelled.
type gone struct{ ScoreService }

func (gone) PublicProfile(ctx context.Context, _ string, _ bool) (service.Profile, error) {
	return service.Profile{}, fmt.Errorf("postgres: read profile: %w", ctx.Err())
}

// TestClientGonePage: a page whose client went away is answered 499 and
// logged at DEBUG, as an API request is, not as an internal error.
func TestClientGonePage(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	logs := &syncBuffer{}
	api := httpapi.New(httpapi.ServicesOf(s.u), httpapi.Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	defer api.Close()
	svc := ServicesOf(s.u)
	svc.Certificates = gone{svc.Certificates}
	Mount(api, svc, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest("GET", "/agents/agent-7", nil).WithContext(ctx))
	if rec.Code != 499 || rec.Body.Len() != 0 {
		t.Fatalf("%d %q, want 499 with no body", rec.Code, rec.Body.String())
	}
	mustContain(t, logs.String(), `"level":"DEBUG","msg":"client went away"`)
	mustNotContain(t, logs.String(), `"level":"ERROR"`)
}
