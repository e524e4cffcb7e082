package web

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/httpapi"
)

// signInForm is a browser's sign-in form: its sign-in cookie and the
// form's CSRF token.
type signInForm struct {
	remote, cookie, csrf string
}

var csrfField = regexp.MustCompile(`<input type="hidden" name="csrf" value="([^"]+)">`)

// openSignIn loads /operator as a browser at remote would.
func openSignIn(t *testing.T, s *site, remote string) signInForm {
	t.Helper()
	r := s.get("/operator", "RemoteAddr", remote)
	r.page(t, 200)
	f := signInForm{remote: remote}
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == signinCookie {
			f.cookie = c.Value
		}
	}
	m := csrfField.FindStringSubmatch(r.body)
	if f.cookie == "" || m == nil {
		t.Fatalf("sign-in form without its cookie or token: %v", r.header["Set-Cookie"])
	}
	f.csrf = m[1]
	return f
}

func (f signInForm) submit(t *testing.T, s *site, token string) response {
	t.Helper()
	return s.postForm("/operator/sign-in", url.Values{"csrf": {f.csrf}, "token": {token}},
		"RemoteAddr", f.remote, "Cookie", signinCookie+"="+f.cookie)
}

// signIn signs in as a browser at remote and returns the session cookie.
func signIn(t *testing.T, s *site, remote string, hdr ...string) *http.Cookie {
	t.Helper()
	r := openSignIn(t, s, remote).submit(t, s, testToken)
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/operator/ingest" {
		t.Fatalf("sign-in: %d %q\n%s", r.code, r.header.Get("Location"), r.body)
	}
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	t.Fatal("no session cookie")
	return nil
}

func TestOperatorSignIn(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	body := s.get("/operator").page(t, 200)
	mustContain(t, body, `<label for="token">Operator token</label>`, `type="password"`, "Ingest activity, Agents",
		"after 30 minutes unused, or after 12 hours")

	// The session cookie: HttpOnly, SameSite=Strict, the console's path, a
	// random value that is not the token; Secure only over HTTPS.
	c := signIn(t, s, "192.0.2.1:1000")
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/operator" || c.Secure || len(c.Value) < 40 ||
		strings.Contains(c.Value, testToken) || c.MaxAge != int((12*time.Hour)/time.Second) {
		t.Fatalf("session cookie %+v", c)
	}
	tlsForm := openSignIn(t, s, "192.0.2.2:1000")
	r := s.postForm("/operator/sign-in", url.Values{"csrf": {tlsForm.csrf}, "token": {testToken}},
		"RemoteAddr", tlsForm.remote, "Cookie", signinCookie+"="+tlsForm.cookie, "TLS", "1")
	if !strings.Contains(strings.Join(r.header["Set-Cookie"], "\n"), "; Secure") {
		t.Fatalf("over TLS the cookie is not Secure: %v", r.header["Set-Cookie"])
	}

	// Signed in, /operator opens the console.
	if r := s.get("/operator", "Cookie", c.String()); r.code != http.StatusSeeOther || r.header.Get("Location") != "/operator/ingest" {
		t.Fatalf("/operator signed in: %d %q", r.code, r.header.Get("Location"))
	}
	// The token never reaches a log, a cookie or a page.
	if strings.Contains(s.logs.String(), testToken) {
		t.Fatal("the token is in the log")
	}
	if !strings.Contains(s.logs.String(), `"msg":"operator signed in","operator":"admin"`) {
		t.Fatalf("sign-in not logged:\n%s", s.logs)
	}

	// Without the form's CSRF token, or with another browser's: refused.
	f := openSignIn(t, s, "192.0.2.3:1000")
	for _, v := range []url.Values{{"token": {testToken}}, {"token": {testToken}, "csrf": {tlsForm.csrf}}} {
		r := s.postForm("/operator/sign-in", v, "RemoteAddr", f.remote, "Cookie", signinCookie+"="+f.cookie)
		mustContain(t, r.page(t, http.StatusForbidden), "The sign-in form had expired")
	}
	if r := s.postForm("/operator/sign-in", url.Values{"token": {testToken}, "csrf": {f.csrf}}, "RemoteAddr", f.remote); r.code != http.StatusForbidden {
		t.Fatalf("without the sign-in cookie: %d", r.code)
	}
}

func TestOperatorThrottle(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	f := openSignIn(t, s, "203.0.113.5:4000")
	for i := range signinBurst {
		body := f.submit(t, s, "wrong-token-"+string(rune('a'+i))).page(t, http.StatusUnauthorized)
		mustContain(t, body, "That token is not valid", `aria-invalid="true"`)
		mustNotContain(t, body, "wrong-token")
	}
	// Out of attempts: a wrong token is answered 429 with the wait…
	r := f.submit(t, s, "wrong-token-z")
	mustContain(t, r.page(t, http.StatusTooManyRequests), "Too many failed sign-ins from this address. Try again in 60 seconds.")
	if r.header.Get("Retry-After") != "60" {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// …but the right one signs in: whoever shares the operator's address
	// cannot lock the operator out (ERRATA E49).
	if r := f.submit(t, s, testToken); r.code != http.StatusSeeOther {
		t.Fatalf("the right token from a throttled address: %d", r.code)
	}
	// Another client is not affected; a minute later one more failure is
	// a 401 again.
	signIn(t, s, "203.0.113.6:4000")
	s.clock.advance(signinRefill)
	f = openSignIn(t, s, "203.0.113.5:4000")
	f.submit(t, s, "wrong-token-y").page(t, http.StatusUnauthorized)
	// Empty and absurd tokens count as failures without a lookup.
	g := openSignIn(t, s, "203.0.113.7:4000")
	g.submit(t, s, "   ").page(t, http.StatusUnauthorized)
	g.submit(t, s, strings.Repeat("x", 300)).page(t, http.StatusUnauthorized)
	if left := tokensLeft(s.pages.throttle, "203.0.113.7", s.clock.now()); left != signinBurst-2 {
		t.Fatalf("%v failures left after two", left)
	}

	// Parallel failures cannot overrun the bucket.
	h := openSignIn(t, s, "203.0.113.8:4000")
	codes := make(chan int, 20)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- h.submit(t, s, "wrong").code
		}()
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if count[http.StatusUnauthorized] != signinBurst || count[http.StatusTooManyRequests] != 20-signinBurst {
		t.Fatalf("20 parallel failures: %v", count)
	}
}

// tokensLeft is how many failed sign-ins client has left.
func tokensLeft(th *throttle, client string, now time.Time) float64 {
	th.mu.Lock()
	defer th.mu.Unlock()
	return th.limiter(client).TokensAt(now)
}

func TestOperatorSessions(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	// Not signed in: every console page sends to the sign-in page.
	for _, p := range []string{"/operator/ingest", "/operator/agents"} {
		if r := s.get(p); r.code != http.StatusSeeOther || r.header.Get("Location") != "/operator" || r.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s signed out: %d %q", p, r.code, r.header.Get("Location"))
		}
	}
	c := signIn(t, s, "192.0.2.1:1000")
	body := s.get("/operator/ingest", "Cookie", c.String()).page(t, 200)
	mustContain(t, body, "Signed in as <strong class=\"id\">admin</strong>", `<a href="/operator/ingest" aria-current="page">Ingest activity</a>`)
	csrf := csrfField.FindStringSubmatch(body)[1]

	// Sign-out needs the session's CSRF token.
	r := s.postForm("/operator/sign-out", url.Values{"csrf": {"forged"}}, "Cookie", c.String())
	r.page(t, http.StatusForbidden)
	s.get("/operator/ingest", "Cookie", c.String()).page(t, 200)
	r = s.postForm("/operator/sign-out", url.Values{"csrf": {csrf}}, "Cookie", c.String())
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/operator?signed_out=1" ||
		!strings.Contains(strings.Join(r.header["Set-Cookie"], ""), sessionCookie+"=; Path=/operator; Max-Age=0") {
		t.Fatalf("sign-out: %d %q %v", r.code, r.header.Get("Location"), r.header["Set-Cookie"])
	}
	mustContain(t, s.get("/operator?signed_out=1").page(t, 200), "You are signed out.")
	if r := s.get("/operator/ingest", "Cookie", c.String()); r.code != http.StatusSeeOther || r.header.Get("Location") != "/operator?expired=1" {
		t.Fatalf("after sign-out: %d %q", r.code, r.header.Get("Location"))
	}

	// Sessions end after 30 idle minutes, and 12 hours after sign-in
	// however busy.
	c = signIn(t, s, "192.0.2.1:1000")
	s.clock.advance(29 * time.Minute)
	s.get("/operator/agents", "Cookie", c.String()).page(t, 200)
	s.clock.advance(29 * time.Minute)
	s.get("/operator/agents", "Cookie", c.String()).page(t, 200)
	s.clock.advance(30 * time.Minute)
	if r := s.get("/operator/agents", "Cookie", c.String()); r.code != http.StatusSeeOther {
		t.Fatalf("after 30 idle minutes: %d", r.code)
	}
	c = signIn(t, s, "192.0.2.1:1000")
	for range 12 * 3 {
		s.clock.advance(20 * time.Minute)
		if r := s.get("/operator/agents", "Cookie", c.String()); r.code != 200 && s.clock.now().Sub(testNow) < 12*time.Hour {
			t.Fatalf("a busy session ended early: %d", r.code)
		}
	}
	if r := s.get("/operator/agents", "Cookie", c.String()); r.code != http.StatusSeeOther {
		t.Fatalf("after 12 hours: %d", r.code)
	}
	mustContain(t, s.get("/operator?expired=1").page(t, 200), "Your session has ended.")
}

func TestThrottleBounded(t *testing.T) {
	th := newThrottle(1, time.Minute, 2)
	for _, c := range []string{"a", "b", "c"} {
		if ok, _ := th.failed(c, testNow); !ok {
			t.Fatalf("%s refused its first failure", c)
		}
	}
	if len(th.m) != 2 {
		t.Fatalf("%d clients tracked", len(th.m))
	}
	if ok, _ := th.failed("a", testNow); !ok {
		t.Fatal("the forgotten client is still throttled")
	}
	if ok, wait := th.failed("c", testNow); ok || wait != time.Minute {
		t.Fatalf("a client out of failures: ok %v, wait %s", ok, wait)
	}
}

func TestConsolePages(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	c := signIn(t, s, "192.0.2.1:1000")
	get := func(target string, status int) string {
		t.Helper()
		r := s.get(target, "Cookie", c.String())
		if r.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: Cache-Control %q", target, r.header.Get("Cache-Control"))
		}
		return r.page(t, status)
	}

	// Ingest activity: the seed's two batches in this hour, and the two
	// rejected lines with their reasons.
	body := get("/operator/ingest", 200)
	mustContain(t, body,
		"<tr><th scope=\"row\">2026-06-15 12:00 UTC</th><td class=\"num\" data-label=\"Batches\">2</td><td class=\"num\" data-label=\"Failed batches\">0</td><td class=\"num\" data-label=\"Accepted\">1168</td>",
		`status: &#34;DONE&#34; is not a conduit_session status`,
		`escrow_amount_cents: must be a whole number of cents, got 99.5`,
		`<td data-label="Where">line 1</td><td data-label="Event id"><code>s-bad</code></td>`, `<td data-label="Where">line 2</td><td data-label="Event id"><code>t-bad</code></td>`,
		`<rect class="bar-rejected"`)
	if n := strings.Count(body, `<rect class="bar-ok"`); n != 48 {
		t.Fatalf("%d hourly bars", n)
	}

	// Agents: the ranking, filtered; an exact search finds an unlisted agent.
	body = get("/operator/agents", 200)
	mustContain(t, body, `<a href="/operator/agents?q=elite-1" title="elite-1">elite-1</a>`, "<td class=\"num\" data-label=\"Conduit\">76/80</td><td class=\"num\" data-label=\"AP2\">38/40</td>")
	mustNotContain(t, body, "shy-agent", "Next page")
	body = get("/operator/agents?tier=ELITE", 200)
	if strings.Count(body, `<a href="/operator/agents?q=`) != 1 || !strings.Contains(body, "elite-1") {
		t.Fatal("ELITE filter")
	}
	// elite-1, agent-7 and fill-20 … fill-27 (100 to 112).
	if body = get("/operator/agents?min_score=100", 200); strings.Count(body, `<a href="/operator/agents?q=`) != 10 {
		t.Fatalf("min_score 100: %d rows", strings.Count(body, `<a href="/operator/agents?q=`))
	}
	body = get("/operator/agents?q=shy-agent", 200)
	mustContain(t, body, `<caption id="found-caption">Agent <span class="id">shy-agent</span></caption>`, "unlisted (not shown publicly)",
		"1000 <span class=\"tier tier-elite\">ELITE</span>", "100 verified of 100")
	mustContain(t, get("/operator/agents?q=agent-7", 200), `public · <a href="/agents/agent-7">public page</a>`)
	mustContain(t, get("/operator/agents?q=ghost", 200), "No agent has the id “ghost”.")
	mustContain(t, get("/operator/agents?q=a+b", 400), "An agent id is")
	mustContain(t, get("/operator/agents?min_score=2000", 400), "from 0 to 1000")
	mustContain(t, get("/operator/agents?tier=GOLD", 400), "Filter by NONE, STANDARD or ELITE")
}

// TestThrottleConcurrent is for the race detector: failures from many
// clients at once.
func TestThrottleConcurrent(t *testing.T) {
	th := newThrottle(3, time.Minute, 50)
	done := make(chan bool)
	for g := range 8 {
		go func() {
			defer func() { done <- true }()
			for i := range 200 {
				th.failed(string(rune('a'+(g*200+i)%70)), testNow.Add(time.Duration(i)*time.Second))
			}
		}()
	}
	for range 8 {
		<-done
	}
	if len(th.m) > 50 {
		t.Fatalf("%d clients: over the bound", len(th.m))
	}
}
