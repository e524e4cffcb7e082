package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/httpapi"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/web/webtest"
)

// console is a signed-in operator's browser on a site.
type console struct {
	t      *testing.T
	s      *site
	cookie string
	csrf   string
}

func openConsole(t *testing.T, s *site) *console {
	t.Helper()
	c := signIn(t, s, "192.0.2.1:1000")
	body := s.get("/operator/ingest", "Cookie", c.String()).page(t, 200)
	return &console{t: t, s: s, cookie: c.String(), csrf: csrfField.FindStringSubmatch(body)[1]}
}

func (c *console) get(target string, status int) string {
	c.t.Helper()
	r := c.s.get(target, "Cookie", c.cookie)
	if r.header.Get("Cache-Control") != "no-store" {
		c.t.Fatalf("%s: Cache-Control %q", target, r.header.Get("Cache-Control"))
	}
	return r.page(c.t, status)
}

// post sends a console form with the session's CSRF token.
func (c *console) post(target string, form url.Values) response {
	c.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", c.csrf)
	return c.s.postForm(target, form, "Cookie", c.cookie)
}

// redirected asserts r is a 303 to location.
func redirected(t *testing.T, r response, location string) {
	t.Helper()
	if r.code != http.StatusSeeOther || r.header.Get("Location") != location {
		t.Fatalf("%d to %q, want 303 to %q\n%s", r.code, r.header.Get("Location"), location, r.body)
	}
}

func TestConsoleAppeals(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	first, err := webtest.SeedAppeal(t.Context(), s.u)
	if err != nil {
		t.Fatal(err)
	}
	// Eight days on, the first appeal is overdue to acknowledge; a second
	// is filed, due in 7 days.
	s.clock.advance(8 * 24 * time.Hour)
	second, err := webtest.SeedAppeal(t.Context(), s.u)
	if err != nil {
		t.Fatal(err)
	}
	c := openConsole(t, s)

	// The queue: overdue first, with every column.
	body := c.get("/operator/appeals", 200)
	mustContain(t, body, `<a href="/operator/appeals" aria-current="page">Appeals</a>`,
		`<caption id="appeals-caption">2 appeals</caption>`,
		`<tr class="overdue"><th scope="row"><a href="/operator/appeals/`+first.ID+`">`+first.ID+`</a></th><td data-label="Agent and passport"><span class="id">agent-7</span><br><code class="passport-id">`+first.PassportID+`</code></td><td data-label="Grounds and events">incorrect_status<br>`+
			"<code>ap2_transaction</code> <code>agent-7-t19</code><br><code>conduit_session</code> <code>agent-7-c19</code>",
		`<strong class="overdue-mark">Overdue</strong>: acknowledge by 2026-06-22 12:00 UTC <span class="muted">(24 hours ago)</span>`,
		"acknowledge by 2026-06-30 12:00 UTC <span class=\"muted\">(in 7 days)</span>",
		"Session agent-7-c19 was verified by the buyer the same day;",
		`<span class="state state-submitted">submitted</span>`,
		"acknowledges an appeal within 7 days of its filing and decides it within 21")
	if strings.Index(body, first.ID) > strings.Index(body, second.ID) {
		t.Fatal("the overdue appeal is not first")
	}
	// Filters.
	body = c.get("/operator/appeals?overdue=1", 200)
	mustContain(t, body, first.ID, `<caption id="appeals-caption">1 appeal, overdue</caption>`, `value="1" checked`)
	mustNotContain(t, body, second.ID)
	mustContain(t, c.get("/operator/appeals?state=upheld", 200), "No appeal is upheld.", `<option value="upheld" selected>`)
	mustContain(t, c.get("/operator/appeals?state=open", 400), "Filter by submitted, acknowledged, upheld, rejected or escalated.")
	mustContain(t, c.get("/operator/appeals?page=3", 400), "does not exist")

	// One appeal: all of it, its deadlines and the forms its state allows.
	page := "/operator/appeals/" + first.ID
	body = c.get(page, 200)
	mustContain(t, body, "<h1>Appeal "+first.ID+"</h1>", webtest.AppealStatement, first.PassportID,
		`<a href="/operator/agents?q=agent-7">agent-7</a>`, "Filed</dt><dd>2026-06-15 12:00 UTC by market-1",
		`<tr class="overdue"><th scope="row">acknowledge</th><td data-label="Within">7 days after filing</td><td data-label="Due (UTC)">2026-06-22 12:00 UTC</td><td data-label="Done"><strong class="overdue-mark">Overdue</strong>: overdue: it was due 24 hours ago</td></tr>`,
		`<th scope="row">decide</th><td data-label="Within">21 days after filing</td><td data-label="Due (UTC)">2026-07-06 12:00 UTC</td>`,
		`action="/operator/appeals/`+first.ID+`/ack"`, `action="/operator/appeals/`+first.ID+`/uphold"`, `action="/operator/appeals/`+first.ID+`/reject"`,
		`<legend><code>conduit_session</code> <code class="id">agent-7-c19</code></legend>`, `<option value="VERIFIED">VERIFIED</option>`,
		// Each disputed event as recorded, in the list and beside its
		// correction: status, times, amount and buyer.
		`<td data-label="Recorded status"><strong>FAILED</strong></td>`, `<td class="num" data-label="Amount">$1,250</td><td data-label="Buyer"><span class="id">buyer-1</span></td>`,
		`<p class="recorded">Recorded: <strong>FAILED</strong>, started `, `<p class="recorded">Recorded: <strong>DISPUTED</strong>, started `, `, $1,250, buyer <span class="id">buyer-1</span>.</p>`,
		// Reject asks for a confirmation and looks unlike uphold.
		`<input type="checkbox" id="reject-confirm" name="confirm" value="yes" required>`, `<button type="submit" class="danger">Reject the appeal</button>`,
		`<button type="submit" class="uphold">Uphold, and record the corrections</button>`,
		`<option value="SETTLED">SETTLED</option>`, `<label for="agent-1">Agent id`)
	mustNotContain(t, body, "/escalate")

	// An action without the session's CSRF token is refused, and nothing
	// changes.
	r := s.postForm(page+"/ack", url.Values{}, "Cookie", c.cookie)
	mustContain(t, r.page(t, http.StatusForbidden), "That form is not from this session.")
	r = s.postForm(page+"/ack", url.Values{"csrf": {"forged"}}, "Cookie", c.cookie)
	r.page(t, http.StatusForbidden)
	if a, _ := s.u.Corrections.Appeal(t.Context(), service.OperatorCaller("admin"), first.ID); a.State != appeal.Submitted {
		t.Fatalf("a refused form changed the appeal: %s", a.State)
	}

	// Acknowledge: back to the appeal with a notice.
	redirected(t, c.post(page+"/ack", nil), page+"?done=ack")
	body = c.get(page+"?done=ack", 200)
	mustContain(t, body, `<p class="notice" role="status" id="notice" tabindex="-1" autofocus>You acknowledged appeal `+first.ID+`. Decide it by 2026-07-06 12:00 UTC.</p>`,
		`<span class="state state-acknowledged">acknowledged</span>`, "<strong>ack</strong> by admin, 2026-06-23 12:00 UTC")
	mustNotContain(t, body, "/ack\"")
	// A notice for something that did not happen is not shown.
	mustNotContain(t, c.get(page+"?done=reject", 200), `class="notice"`)

	// Wrong transitions: a clear message, 409, never internals.
	body = c.post(page+"/ack", nil).page(t, http.StatusConflict)
	mustContain(t, body, `<p class="error" role="alert" id="page-error" tabindex="-1" autofocus>Appeal `+first.ID+` is acknowledged and cannot be acknowledged.</p>`)
	body = c.post(page+"/escalate", nil).page(t, http.StatusConflict)
	mustContain(t, body, "Appeal "+first.ID+" is acknowledged and cannot be escalated.")
	mustContain(t, c.post(page+"/undo", nil).page(t, http.StatusNotFound), "There is no such action on an appeal.")

	// Uphold: each correction needs what its action needs, and the form
	// keeps what was sent.
	body = c.post(page+"/uphold", url.Values{"reason": {"confirmed"}}).page(t, http.StatusBadRequest)
	mustContain(t, body, "Choose a correction for at least one disputed event", `aria-invalid="true"`, ">confirmed</textarea>")
	body = c.post(page+"/uphold", url.Values{"reason": {"confirmed"}, "action_1": {"status"}}).page(t, http.StatusBadRequest)
	mustContain(t, body, "Choose the new final status of conduit_session agent-7-c19.", `<option value="status" selected>`)
	body = c.post(page+"/uphold", url.Values{"action_1": {"void"}}).page(t, http.StatusBadRequest)
	mustContain(t, body, "Give the reason for upholding")
	body = c.post(page+"/uphold", url.Values{"reason": {"confirmed"}, "action_1": {"status"}, "status_1": {"SETTLED"}}).page(t, http.StatusBadRequest)
	mustContain(t, body, `The correction of conduit_session agent-7-c19: status: &#34;SETTLED&#34; is not a final conduit_session status`)
	mustNotContain(t, body, "invalid:", "corrections[")
	body = c.post(page+"/uphold", url.Values{"reason": {"confirmed"}, "action_0": {"reattribute"}, "agent_0": {"no spaces"}}).page(t, http.StatusBadRequest)
	mustContain(t, body, "The correction of ap2_transaction agent-7-t19: agent_id", `value="no spaces"`)

	// Upheld with a status correction: recorded, re-issued, counted.
	redirected(t, c.post(page+"/uphold", url.Values{"reason": {"The buyer's logs confirm it was verified"}, "action_1": {"status"}, "status_1": {"VERIFIED"}}), page+"?done=uphold")
	body = c.get(page+"?done=uphold", 200)
	mustContain(t, body, "You upheld appeal "+first.ID+": 1 correction recorded, and the affected passports re-issued 2026-06-23 12:00 UTC.",
		`<span class="state state-upheld">upheld</span>`, "Decision's reason</dt><dd class=\"text\">The buyer&#39;s logs confirm it was verified</dd>",
		`<th scope="row">re-issue</th><td data-label="Within">7 days after upholding</td><td data-label="Due (UTC)">2026-06-30 12:00 UTC</td><td data-label="Done">2026-06-23 12:00 UTC</td>`,
		`action="/operator/appeals/`+first.ID+`/escalate"`,
		// What the correction changed, and why.
		"<h2 id=\"changes-title\">What the corrections changed</h2>", "<strong>status FAILED → VERIFIED</strong>",
		`<td data-label="Why" class="text">The buyer&#39;s logs confirm it was verified</td>`,
		`<td data-label="Recorded status"><strong>FAILED</strong><br><span class="muted">now VERIFIED</span></td>`)
	mustNotContain(t, body, "/uphold\"", "/reject\"", "{0 {")
	if a, _ := s.u.Corrections.Appeal(t.Context(), service.OperatorCaller("admin"), first.ID); len(a.Corrections) != 1 || !strings.Contains(body, "<dt>Corrections recorded</dt><dd><code>"+a.Corrections[0]+"</code></dd>") {
		t.Fatalf("the recorded correction %v is not shown", a.Corrections)
	}
	mustContain(t, c.get("/operator/agents?q=agent-7", 200), "77 verified of 80")
	if !strings.Contains(s.logs.String(), `"msg":"appeal action","operator":"admin","appeal":"`+first.ID+`","action":"uphold","corrections":1`) {
		t.Fatalf("the uphold is not logged:\n%s", s.logs)
	}

	// Escalated, with a note; then nothing more can be done.
	redirected(t, c.post(page+"/escalate", url.Values{"reason": {"the agent disputes the decision"}}), page+"?done=escalate")
	body = c.get(page+"?done=escalate", 200)
	mustContain(t, body, "You escalated appeal "+first.ID+" to the Advisory Board.", "the agent disputes the decision")
	mustNotContain(t, body, "Act on it")

	// Reject needs a reason.
	other := "/operator/appeals/" + second.ID
	mustContain(t, c.post(other+"/reject", url.Values{"reason": {"  "}}).page(t, http.StatusBadRequest), "Give the reason for rejecting")
	// The longest reason fits the form, whatever its encoding; a form
	// past the limit is said to be too large.
	long := strings.Repeat("é", appeal.MaxTextLen/2+1)
	mustContain(t, c.post(other+"/reject", url.Values{"reason": {long}, "confirm": {"yes"}}).page(t, http.StatusBadRequest),
		`<p class="error" role="alert" id="reject-error" tabindex="-1" autofocus>Reason is 4002 bytes long (at most 4000)</p>`)
	mustContain(t, c.post(other+"/reject", url.Values{"reason": {strings.Repeat("é", 12000)}}).page(t, http.StatusRequestEntityTooLarge), "That form holds more than 64 KB.")
	// Without the confirmation (the browser requires the box; a form
	// without it is refused here too), nothing changes.
	body = c.post(other+"/reject", url.Values{"reason": {"The session failed."}}).page(t, http.StatusBadRequest)
	mustContain(t, body, "Confirm that you checked the disputed events", ">The session failed.</textarea>")
	if a, _ := s.u.Corrections.Appeal(t.Context(), service.OperatorCaller("admin"), second.ID); a.State != appeal.Submitted {
		t.Fatalf("an unconfirmed reject changed the appeal: %s", a.State)
	}
	redirected(t, c.post(other+"/reject", url.Values{"reason": {"The session failed: the buyer's logs show an error."}, "confirm": {"yes"}}), other+"?done=reject")
	mustContain(t, c.get(other+"?done=reject", 200), "You rejected appeal "+second.ID+".", `<span class="state state-rejected">rejected</span>`)
	// The queue follows the states.
	body = c.get("/operator/appeals", 200)
	mustContain(t, body, `<span class="state state-escalated">escalated</span>`, `<span class="state state-rejected">rejected</span>`, `<span class="muted">none</span>`)
	mustNotContain(t, body, "overdue-mark")

	// Unknown and malformed appeals.
	mustContain(t, c.get("/operator/appeals/apl-none", 404), "There is no appeal with this id.")
	mustContain(t, c.get("/operator/appeals/"+url.PathEscape("a b"), 404), "There is no appeal with this id.")
	mustContain(t, c.post("/operator/appeals/apl-none/ack", nil).page(t, 404), "There is no appeal with this id.")

	// Signed out: to the sign-in page, for the pages and the actions.
	if r := s.get(page); r.code != http.StatusSeeOther || r.header.Get("Location") != "/operator" {
		t.Fatalf("signed out: %d %q", r.code, r.header.Get("Location"))
	}
	if r := s.postForm(page+"/ack", url.Values{}); r.code != http.StatusSeeOther {
		t.Fatalf("signed out action: %d", r.code)
	}
}

// TestConsoleBusyDatabase: console pages take a database slot as API
// routes do; with none free the answer is a 503 page at once, counted as
// the API's are.
func TestConsoleBusyDatabase(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{DBMaxRequests: 1})
	c := openConsole(t, s)
	held, done, err := s.api.EnterDB(httptestRequest())
	if err != nil || held == nil {
		t.Fatal(err)
	}
	r := s.get("/operator/appeals", "Cookie", c.cookie)
	mustContain(t, r.page(t, http.StatusServiceUnavailable), "Temporarily unavailable")
	if r.header.Get("Retry-After") != "2" {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	s.get("/", "RemoteAddr", "192.0.2.9:1").page(t, http.StatusServiceUnavailable)
	done()
	c.get("/operator/appeals", 200)
	// Both 503s are counted with the API's.
	mustContain(t, s.get("/metrics", "RemoteAddr", "127.0.0.1:1").body,
		`swarmscore_db_unavailable_responses_total{reason="slots"} 2`, `swarmscore_db_unavailable_responses_total{reason="refused"} 0`)
}

func httptestRequest() *http.Request { return httptest.NewRequest("GET", "/", nil) }

// TestConsoleAppealsSize: the queue and an appeal stay under the page
// limit with many appeals, long statements and many disputed events.
func TestConsoleAppealsSize(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	a, err := webtest.SeedAppeal(t.Context(), s.u)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("The buyer's <logs> & receipts say so. ", 120)[:appeal.MaxTextLen]
	var many []ledger.EventKey
	for i := range 150 {
		many = append(many, ledger.EventKey{Type: ledger.ConduitSession, ID: fmt.Sprintf("agent-7-session-%03d-with-a-long-identifier", i)})
	}
	var big service.AppealStatus
	for i := range appealsPageSize + 5 {
		events := many[i%140 : i%140+4]
		if i == 0 {
			events = many
		}
		f, err := s.u.Corrections.FileAppeal(t.Context(), service.OperatorCaller("market-1"), service.AppealFiling{PassportID: a.PassportID, Grounds: appeal.IncorrectCount, Statement: long, Events: events})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			big = f
		}
	}
	c := openConsole(t, s)
	body := c.get("/operator/appeals", 200)
	if n := strings.Count(body, `<tr><th scope="row"><a href="/operator/appeals/`); n != appealsPageSize {
		t.Fatalf("%d rows on the first page", n)
	}
	mustContain(t, body, "<br>and 1 more", `<a href="/operator/appeals?page=2" rel="next">Next page</a>`)
	body = c.get("/operator/appeals?page=2", 200)
	if n := strings.Count(body, `<tr><th scope="row"><a href="/operator/appeals/`); n != 6 {
		t.Fatalf("%d rows on the second page", n)
	}
	// An appeal of 150 events with the longest statement and notes.
	for _, act := range []appeal.Action{appeal.Ack} {
		if _, _, err := s.u.Corrections.ActOnAppeal(t.Context(), big.ID, service.OperatorCaller("admin"), service.AppealDecision{Action: act, Reason: long}); err != nil {
			t.Fatal(err)
		}
	}
	body = c.get("/operator/appeals/"+big.ID, 200)
	mustContain(t, body, "agent-7-session-149-with-a-long-identifier", `<label for="action-39">`,
		"This form corrects the first 40 disputed events. To correct the other 110,")
	mustNotContain(t, body, `id="action-40"`)
}

// TestConsoleViewerSeesNoActions: a viewer reads the appeal and the keys
// but is offered no button its role may not use; the forms answer 403
// all the same.
func TestConsoleViewerSeesNoActions(t *testing.T) { onBothBackEnds(t, testConsoleViewerSeesNoActions) }

func testConsoleViewerSeesNoActions(t *testing.T, s *site) {
	a, err := webtest.SeedAppeal(t.Context(), s.u)
	if err != nil {
		t.Fatal(err)
	}
	nt, err := s.u.Tokens.CreateToken(t.Context(), "watcher", auth.Viewer)
	if err != nil {
		t.Fatal(err)
	}
	r := openSignIn(t, s, "192.0.2.9:1000").submit(t, s, nt.Secret)
	var cookie string
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == sessionCookie {
			cookie = c.String()
		}
	}
	if cookie == "" {
		t.Fatalf("viewer sign-in: %d", r.code)
	}
	body := s.get("/operator/ingest", "Cookie", cookie).page(t, 200)
	c := &console{t: t, s: s, cookie: cookie, csrf: csrfField.FindStringSubmatch(body)[1]}
	page := "/operator/appeals/" + a.ID
	body = c.get(page, 200)
	mustContain(t, body, "<h1>Appeal "+a.ID+"</h1>", `<td data-label="Recorded status"><strong>FAILED</strong></td>`)
	mustNotContain(t, body, "Act on it", "/ack\"", "/uphold\"", "/reject\"", "<button type=\"submit\" class=\"danger\"")
	mustContain(t, c.post(page+"/ack", nil).page(t, http.StatusForbidden), "Not allowed for your role")
	body = c.get("/operator/keys", 200)
	mustNotContain(t, body, "Rotate…", `action="/operator/keys/rotate"`)
	// An admin is offered the decisions (keys_test has the rotation).
	admin := openConsole(t, s)
	mustContain(t, admin.get(page, 200), "Act on it", "/reject\"")
	// Upheld: each correction with what it changed and why.
	if _, _, err := s.u.Corrections.ActOnAppeal(t.Context(), a.ID, service.OperatorCaller("admin"), service.AppealDecision{
		Action: appeal.Uphold, Reason: "the buyer's logs",
		Corrections: []ledger.CorrectionRequest{{EventType: ledger.AP2Transaction, EventID: "agent-7-t19", Action: ledger.ActionStatus, Status: ledger.Settled}},
	}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, c.get(page, 200), "<strong>status DISPUTED → SETTLED</strong>", `<td data-label="Why" class="text">the buyer&#39;s logs</td>`,
		`<td data-label="Recorded status"><strong>DISPUTED</strong><br><span class="muted">now SETTLED</span></td>`)
}
