package web

import (
	"container/list"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
)

// The operator console: an operator signs in with an API token (checked by
// Console.SignIn, never stored here), and gets a session: a random id in
// an HttpOnly, SameSite=Strict cookie (Secure over HTTPS) naming a session
// the database holds by the id's SHA-256 (so every process of a deployment
// knows it, an admin can revoke it, and revoking its token ends it), with
// a CSRF token derived from the id for every form. The token itself never
// reaches a cookie, a page or a log.
const (
	sessionCookie = "swarmscore_operator"
	signinCookie  = "swarmscore_signin"
	// maxThrottled bounds the memory a flood of sign-ins can take.
	maxThrottled = 10_000
	// A client may fail signinBurst sign-ins in a row, then one more every
	// signinRefill before its failures are answered 429 (throttle).
	signinBurst  = 5
	signinRefill = time.Minute
	// maxTokenLen bounds what is hashed and looked up, as the API does.
	maxTokenLen    = 256
	maxConsoleForm = 4 << 10
	// maxActionForm bounds a signed-in operator's form: an appeal's
	// decision carries up to 4,000 bytes of reason, percent-encoded up to
	// three times over, and its corrections.
	maxActionForm = 64 << 10
)

// session is one signed-in operator: the stored session, its cookie (to
// sign out with) and its forms' CSRF token.
type session struct {
	auth.Session
	id   string
	csrf string
}

// caller is the session's operator as the use cases take it.
func (s session) caller() service.Caller {
	return service.Caller{Operator: s.Operator, TokenID: s.TokenID, Role: s.Role}
}

// sessionCSRF is the CSRF token of the session whose cookie is id: a hash
// of the id under a label of its own, so it can be checked without being
// stored, and no page that shows it reveals the cookie.
func sessionCSRF(id string) string {
	sum := sha256.Sum256([]byte("swarmscore console csrf\x00" + id))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func randomToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// throttle counts failed sign-ins per client in a token bucket. Every
// token presented is checked, so the right one always signs in (a lockout
// that anyone on an operator's address could trigger would be a denial of
// service: docs/ERRATA.md E49); a client past its allowance is answered
// 429 with the wait, not 401. The clients tracked are bounded: past max
// the least recently seen is forgotten.
type throttle struct {
	burst int
	every time.Duration
	max   int

	mu  sync.Mutex
	m   map[string]*list.Element
	lru list.List // of *throttled, most recent first
}

type throttled struct {
	client string
	lim    *rate.Limiter
}

func newThrottle(burst int, every time.Duration, max int) *throttle {
	return &throttle{burst: burst, every: every, max: max, m: map[string]*list.Element{}}
}

func (t *throttle) limiter(client string) *rate.Limiter {
	if el, ok := t.m[client]; ok {
		t.lru.MoveToFront(el)
		return el.Value.(*throttled).lim
	}
	lim := rate.NewLimiter(rate.Every(t.every), t.burst)
	t.m[client] = t.lru.PushFront(&throttled{client, lim})
	for t.lru.Len() > t.max {
		old := t.lru.Back()
		t.lru.Remove(old)
		delete(t.m, old.Value.(*throttled).client)
	}
	return lim
}

// failed counts one failed sign-in of client and reports whether its
// allowance still covered it; when not, how long until one is due.
func (t *throttle) failed(client string, now time.Time) (ok bool, wait time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.limiter(client).ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// signinCSRF is the sign-in form's CSRF token for the browser holding the
// sign-in cookie value c: a MAC under a key of this process, so a page of
// another site can neither read nor forge it.
func (p *Pages) signinCSRF(c string) string {
	m := hmac.New(sha256.New, p.signinKey[:])
	m.Write([]byte("sign-in\x00" + c))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// duration says d in the largest whole unit: "30 minutes", "12 hours".
func duration(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return plural(int64(d/time.Hour), "hour")
	case d >= time.Minute && d%time.Minute == 0:
		return plural(int64(d/time.Minute), "minute")
	}
	return plural(int64(d/time.Second), "second")
}

func sameSecret(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func (p *Pages) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	c := &http.Cookie{
		Name: name, Value: value, Path: "/operator",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: p.host.SecureRequest(r),
		MaxAge: int(maxAge / time.Second),
	}
	if maxAge < 0 {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

func cookieValue(r *http.Request, name string) string {
	c, err := r.Cookie(name)
	if err != nil {
		return ""
	}
	return c.Value
}

type signInView struct {
	CSRF     string
	Error    string
	Notice   string
	Consoles []string // the console's pages, listed for the operator's orientation
	// Idle and Lifetime say when a session ends, in words.
	Idle, Lifetime string
}

// sessionPolicy is when the pages' sessions end.
func (p *Pages) sessionPolicy() service.SessionPolicy {
	return service.SessionPolicy{Idle: p.idle, Lifetime: p.lifetime}
}

// signInPage is /operator: the console's first page for a signed-in
// operator, the sign-in form for anyone else.
func (p *Pages) signInPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if id := cookieValue(r, sessionCookie); id != "" {
		if _, err := p.svc.Console.Session(r.Context(), id, p.sessionPolicy()); err == nil {
			http.Redirect(w, r, consolePages[0].Path, http.StatusSeeOther)
			return
		}
	}
	v := signInView{}
	switch {
	case r.URL.Query().Has("signed_out"):
		v.Notice = "You are signed out."
	case r.URL.Query().Has("expired"):
		v.Notice = "Your session has ended. Sign in again."
	}
	p.renderSignIn(w, r, http.StatusOK, v)
}

// renderSignIn renders the sign-in form with a CSRF token bound to the
// browser's sign-in cookie, setting one if it has none.
func (p *Pages) renderSignIn(w http.ResponseWriter, r *http.Request, status int, v signInView) {
	c := cookieValue(r, signinCookie)
	if len(c) != 43 { // randomToken's length; anything else is not ours
		c = randomToken()
		p.setCookie(w, r, signinCookie, c, time.Hour)
	}
	v.CSRF = p.signinCSRF(c)
	v.Idle, v.Lifetime = duration(p.idle), duration(p.lifetime)
	for _, cp := range consolePages {
		v.Consoles = append(v.Consoles, cp.Title)
	}
	w.Header().Set("Cache-Control", "no-store")
	p.render(w, r, status, "signin", view{Title: "Operator sign-in · SwarmScore", Section: "operator", Data: v})
}

// signIn checks the form's CSRF token, then the token (Console.SignIn,
// which records the attempt); on success it starts a session (a new id,
// whatever the browser held before) and opens the console. A failure is
// counted against the client (throttle).
func (p *Pages) signIn(w http.ResponseWriter, r *http.Request) {
	now := p.now()
	client := p.host.ClientIP(r)
	r.Body = http.MaxBytesReader(w, r.Body, maxConsoleForm)
	if err := r.ParseForm(); err != nil {
		p.renderSignIn(w, r, http.StatusBadRequest, signInView{Error: "The form could not be read; try again."})
		return
	}
	c := cookieValue(r, signinCookie)
	if c == "" || !sameSecret(r.PostFormValue("csrf"), p.signinCSRF(c)) {
		p.renderSignIn(w, r, http.StatusForbidden, signInView{Error: "The sign-in form had expired. Sign in again."})
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	if len(token) > maxTokenLen {
		token = "" // refused unseen, as an empty one is
	}
	ns, err := p.svc.Console.SignIn(r.Context(), token, client, r.UserAgent(), p.sessionPolicy())
	switch k := errkind.Of(err); {
	case err == nil:
	case k == errkind.Unauthorized || k == errkind.Forbidden:
		msg := "That token is not valid: it is unknown or was revoked."
		if k == errkind.Forbidden {
			msg = "That is an agent's token; the console takes an operator's."
		}
		if ok, wait := p.throttle.failed(client, now); !ok {
			secs := int64((wait + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", itoa(secs))
			p.log.Warn("operator sign-in throttled", "client", client)
			p.renderSignIn(w, r, http.StatusTooManyRequests, signInView{Error: "Too many failed sign-ins from this address. Try again in " + plural(secs, "second") + "."})
			return
		}
		p.log.Warn("operator sign-in failed", "client", client)
		p.renderSignIn(w, r, http.StatusUnauthorized, signInView{Error: msg})
		return
	default:
		// The token was not judged (the database is down): no failure
		// is counted against the client.
		p.fail(w, r, err, "")
		return
	}
	p.setCookie(w, r, sessionCookie, ns.ID, p.lifetime)
	p.setCookie(w, r, signinCookie, "", -1)
	p.log.Info("operator signed in", "operator", ns.Session.Operator, "role", string(ns.Session.Role), "client", client)
	http.Redirect(w, r, consolePages[0].Path, http.StatusSeeOther)
}

// signedIn runs h for a live session whose role may do perm, in one of
// the server's database slots; anyone else is sent to sign in, and a role
// without perm gets a 403 page (recorded in the action log). A POST must
// carry the session's CSRF token. Console pages are never cached.
func (p *Pages) signedIn(perm auth.Permission, h func(http.ResponseWriter, *http.Request, session)) http.HandlerFunc {
	return p.bounded(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		id := cookieValue(r, sessionCookie)
		st, err := p.svc.Console.Session(r.Context(), id, p.sessionPolicy())
		switch {
		case errors.Is(err, errkind.ErrUnauthorized):
			target := "/operator"
			if id != "" {
				target += "?expired=1"
				p.setCookie(w, r, sessionCookie, "", -1)
			}
			http.Redirect(w, r, target, http.StatusSeeOther)
			return
		case err != nil:
			p.fail(w, r, err, "")
			return
		}
		s := session{Session: st, id: id, csrf: sessionCSRF(id)}
		r = r.WithContext(service.WithActor(r.Context(), service.ActorOf(s.caller(), auth.ViaConsole, p.host.ClientIP(r))))
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxActionForm)
			err := r.ParseForm()
			var tooLarge *http.MaxBytesError
			switch {
			case errors.As(err, &tooLarge):
				p.errorPage(w, r, http.StatusRequestEntityTooLarge, "Form too large", "That form holds more than "+itoa(maxActionForm>>10)+" KB. Shorten its text and try again.")
				return
			case err != nil:
				p.errorPage(w, r, http.StatusBadRequest, "Form not readable", "That form could not be read. Reload the page and try again.")
				return
			}
			if !sameSecret(r.PostFormValue("csrf"), s.csrf) {
				p.errorPage(w, r, http.StatusForbidden, "Form expired", "That form is not from this session. Reload the page and try again.")
				return
			}
		}
		if err := auth.Allow(s.Role, perm); err != nil {
			p.svc.Console.RecordDenied(r.Context(), r.Method+" "+r.URL.Path, err)
			p.renderConsole(w, r, s, http.StatusForbidden, "", "error", "Not allowed", errorView{
				Status: http.StatusForbidden, Heading: "Not allowed for your role",
				Message:   "Your token's role (" + string(s.Role) + ") may not do this: it needs the " + string(auth.Needs(perm)) + " role.",
				RequestID: w.Header().Get("X-Request-Id"),
			})
			return
		}
		h(w, r, s)
	})
}

func (p *Pages) signOut(w http.ResponseWriter, r *http.Request, s session) {
	if err := p.svc.Console.SignOut(r.Context(), s.id); err != nil {
		p.fail(w, r, err, "")
		return
	}
	p.setCookie(w, r, sessionCookie, "", -1)
	p.log.Info("operator signed out", "operator", s.Operator)
	http.Redirect(w, r, "/operator?signed_out=1", http.StatusSeeOther)
}
