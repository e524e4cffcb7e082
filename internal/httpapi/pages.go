package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
)

// Routes served by another package through this server: the HTML pages of
// internal/web. They share the request id, the access log, the metrics and
// panic recovery of the API, and may ask for the client's address and the
// public rate limit, so both edges judge a client the same way. They are
// not API routes: the OpenAPI document does not list them.

// HandlePage serves h for pattern (a net/http.ServeMux pattern that must
// not collide with an API route) behind the server's request id, access
// log, metrics and panic recovery. It sets no body limit, access check or
// rate limit: the page does what it needs (AllowPublic). Call it before
// serving; it panics, as ServeMux does, on a conflicting pattern.
func (s *Server) HandlePage(pattern string, h http.Handler) {
	m := s.metrics.route(pattern)
	s.classify.HandleFunc(pattern, func(http.ResponseWriter, *http.Request) {})
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if rw, ok := w.(*recorder); ok {
			rw.route = m
		}
		h.ServeHTTP(w, r)
	})
}

// ClientIP is the address r is attributed to, as for the API's rate limit
// and access log: the TCP peer, or, when the peer is a trusted proxy, the
// rightmost X-Forwarded-For address that is not one.
func (s *Server) ClientIP(r *http.Request) string { return s.clientIP(r) }

// AllowPublic takes one token from the client's bucket of the public
// routes' rate limit. When the bucket is empty it takes nothing and says
// how long until a token is due. Without a rate limit it always allows.
func (s *Server) AllowPublic(r *http.Request) (ok bool, retryAfter time.Duration) {
	if s.limiter == nil {
		return true, 0
	}
	return s.limiter.allow(s.clientIP(r), s.now())
}

// SecureRequest reports whether the client reached the service over HTTPS:
// this connection is TLS, or the TCP peer is a trusted proxy whose
// X-Forwarded-Proto (the last value, the one it set) is https. A header
// from anyone else is ignored, as X-Forwarded-For is.
func (s *Server) SecureRequest(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if len(s.proxies) == 0 {
		return false
	}
	protos := r.Header.Values("X-Forwarded-Proto")
	if len(protos) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !s.trusted(peer) {
		return false
	}
	last := protos[len(protos)-1]
	last = last[strings.LastIndexByte(last, ',')+1:]
	return strings.EqualFold(strings.TrimSpace(last), "https")
}

// CertificateCaching sets on h the caching headers, other than the ETag,
// that the certificate route sends with c. A page showing what a
// certificate says (the README badge) sends the same beside its own ETag,
// so that caches keep it exactly as long as they keep the certificate.
func (s *Server) CertificateCaching(h http.Header, c *service.Certificate) {
	h["Cache-Control"] = noCache
}

// EnterDB takes one of the server's database slots for a page, as every
// API route that reads the database does: it returns r bounded by the
// server's database timeout (Options.DBTimeout) and the function that
// gives the slot back. With every slot taken it takes none and returns an
// error matching errkind.ErrUnavailable, for the page's 503 (to pass to
// PageUnavailable), so a page under load fails fast rather than queueing.
func (s *Server) EnterDB(r *http.Request) (*http.Request, func(), error) {
	ctx, done, err := s.gate.enter(r.Context())
	if err != nil {
		return r, nil, fmt.Errorf("%w: %w", errkind.ErrUnavailable, err)
	}
	return r.WithContext(ctx), done, nil
}

// PageUnavailable records a page answered 503 because of err, an error
// matching errkind.ErrUnavailable (from a use case, or EnterDB), as the
// API's 503s are: counted in swarmscore_db_unavailable_responses_total
// under its reason, counted in the database outage it belongs to, and
// logged (the first 503 of an outage at WARN, the others at DEBUG; a
// refusal for want of a slot sampled). r is the request the page ran
// with. It writes nothing to w, whose X-Request-Id the log line quotes.
func (s *Server) PageUnavailable(w http.ResponseWriter, r *http.Request, err error) {
	r = withRequestID(w, r)
	p, level, logged := problemFor(err)
	level = s.dbUnavailable(r, err, level)
	if logged {
		s.log.Log(r.Context(), level, "request failed", "request_id", requestIDFrom(r.Context()),
			"method", r.Method, "path", r.URL.Path, "problem", p.Type[len(ProblemBase):], "err", err)
	}
}
