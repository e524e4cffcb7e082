package web

import (
	"container/list"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// The operator console: an operator signs in with an API token (checked by
// Service.Authenticate, never stored here), and gets a session: a random
// id in an HttpOnly, SameSite=Strict cookie (Secure over HTTPS) naming a
// session held in memory, with its own CSRF token for every form. The
// token itself never reaches a cookie, a page or a log.
const (
	sessionCookie = "swarmscore_operator"
	signinCookie  = "swarmscore_signin"
	// maxSessions and maxThrottled bound the memory a flood of sign-ins
	// can take.
	maxSessions  = 10_000
	maxThrottled = 10_000
	// A client may fail signinBurst sign-ins in a row, then one more every
	// signinRefill.
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

// session is one signed-in operator.
type session struct {
	operator      string
	csrf          string
	created, seen time.Time
}

// sessionStore keeps sessions by the SHA-256 of their id, so the map holds
// no bearer secret and a lookup's timing says nothing about the ids.
type sessionStore struct {
	mu             sync.Mutex
	m              map[[sha256.Size]byte]*session
	idle, lifetime time.Duration
	max            int
}

func newSessionStore(idle, lifetime time.Duration, max int) *sessionStore {
	return &sessionStore{m: map[[sha256.Size]byte]*session{}, idle: idle, lifetime: lifetime, max: max}
}

func randomToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create starts a session and returns its id.
func (s *sessionStore) create(operator string, now time.Time) (string, session) {
	id := randomToken()
	sess := &session{operator: operator, csrf: randomToken(), created: now, seen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.max {
		s.evict(now)
	}
	s.m[sha256.Sum256([]byte(id))] = sess
	return id, *sess
}

// evict drops expired sessions, and the least recently seen one if none
// was. It scans every session, which only a full store pays for.
func (s *sessionStore) evict(now time.Time) {
	var oldest [sha256.Size]byte
	var seen time.Time
	for k, v := range s.m {
		if s.expired(v, now) {
			delete(s.m, k)
			continue
		}
		if seen.IsZero() || v.seen.Before(seen) {
			oldest, seen = k, v.seen
		}
	}
	if len(s.m) >= s.max {
		delete(s.m, oldest)
	}
}

func (s *sessionStore) expired(v *session, now time.Time) bool {
	return now.Sub(v.seen) >= s.idle || now.Sub(v.created) >= s.lifetime
}

// get returns the live session with this id and marks it used now; an
// expired one is dropped.
func (s *sessionStore) get(id string, now time.Time) (session, bool) {
	if id == "" {
		return session{}, false
	}
	k := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	if !ok {
		return session{}, false
	}
	if s.expired(v, now) {
		delete(s.m, k)
		return session{}, false
	}
	v.seen = now
	return *v, true
}

func (s *sessionStore) delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sha256.Sum256([]byte(id)))
}

func (s *sessionStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// throttle counts failed sign-ins per client in a token bucket; a client
// whose bucket is empty is refused before its token is even looked up.
// The clients tracked are bounded: past max the least recently seen is
// forgotten.
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

// attempt takes one of client's failed sign-ins before its token is
// looked up, so that parallel attempts cannot overrun the bucket; ok is
// false, with the wait until one is due, when none is left. The sign-in
// gives it back (Reservation.CancelAt) when it succeeds or its token could
// not be judged.
func (t *throttle) attempt(client string, now time.Time) (r *rate.Reservation, ok bool, wait time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r = t.limiter(client).ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return nil, false, d
	}
	return r, true, 0
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

// signInPage is /operator: the console's first page for a signed-in
// operator, the sign-in form for anyone else.
func (p *Pages) signInPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if _, ok := p.sessions.get(cookieValue(r, sessionCookie), p.now()); ok {
		http.Redirect(w, r, consolePages[0].Path, http.StatusSeeOther)
		return
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
	v.Idle, v.Lifetime = duration(p.sessions.idle), duration(p.sessions.lifetime)
	for _, cp := range consolePages {
		v.Consoles = append(v.Consoles, cp.Title)
	}
	w.Header().Set("Cache-Control", "no-store")
	p.render(w, r, status, "signin", view{Title: "Operator sign-in · SwarmScore", Section: "operator", Data: v})
}

// signIn checks the form's CSRF token, the client's throttle, then the
// token; on success it starts a session (a new id, whatever the browser
// held before) and opens the console.
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
	try, ok, wait := p.throttle.attempt(client, now)
	if !ok {
		secs := int64((wait + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", itoa(secs))
		p.log.Warn("operator sign-in throttled", "client", client)
		p.renderSignIn(w, r, http.StatusTooManyRequests, signInView{Error: "Too many failed sign-ins from this address. Try again in " + plural(secs, "second") + "."})
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	var op string
	var err error
	if token == "" || len(token) > maxTokenLen {
		err = fmt.Errorf("%w: empty or oversized token", errkind.ErrUnauthorized)
	} else {
		op, err = p.svc.Tokens.Authenticate(r.Context(), token)
	}
	switch {
	case err == nil:
		try.CancelAt(now)
	case errors.Is(err, errkind.ErrUnauthorized):
		p.log.Warn("operator sign-in failed", "client", client)
		p.renderSignIn(w, r, http.StatusUnauthorized, signInView{Error: "That token is not valid: it is unknown or was revoked."})
		return
	default:
		// The token was not judged (the database is down): no failure
		// is counted against the client.
		try.CancelAt(now)
		p.fail(w, r, err, "")
		return
	}
	id, _ := p.sessions.create(op, now)
	p.setCookie(w, r, sessionCookie, id, p.sessions.lifetime)
	p.setCookie(w, r, signinCookie, "", -1)
	p.log.Info("operator signed in", "operator", op, "client", client)
	http.Redirect(w, r, consolePages[0].Path, http.StatusSeeOther)
}

// signedIn runs h for a live session; anyone else is sent to sign in. A
// POST must carry the session's CSRF token. Console pages are never
// cached.
func (p *Pages) signedIn(h func(http.ResponseWriter, *http.Request, session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		id := cookieValue(r, sessionCookie)
		s, ok := p.sessions.get(id, p.now())
		if !ok {
			target := "/operator"
			if id != "" {
				target += "?expired=1"
				p.setCookie(w, r, sessionCookie, "", -1)
			}
			http.Redirect(w, r, target, http.StatusSeeOther)
			return
		}
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
		h(w, r, s)
	}
}

func (p *Pages) signOut(w http.ResponseWriter, r *http.Request, s session) {
	p.sessions.delete(cookieValue(r, sessionCookie))
	p.setCookie(w, r, sessionCookie, "", -1)
	p.log.Info("operator signed out", "operator", s.operator)
	http.Redirect(w, r, "/operator?signed_out=1", http.StatusSeeOther)
}
