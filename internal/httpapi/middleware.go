package httpapi

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	operatorKey
)

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// withRequestID returns r with the request id that outer put in the
// response's X-Request-Id header in its context, where writeProblem and
// the error log find it. outer does not put it in every request's context:
// copying the request costs more than the few error responses that need it.
func withRequestID(w http.ResponseWriter, r *http.Request) *http.Request {
	if requestIDFrom(r.Context()) != "" {
		return r
	}
	id := w.Header().Get("X-Request-Id")
	if id == "" {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), requestIDKey, id))
}

// newRequestID is 16 hex digits of randomness: enough to tell requests apart
// in a log, cheap enough for every request. It needs to be unique, not
// unpredictable (it names a request, it grants nothing), so it comes from
// the runtime's per-thread generator rather than the operating system's.
func newRequestID() string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], rand.Uint64())
	return hex.EncodeToString(b[:])
}

// acceptRequestID keeps a caller's X-Request-ID when it is short and plain,
// so a request can be followed across a proxy; anything else is replaced,
// which keeps log injection out.
func acceptRequestID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// recorder remembers the status and size of a response, and the route that
// handled it, for the access log and the metrics.
type recorder struct {
	http.ResponseWriter
	status      int
	bytes       int64
	route       *routeMetrics // nil until one of our routes handles the request
	client      string        // clientOf's result, once asked
	operator    string        // the authenticated operator of an operator route
	rateLimited bool          // refused by the rate limit
}

func (rw *recorder) WriteHeader(code int) {
	if rw.status == 0 {
		rw.status = code
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recorder) Write(b []byte) (int, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	n, err := rw.ResponseWriter.Write(b)
	rw.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// clientIP is the address a request is attributed to, for the rate limit and
// the access log. It is the TCP peer unless the peer is a trusted proxy; then
// X-Forwarded-For is read from the right, skipping trusted proxies, and the
// first address not among them is the client. Only the right end of the
// header can be believed: a client can write anything at its left end to
// dodge the rate limit, but each trusted proxy appends the peer it saw.
func (s *Server) clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if len(s.proxies) == 0 {
		return host
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !s.trusted(peer) {
		return host
	}
	client := peer
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		h := hops[i]
		for h != "" {
			j := strings.LastIndexByte(h, ',')
			hop := strings.TrimSpace(h[j+1:])
			h = h[:max(j, 0)]
			a, err := netip.ParseAddr(hop)
			if err != nil {
				// A malformed hop ends what can be believed: the last good
				// address before it is the client.
				return client.String()
			}
			client = a.Unmap()
			if !s.trusted(client) {
				return client.String()
			}
		}
	}
	return client.String()
}

// clientOf is clientIP(r), worked out once per request: the rate limit and
// the access log both ask. rw may be nil (a handler called without outer).
func (s *Server) clientOf(rw *recorder, r *http.Request) string {
	if rw == nil {
		return s.clientIP(r)
	}
	if rw.client == "" {
		rw.client = s.clientIP(r)
	}
	return rw.client
}

// trusted reports whether a is inside one of the trusted proxy prefixes.
func (s *Server) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range s.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// outer wraps the whole mux: request id, panic recovery, access log and
// metrics. It logs the method, the route pattern, the path, the status, the
// duration in milliseconds, the client and, on operator routes, the
// operator, and deliberately no header: Authorization, tokens, keys and
// signatures never reach the log. Requests refused by the rate limit are
// logged one per rateLimitedLogEvery, with the number held back since the
// last one (a flood would otherwise write a line per refused request; the
// metrics count every one). The mux is searched once: the handler of each
// route tells the recorder which route it is, and a request no route takes
// ends in the catch-all (notFound), labelled "unmatched".
func (s *Server) outer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-ID")
		if !acceptRequestID(id) {
			id = newRequestID()
		}
		h := w.Header()
		h["X-Request-Id"] = []string{id}
		setSecurityHeaders(h)
		rw := &recorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic", "request_id", id, "method", r.Method, "path", r.URL.Path,
					"panic", v, "stack", string(debug.Stack()))
				if rw.status == 0 {
					p, _, _ := problemFor(errorf(ptInternal, "the server failed to handle the request; quote the request id when reporting it"))
					writeProblem(rw, withRequestID(rw, r), p)
				}
			}
			d := time.Since(start)
			if rw.status == 0 {
				rw.status = http.StatusOK
			}
			route := rw.route
			if route == nil {
				route = s.metrics.unmatched
			}
			route.observe(rw.status, d)
			if !s.log.Enabled(r.Context(), slog.LevelInfo) {
				return
			}
			l := accessLine{requestID: id, method: r.Method, route: route.name, path: r.URL.Path, status: rw.status,
				bytes: rw.bytes, durationMS: float64(d.Microseconds()) / 1000, client: s.clientOf(rw, r), operator: rw.operator}
			if rw.rateLimited {
				ok, held := s.limited.take(s.now())
				if !ok {
					return
				}
				l.rateLimited, l.heldBack = true, held
			}
			if s.accessLog != nil {
				s.accessLog.write(time.Now(), &l)
				return
			}
			var buf [10]slog.Attr
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", l.attrs(buf[:0])...)
		}()
		next.ServeHTTP(rw, r)
	})
}

// Security headers every response carries, problems and JSON included: no
// sniffing, no framing, no referrer to other origins, and a policy that
// lets a document of this API load and run nothing. The HTML pages
// (internal/web) replace the policy with theirs, which adds their
// stylesheet, images and nonce-bearing script.
var (
	secCSP      = []string{"default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"}
	secNoSniff  = []string{"nosniff"}
	secFrame    = []string{"DENY"}
	secReferrer = []string{"same-origin"}
	secOpener   = []string{"same-origin"}
)

// setSecurityHeaders sets the headers above on h.
func setSecurityHeaders(h http.Header) {
	h["Content-Security-Policy"] = secCSP
	h["X-Content-Type-Options"] = secNoSniff
	h["X-Frame-Options"] = secFrame
	h["Referrer-Policy"] = secReferrer
	h["Cross-Origin-Opener-Policy"] = secOpener
}

// notFound is the catch-all route: it answers what none of our routes
// takes. It asks a mux holding only our routes what it would have done, and
// turns its plain-text 404 and 405 into problems.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions && s.preflight(w, r) {
		return
	}
	h, _ := s.classify.Handler(r)
	s.unmatched(w, r, h)
}

// CORS. The cross-origin routes are public and take no credentials, so
// any origin may read them ("*", never with credentials): a marketplace's
// page on its own origin fetches a certificate or posts one to verify.
var (
	corsOrigin  = []string{"*"}
	corsExpose  = []string{"ETag, Retry-After, X-Request-Id"}
	corsHeaders = []string{"Content-Type, If-None-Match, X-Request-Id"}
	corsMaxAge  = []string{"86400"}
)

// setCORS marks a response of a cross-origin route readable by any origin.
func setCORS(h http.Header) {
	h["Access-Control-Allow-Origin"] = corsOrigin
	h["Access-Control-Expose-Headers"] = corsExpose
}

// preflight answers a CORS preflight (OPTIONS with
// Access-Control-Request-Method) for a cross-origin route with 204 and
// what it allows; it reports false, answering nothing, for any other
// route, which browsers then refuse to call.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) bool {
	method := r.Header.Get("Access-Control-Request-Method")
	if method == "" {
		return false
	}
	probe := *r
	probe.Method = method
	_, pattern := s.classify.Handler(&probe)
	if !s.cors[pattern] {
		return false
	}
	if rw, ok := w.(*recorder); ok {
		rw.route = s.metrics.preflight
	}
	if method == http.MethodGet {
		method = "GET, HEAD"
	}
	h := w.Header()
	setCORS(h)
	h["Access-Control-Allow-Methods"] = []string{method}
	h["Access-Control-Allow-Headers"] = corsHeaders
	h["Access-Control-Max-Age"] = corsMaxAge
	w.WriteHeader(http.StatusNoContent)
	return true
}

// scraperAllowed reports whether the client may read /metrics: its address
// (clientIP) is in Options.MetricsAllow. A request that names a forwarded
// client but did not come from a trusted proxy is refused: an unnamed
// proxy on loopback would otherwise hand every outside request a loopback
// address.
func (s *Server) scraperAllowed(rw *recorder, r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	if !s.trusted(peer) && (r.Header.Get("X-Forwarded-For") != "" || r.Header.Get("Forwarded") != "") {
		return false
	}
	client, err := netip.ParseAddr(s.clientOf(rw, r))
	if err != nil {
		return false
	}
	client = client.Unmap()
	for _, p := range s.scrapers {
		if p.Contains(client) {
			return true
		}
	}
	return false
}

// rateLimitedLogEvery is how often a request refused by the rate limit is
// written to the access log.
const rateLimitedLogEvery = 10 * time.Second

// logSampler lets one line through per rateLimitedLogEvery and counts the
// lines it held back.
type logSampler struct {
	mu   sync.Mutex
	next time.Time
	held int64
}

// take reports whether a line may be written now and, if so, how many were
// held back since the last one written.
func (l *logSampler) take(now time.Time) (ok bool, held int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.next) {
		l.held++
		return false, 0
	}
	held, l.held = l.held, 0
	l.next = now.Add(rateLimitedLogEvery)
	return true, held
}

// unmatched turns the mux's plain-text 404 and 405 into problems, keeping
// its Allow header. Anything else it produces (a redirect to a cleaned
// path) passes through unchanged.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request, h http.Handler) {
	c := &capture{header: http.Header{}}
	h.ServeHTTP(c, r)
	switch c.status {
	case http.StatusNotFound:
		p, _, _ := problemFor(errorf(ptNoRoute, "no route for %s %s; see /openapi.json", r.Method, r.URL.Path))
		writeProblem(w, withRequestID(w, r), p)
	case http.StatusMethodNotAllowed:
		if allow := c.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		p, _, _ := problemFor(errorf(ptMethodNotAllowed, "%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, c.header.Get("Allow")))
		writeProblem(w, withRequestID(w, r), p)
	default:
		for k, v := range c.header {
			w.Header()[k] = v
		}
		w.WriteHeader(c.status)
		w.Write(c.body)
	}
}

// capture is a ResponseWriter that buffers the mux's own small replies.
type capture struct {
	header http.Header
	status int
	body   []byte
}

func (c *capture) Header() http.Header { return c.header }
func (c *capture) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}
func (c *capture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.body = append(c.body, b...)
	return len(b), nil
}

// fail answers with the problem for err. An error whose message the caller
// does not see (an internal failure, the database being unavailable, a
// back end's "not found") is logged with it, under the request id the
// problem carries; a 503 is counted (dbUnavailable), and during a
// database outage only its first 503 is logged above DEBUG (health). A
// 429 or 503 carries Retry-After.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	r = withRequestID(w, r)
	if s.ClientGone(w, r, err) {
		return
	}
	p, level, logged := problemFor(err)
	switch p.Status {
	case http.StatusServiceUnavailable:
		level = s.dbUnavailable(r, err, level)
	case http.StatusTooManyRequests:
		if rw, ok := w.(*recorder); ok {
			rw.rateLimited = true // sampled in the access log
		}
	}
	if logged {
		s.log.Log(r.Context(), level, "request failed", "request_id", requestIDFrom(r.Context()),
			"method", r.Method, "path", r.URL.Path, "problem", p.Type[len(ProblemBase):], "err", err)
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="swarmscore"`)
	}
	retryAfter(w.Header(), p.Status, err)
	writeProblem(w, r, p)
}

// statusClientClosed is the status recorded for a request whose client went
// away before its answer was ready (nginx's 499): no one reads it, and it
// is neither the server's fault nor the database's.
const statusClientClosed = 499

// ClientGone answers (with statusClientClosed, for the access log and the
// metrics) a request that failed because its client went away: its
// context was cancelled, and the error is that cancellation. It is logged
// at DEBUG: a client hanging up is not a failure of the server.
func (s *Server) ClientGone(w http.ResponseWriter, r *http.Request, err error) bool {
	if !errors.Is(r.Context().Err(), context.Canceled) || !errors.Is(err, context.Canceled) {
		return false
	}
	s.log.Log(r.Context(), slog.LevelDebug, "client went away", "request_id", requestIDFrom(r.Context()),
		"method", r.Method, "path", r.URL.Path, "err", err)
	w.WriteHeader(statusClientClosed)
	return true
}
