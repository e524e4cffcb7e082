// Package web serves SwarmScore's HTML pages from `swarmscore serve`: the
// public leaderboard, agent pages, passport verification and README badges,
// and the operator console. Pages are rendered on the server with
// html/template from templates and assets embedded in the binary; they
// need no JavaScript (one small script adds a copy button) and load
// nothing from another origin.
//
// Like internal/httpapi, the pages only translate: every answer comes from
// one use case of internal/service (Services), the same ones the API calls.
// They are mounted on the API server (Host), so they share its request
// ids, access log, metrics, client addresses and public rate limit.
//
// Every response carries the same security headers (securityHeaders): a
// Content-Security-Policy allowing only this origin's stylesheet and
// images and scripts bearing the response's nonce, no framing, no
// sniffing, no referrer to other origins.
package web

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// Services are the use cases the pages call, one interface per group of
// internal/service (ServicesOf takes them from a service.UseCases): the
// same ones the API calls. Errors are classified by errkind (pageError
// renders them).
type Services struct {
	Certificates ScoreService
	Verifier     VerifyService
	Console      ConsoleService // sign-in, sessions and the action log (operator.go, sessions.go)
	Ingest       ActivityService
	Signals      SignalsService  // the gaming flags page (signals.go)
	Corrections  AppealsService  // the appeals pages (appeals.go)
	Keys         KeysService     // the signing keys pages (keys.go)
	Webhooks     WebhooksService // the webhooks page (webhooks.go); nil shows none
}

// ServicesOf is the groups of u that the pages call.
func ServicesOf(u *service.UseCases) Services {
	return Services{Certificates: u.Certificates, Verifier: u.Verifier, Console: u.Console, Ingest: u.Ingest,
		Signals: u.Signals, Corrections: u.Corrections, Keys: u.Keys, Webhooks: u.Webhooks}
}

// ScoreService is what the public pages and the console's agent pages
// show of agents (service.Certificates).
type ScoreService interface {
	// Ranking lists listed agents by current score, highest first.
	Ranking(ctx context.Context, q service.RankingQuery) (service.RankingPage, error)
	// PublicProfile is an agent's certificate, its score and history;
	// unknown and unlisted agents are ErrNotFound alike.
	PublicProfile(ctx context.Context, agentID string, history bool) (service.Profile, error)
	// Agent is what the ledger knows about an agent, unlisted ones too.
	Agent(ctx context.Context, agentID string) (ledger.AgentInfo, error)
	// Score is an agent's current score, unlisted ones too.
	Score(ctx context.Context, agentID string) (ledger.ScoreEntry, error)
}

// VerifyService checks a passport as POST /swarmscore/verify does
// (service.Verifier).
type VerifyService interface {
	Verify(ctx context.Context, doc []byte, agentID string) (service.Verification, error)
}

// ConsoleService signs operators in and out, keeps their sessions and
// reads the action log (service.Console).
type ConsoleService interface {
	// SignIn checks an operator's token and starts a session, recording
	// the attempt; ErrUnauthorized or ErrForbidden for a token that may
	// not sign in.
	SignIn(ctx context.Context, token, client, browser string, p service.SessionPolicy) (service.NewSession, error)
	// Session is the live session of a cookie, marked used; ErrUnauthorized
	// when it has ended.
	Session(ctx context.Context, id string, p service.SessionPolicy) (auth.Session, error)
	// SignOut ends the session of a cookie.
	SignOut(ctx context.Context, id string) error
	// Sessions lists the live sessions; RevokeSession ends one by its Ref.
	Sessions(ctx context.Context, p service.SessionPolicy) ([]auth.Session, error)
	RevokeSession(ctx context.Context, ref string) error
	// Actions reads the action log, newest first.
	Actions(ctx context.Context, q auth.ActionQuery) ([]auth.Action, error)
	// RecordDenied records a refusal for the actor's role.
	RecordDenied(ctx context.Context, what string, err error)
}

// ActivityService is what the console shows of ingests
// (service.Ingestion).
type ActivityService interface {
	// IngestActivity is what this process's ingests did recently.
	IngestActivity() service.IngestActivity
}

// Host is the HTTP server the pages are mounted on (*httpapi.Server).
type Host interface {
	// HandlePage serves h for a ServeMux pattern behind the server's
	// request id, access log, metrics and panic recovery.
	HandlePage(pattern string, h http.Handler)
	// ClientIP is the address a request is attributed to.
	ClientIP(r *http.Request) string
	// AllowPublic takes a token from the client's public rate limit.
	AllowPublic(r *http.Request) (ok bool, retryAfter time.Duration)
	// SecureRequest reports whether the client connected over HTTPS.
	SecureRequest(r *http.Request) bool
	// CertificateCaching sets the caching headers, but the ETag, that the
	// certificate route sends with c.
	CertificateCaching(h http.Header, c *service.Certificate)
	// EnterDB takes one of the server's database slots: r bounded by its
	// database timeout, and the function giving the slot back; with none
	// free, an error matching errkind.ErrUnavailable.
	EnterDB(r *http.Request) (*http.Request, func(), error)
	// PageUnavailable counts and logs a page answered 503 because of err
	// (errkind.Unavailable) as the API's 503s are, so that the server's
	// count of the 503s the database caused holds the pages' too.
	PageUnavailable(w http.ResponseWriter, r *http.Request, err error)
	// ClientGone answers, as the API does (499, logged at DEBUG), a page
	// that failed only because its client went away, and reports whether
	// err was that.
	ClientGone(w http.ResponseWriter, r *http.Request, err error) bool
}

// Options tunes the pages. The zero value is usable.
type Options struct {
	// Logger receives internal errors and sign-in events (never a token);
	// nil discards.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// SessionIdle ends an operator session unused this long (default 30
	// minutes); SessionLifetime ends any session this long after sign-in
	// (default 12 hours).
	SessionIdle, SessionLifetime time.Duration
}

// Pages is the mounted site. The operator sessions are in the database;
// the sign-in throttle is in memory.
type Pages struct {
	svc  Services
	host Host
	log  *slog.Logger
	now  func() time.Time
	// idle and lifetime end sessions (Options.SessionIdle, SessionLifetime).
	idle, lifetime time.Duration
	throttle       *throttle
	// signinKey keys the sign-in form's CSRF token (operator.go); it
	// never leaves the process.
	signinKey [32]byte
	// pages are the agent pages rendered (renderCached).
	pages pageCache
}

// Mount registers every page on host and returns the site. The routes:
//
//	GET  /                        leaderboard, agent search (?agent=)
//	GET  /agents/{agent_id}       an agent's score, history, escrow and passport
//	GET  /verify, POST /verify    passport verification
//	GET  /badge/{agent_id}.svg    README badge (?style=flat|flat-square, ?label=)
//	GET  /badge/{agent_id}.json   the same for shields.io's endpoint badge
//	GET  /assets/{name}           the stylesheet and script
//	GET  /operator                sign-in, or the console
//	POST /operator/sign-in, POST /operator/sign-out
//	GET  /operator/…              the console pages (consolePages)
//	…    /operator/…              their actions and sub-pages (consoleActions)
func Mount(host Host, svc Services, opt Options) *Pages {
	p := &Pages{svc: svc, host: host, log: opt.Logger, now: opt.Now}
	if p.log == nil {
		p.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if p.now == nil {
		p.now = time.Now
	}
	if opt.SessionIdle <= 0 {
		opt.SessionIdle = 30 * time.Minute
	}
	if opt.SessionLifetime <= 0 {
		opt.SessionLifetime = 12 * time.Hour
	}
	p.idle, p.lifetime = opt.SessionIdle, opt.SessionLifetime
	p.throttle = newThrottle(signinBurst, signinRefill, maxThrottled)
	rand.Read(p.signinKey[:])

	handle := func(pattern string, h http.HandlerFunc) { host.HandlePage(pattern, p.secure(h)) }
	handle("GET /{$}", p.public(p.bounded(p.home)))
	handle("GET /agents/{agent_id}", p.public(p.bounded(p.agent)))
	handle("GET /verify", p.public(p.verifyForm))
	handle("POST /verify", p.public(p.bounded(p.verify)))
	handle("GET /badge/", p.badge) // rate limited, but always answered as a badge
	handle("GET /assets/{name}", p.asset)
	handle("GET /operator", p.signInPage)
	handle("POST /operator/sign-in", p.bounded(p.signIn))
	handle("POST /operator/sign-out", p.signedIn(auth.ReadOperator, p.signOut))
	for _, cp := range consolePages {
		handle("GET "+cp.Path, p.signedIn(cp.Permission, p.consolePage(cp)))
	}
	for _, a := range consoleActions {
		handle(a.Pattern, p.signedIn(a.Permission, func(w http.ResponseWriter, r *http.Request, s session) { a.Handle(p, w, r, s) }))
	}
	// Anything else under /operator/ is a page that does not exist, shown
	// as one rather than as an API problem.
	handle("GET /operator/", func(w http.ResponseWriter, r *http.Request) {
		p.errorPage(w, r, http.StatusNotFound, "Page not found", "There is no console page at this address.")
	})
	return p
}

// bounded runs a page that reads the database in one of the server's
// database slots, under its timeout, as the API's routes run: a flood of
// page views cannot hold every connection, and a database that does not
// answer is a 503 page within the timeout rather than a hung request.
// Without a free slot the page is a 503 at once.
func (p *Pages) bounded(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r2, done, err := p.host.EnterDB(r)
		if err != nil {
			p.fail(w, r, err, "")
			return
		}
		defer done()
		h(w, r2)
	}
}

// public puts a page behind the public routes' per-client rate limit.
func (p *Pages) public(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := p.host.AllowPublic(r); !ok {
			secs := int64((wait + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", itoa(secs))
			p.errorPage(w, r, http.StatusTooManyRequests, "Too many requests",
				"This address has made too many requests. Wait "+plural(secs, "second")+" and try again.")
			return
		}
		h(w, r)
	}
}
