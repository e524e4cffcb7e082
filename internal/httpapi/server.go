// Package httpapi is the HTTP edge of SwarmScore (spec §5, §7.2, §7.3): thin
// handlers over the use cases in Services, operator authentication, RFC 9457
// problems, metrics, rate limiting and the OpenAPI document.
//
// Handlers only translate: they check the request, call one use case, and
// render its result or its error. Errors become problems in one place
// (problemFor), classified by errkind.
package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/a2a"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/site"
	"github.com/swarmscore/swarmscore/passport"
)

// Services are the use cases the handlers call, one interface per group of
// internal/service (*service.Certificates satisfies CertificateService, and
// so on; ServicesOf takes them from a service.UseCases). Every method
// returns errors classified by errkind: ErrInvalid (naming the field),
// ErrNotFound (an unknown agent), ErrConflict, ErrUnauthorized,
// ErrForbidden, ErrUnavailable (the database is down); anything else is an
// internal failure.
type Services struct {
	Certificates CertificateService
	Verifier     VerifyService
	Ingest       IngestService
	Tokens       TokenService
	Schema       ReadinessService
	Keys         KeyService
	Corrections  CorrectionsService // corrections.go
	Checkpoints  CheckpointService  // checkpoints.go
	// Audit serves GET /swarmscore/{agent_id}/audit; nil leaves the
	// route out (audit.go).
	Audit   AuditService
	Rights  RightsService  // rights.go
	Erasure ErasureService // erasure.go
	Signals SignalService  // rights.go
	// Console records refused requests in the action log and serves
	// GET /swarmscore/actions (actions.go); nil leaves the route out and
	// records nothing.
	Console ConsoleService
	// Credentials serves the W3C credential routes (agents.go); nil
	// leaves them out.
	Credentials CredentialService
	// Log serves the transparency log: the checkpoint note at
	// GET /swarmscore/checkpoints/latest and the tlog-tiles routes under
	// /swarmscore/log/ (log.go); nil leaves them out and the latest
	// checkpoint is the JSON document only.
	Log LogService
	// Webhooks serves the webhook routes (webhooks.go); nil leaves them
	// out.
	Webhooks WebhookService
	// Holds serves the escrow hold routes and gauges (holds.go); nil
	// leaves them out.
	Holds HoldService
	// Proofs serves the Conduit proof route (proofs.go); nil leaves it
	// out.
	Proofs ProofService
}

// ServicesOf is the groups of u that the handlers call.
func ServicesOf(u *service.UseCases) Services {
	return Services{Certificates: u.Certificates, Verifier: u.Verifier, Ingest: u.Ingest, Tokens: u.Tokens,
		Schema: u.Schema, Keys: u.Keys, Corrections: u.Corrections, Checkpoints: u.Audit, Audit: u.Audit,
		Rights: u.Rights, Erasure: u.Rights, Signals: u.Signals, Credentials: u.Credentials, Console: u.Console,
		Webhooks: u.Webhooks, Holds: u.Holds, Proofs: u.Proofs, Log: u.Log}
}

// CertificateService is what the certificate, score, escrow and ranking
// routes call (service.Certificates).
type CertificateService interface {
	// Certificate returns the agent's current signed passport: the same
	// bytes while its cache entry answers now, a fresh one after. Digest,
	// when not zero, is the SHA-256 of Passport (computed here otherwise).
	Certificate(ctx context.Context, agentID string) (service.Certificate, error)
	// Score returns the agent's current score entry.
	Score(ctx context.Context, agentID string) (ledger.ScoreEntry, error)
	// CertificateFor and ScoreFor are the certificate and score routes:
	// an unlisted (or, when consent is required, unconsented) agent is
	// not found for anyone but itself and operators.
	CertificateFor(ctx context.Context, c service.Caller, agentID string) (service.Certificate, error)
	ScoreFor(ctx context.Context, c service.Caller, agentID string) (ledger.ScoreEntry, error)
	// Escrow computes the hold for a payment to the agent at its current
	// score.
	Escrow(ctx context.Context, agentID string, amountCents int64) (service.Escrow, error)
	// Ranking lists agents by current score, highest first.
	Ranking(ctx context.Context, q service.RankingQuery) (service.RankingPage, error)
	// CertificateStats reports how certificates were served and how the
	// back end's cache watch fares, for /metrics. It must not block.
	CertificateStats() service.CertificateStats
}

// VerifyService is what POST /swarmscore/verify calls (service.Verifier).
type VerifyService interface {
	// Verify checks a passport as received (L1: signature, consistency
	// and expiry; L2: the ledger's counts at its computed_at, when this
	// server holds the agent) and, unless agentID is "", that it belongs
	// to agentID; Checks says what each level found.
	Verify(ctx context.Context, passport []byte, agentID string) (service.Verification, error)
}

// IngestService is what POST /swarmscore/events calls (service.Ingestion).
type IngestService interface {
	// IngestEvents reads a JSON array or NDJSON of events and records them
	// for operator as one batch, reporting every event; input that is not
	// a batch of events at all is a *service.InputError.
	IngestEvents(ctx context.Context, operator string, body io.Reader) (service.IngestReport, error)
}

// TokenService resolves bearer tokens (service.Tokens).
type TokenService interface {
	// Authenticate returns the operator a bearer token belongs to, with
	// the token's id and role, or ErrUnauthorized.
	Authenticate(ctx context.Context, token string) (service.Caller, error)
	// CallerFor returns who a bearer token speaks for: an operator or one
	// agent; ErrUnauthorized for an unknown or revoked token.
	CallerFor(ctx context.Context, token string) (service.Caller, error)
}

// ReadinessService is what /readyz and the outage probe call
// (service.Schema).
type ReadinessService interface {
	// Ready reports whether the database is reachable and migrated.
	Ready(ctx context.Context) error
}

// KeyService is what the key set and key history routes and /metrics call
// (service.Keys).
type KeyService interface {
	// PublicKeys returns the JWK set of the Ed25519 keys whose passports
	// may still be valid (never an HMAC key). It cannot fail.
	PublicKeys(ctx context.Context) passport.JWKSet
	// KeyHistory returns every Ed25519 key the deployment ever signed
	// with, with the interval it signed in and its state (never an HMAC
	// key). It cannot fail.
	KeyHistory(ctx context.Context) passport.KeyHistory
	// KeyringStats describes the active signing key, for /metrics. It
	// must not block.
	KeyringStats() service.KeyringStats
}

// Options tunes a Server. The zero value is usable.
type Options struct {
	// Logger receives the access log and internal errors; nil discards.
	Logger *slog.Logger
	// AccessLog, when set, receives the access log instead of Logger, as
	// the lines slog.NewJSONHandler(AccessLog, nil) would write for it
	// (the same fields, in the same order and format), appended by hand:
	// set it to the writer of Logger's handler when that handler is such
	// a JSON handler with no attributes or groups added. Logger's level
	// still decides whether they are written.
	AccessLog io.Writer
	// RateLimit is the sustained requests per second allowed per client IP
	// on the public score routes; 0 disables rate limiting.
	RateLimit float64
	// RateBurst is the bucket size; at least 1 when RateLimit is set.
	RateBurst int
	// RateClients bounds the number of clients tracked (default 10000),
	// by the rate limit and by the failed-authentication throttle each.
	// Only clients whose buckets are full are forgotten (ratelimit.go).
	RateClients int
	// RateIPv6Prefix is the length of the IPv6 networks that count as one
	// client, for the rate limit and the failed-authentication throttle
	// (default 64: a host is usually given a /64).
	RateIPv6Prefix int
	// DBTimeout bounds each request's wait for the database (pool
	// acquire, connect, statements): past it the request is answered 503
	// with Retry-After (default DefaultDBTimeout). /readyz answers within
	// 2 s, or DBTimeout if shorter.
	DBTimeout time.Duration
	// DBMaxRequests bounds the requests using or waiting on the database
	// at once; more are answered 503 at once (default
	// DefaultDBMaxRequests).
	DBMaxRequests int
	// AuthFailures is how many failed token lookups (operators' tokens and
	// agents' own, on any route) a client may make in a burst (default 10)
	// before it is throttled to one per AuthFailureEvery (default 6 s).
	AuthFailures     int
	AuthFailureEvery time.Duration
	// TrustedProxies are the networks of reverse proxies whose
	// X-Forwarded-For is believed when they are the TCP peer. Empty: the
	// peer is the client and the header is ignored.
	TrustedProxies []netip.Prefix
	// MetricsAllow are the networks /metrics answers to (a client outside
	// them gets 403). Empty: loopback only (127.0.0.0/8, ::1), as
	// Prometheus exporters on public services do: the metrics describe the
	// server's traffic and internals.
	MetricsAllow []netip.Prefix
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Site is the deployment's public origin (serve --base-url): the
	// credentials' issuer, the URLs that credentials, agent cards and
	// ERC-8004 records point at. Default http://127.0.0.1:8080.
	Site site.Site
	// Version is the build's version, in the agent card.
	Version string
	// MCP, when set, is served at /mcp (internal/mcp's streamable HTTP
	// handler) under the public routes' rate limit, with the caller of
	// the request's optional bearer token in its context (CallerFrom).
	MCP http.Handler
}

// loopback is the default of Options.MetricsAllow.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// Body limits. Events are the only large request (at most api.MaxEvents
// of them in api.MaxBodyBytes); the passport is at most 64 KiB
// (passport.MaxSize) inside a small wrapper.
const (
	MaxEventsBody   = api.MaxBodyBytes
	maxVerifyBody   = 128 << 10
	maxSmallBody    = 4 << 10
	maxNoBody       = 4 << 10
	defaultRankSize = 50
)

// Server is the HTTP API. Create it with New; it is an http.Handler.
type Server struct {
	svc Services
	log *slog.Logger
	// mux holds the routes and a catch-all; classify holds the routes
	// only, and says what the catch-all's requests are (a 404, a 405).
	mux       *http.ServeMux
	classify  *http.ServeMux
	routes    map[string]bool
	access    map[string]access // who may call each route, for the OpenAPI test
	limits    map[string]int64  // each route's body limit, for the OpenAPI test
	metrics   *metrics
	limiter   *ipLimiter
	proxies   []netip.Prefix // Options.TrustedProxies
	scrapers  []netip.Prefix // Options.MetricsAllow
	cors      map[string]bool
	now       func() time.Time
	handler   http.Handler
	limited   logSampler     // the access log of rate-limited requests
	accessLog *jsonAccessLog // Options.AccessLog, nil when not set
	site      site.Site      // Options.Site
	card      []byte         // the service's A2A agent card

	// Bounded waits and failures (limits.go).
	gate          *dbGate
	authFails     *ipLimiter
	authThrottled atomic.Uint64
	health        *health
}

// New builds the server and its routes.
func New(svc Services, opt Options) *Server {
	s := &Server{
		svc:      svc,
		log:      opt.Logger,
		mux:      http.NewServeMux(),
		classify: http.NewServeMux(),
		routes:   map[string]bool{},
		access:   map[string]access{},
		limits:   map[string]int64{},
		cors:     map[string]bool{},
		metrics:  newMetrics(svc.Certificates.CertificateStats),
		now:      opt.Now,
		proxies:  opt.TrustedProxies,
		scrapers: opt.MetricsAllow,
	}
	if len(s.scrapers) == 0 {
		s.scrapers = loopback
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opt.AccessLog != nil {
		s.accessLog = &jsonAccessLog{w: opt.AccessLog}
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.site = opt.Site
	if s.site == (site.Site{}) {
		s.site = site.MustNew("http://127.0.0.1:8080")
	}
	version := opt.Version
	if version == "" {
		version = "dev"
	}
	s.card = append(a2a.Card(s.site, version), '\n')
	if opt.RateLimit > 0 {
		clients := opt.RateClients
		if clients <= 0 {
			clients = 10000
		}
		s.limiter = newIPLimiter(opt.RateLimit, max(1, opt.RateBurst), clients, opt.RateIPv6Prefix)
	}
	s.initFaults(opt)

	s.route("GET /swarmscore/{agent_id}/certificate", crossOrigin, maxNoBody, s.certificate)
	s.route("POST /swarmscore/verify", crossOrigin, maxVerifyBody, s.verify)
	s.route("GET /swarmscore/{agent_id}", crossOrigin, maxNoBody, s.score)
	s.route("POST /swarmscore/events", operator, MaxEventsBody, s.events)
	s.route("POST /swarmscore/{agent_id}/escrow", operator, maxSmallBody, s.escrow)
	s.route("GET /swarmscore/agents", operator, maxNoBody, s.agents)
	s.correctionRoutes()
	s.auditRoutes()
	s.rightsRoutes()
	s.erasureRoutes()
	s.actionRoutes()
	s.webhookRoutes()
	s.holdRoutes()
	s.proofRoutes()
	s.route("GET /healthz", probe, maxNoBody, s.healthz)
	s.route("GET /readyz", probe, maxNoBody, s.readyz)
	s.route("GET /metrics", scraper, maxNoBody, s.metrics.handler().ServeHTTP)
	s.route("GET /openapi.json", crossOrigin, maxNoBody, s.openapi)
	s.route("GET /.well-known/swarmscore-keys.json", crossOrigin, maxNoBody, s.keys)
	s.route("GET /.well-known/swarmscore-key-history.json", crossOrigin, maxNoBody, s.keyHistory)
	s.agentRoutes(opt)
	s.metrics.reg.MustRegister(newKeyCollector(svc.Keys.KeyringStats))
	// Registered last and least specific: every request no route above
	// takes, whatever its method, is a problem from notFound.
	s.mux.HandleFunc("/", s.notFound)
	s.handler = s.outer(s.mux)
	return s
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// access says who may call a route.
type access int

const (
	public      access = iota // anyone, rate limited per client IP
	crossOrigin               // public, and readable by pages of any origin (CORS)
	operator                  // Authorization: Bearer <operator token>
	probe                     // anyone, not rate limited (health checks)
	scraper                   // clients in Options.MetricsAllow, not rate limited
	self                      // the agent of {agent_id} (its own token) or an operator; the use case decides
	appellant                 // any agent's own token or an operator; the use case limits an agent to its own appeals
)

// route registers a handler behind its body limit and access check.
func (s *Server) route(pattern string, a access, limit int64, h http.HandlerFunc) {
	s.classify.HandleFunc(pattern, func(http.ResponseWriter, *http.Request) {})
	s.mux.HandleFunc(pattern, s.guard(pattern, a, limit, h))
}

// guard records pattern as a route and returns h behind its body limit and
// access check, for route, or for a dispatcher that serves the route under
// a less specific pattern (items).
func (s *Server) guard(pattern string, a access, limit int64, h http.HandlerFunc) http.HandlerFunc {
	s.routes[pattern] = true
	s.access[pattern] = a
	s.limits[pattern] = limit
	s.cors[pattern] = a == crossOrigin
	m := s.metrics.route(pattern)
	usesDB := !withoutDatabase[pattern]
	perm, hasPerm := routePermissions[pattern]
	if (a == operator || a == self || a == appellant) && !hasPerm {
		panic("httpapi: route " + pattern + " has no permission in routePermissions")
	}
	return func(w http.ResponseWriter, r *http.Request) {
		rw, _ := w.(*recorder)
		if rw != nil {
			rw.route = m
		}
		if a == crossOrigin {
			// Every answer, problems included, so that a page can read why
			// it failed.
			setCORS(w.Header())
		}
		if r.ContentLength > limit {
			s.fail(w, r, errorf(ptBodyTooLarge, "request body of %d bytes exceeds %d bytes", r.ContentLength, limit))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		switch a {
		case public, crossOrigin:
			if s.limiter != nil {
				if ok, wait := s.limiter.allow(s.clientOf(rw, r), s.now()); !ok {
					secs := seconds(wait)
					s.fail(w, r, &retryAfterError{errorf(ptRateLimited, "rate limit exceeded for this client; retry after %d s", secs), secs})
					return
				}
			}
		case operator:
			c, err := s.authenticate(r)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			if rw != nil {
				rw.operator = c.Operator
			}
			r = s.asOperator(r, c)
			if err := s.allowRole(r, c, pattern, perm); err != nil {
				s.fail(w, r, err)
				return
			}
		case self, appellant:
			c, err := s.caller(r, true)
			if err == nil && a == self {
				// Before the body is read: a stranger learns nothing from
				// what it sent.
				err = c.MayActFor(r.PathValue("agent_id"))
			}
			if err != nil {
				s.fail(w, r, err)
				return
			}
			r = r.WithContext(withCaller(r.Context(), c))
			if c.IsOperator() {
				if rw != nil {
					rw.operator = c.Operator
				}
				r = s.asOperator(r, c)
				if err := s.allowRole(r, c, pattern, perm); err != nil {
					s.fail(w, r, err)
					return
				}
			}
		case scraper:
			if !s.scraperAllowed(rw, r) {
				s.fail(w, r, errorf(ptForbidden, "%s answers only to the networks given with --metrics-allow (default loopback)", r.URL.Path))
				return
			}
		}
		if err := bufferBody(r); err != nil {
			s.fail(w, r, err)
			return
		}
		if !usesDB {
			h(w, r)
			return
		}
		s.dbGuard(w, r, h)
	}
}
