package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
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

// newRequestID is 16 hex digits of randomness: enough to tell requests apart
// in a log, cheap enough for every request.
func newRequestID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return short)
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

// recorder remembers the status and size of a response for the access log
// and the metrics.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
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

// clientIP is the peer address. Forwarding headers are not trusted: a
// client could set them to dodge the rate limit.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// outer wraps the whole mux: request id, panic recovery, access log and
// problem-shaped 404/405. It logs the method, the route pattern, the path,
// the status and the duration, and deliberately no header: Authorization,
// tokens, keys and signatures never reach the log.
func (s *Server) outer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-ID")
		if !acceptRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-ID", id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey, id))
		rw := &recorder{ResponseWriter: w}
		route := "unmatched"
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic", "request_id", id, "method", r.Method, "path", r.URL.Path,
					"panic", v, "stack", string(debug.Stack()))
				if rw.status == 0 {
					p, _ := problemFor(errorf(ptInternal, "the server failed to handle the request; quote the request id when reporting it"))
					writeProblem(rw, r, p)
				}
			}
			d := time.Since(start)
			if rw.status == 0 {
				rw.status = http.StatusOK
			}
			s.metrics.observe(route, rw.status, d)
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
				slog.String("request_id", id),
				slog.String("method", r.Method),
				slog.String("route", route),
				slog.String("path", r.URL.Path),
				slog.Int("status", rw.status),
				slog.Int64("bytes", rw.bytes),
				slog.Duration("duration", d),
				slog.String("client", clientIP(r)))
		}()
		// Handler only finds the route; ServeHTTP must dispatch, because it
		// is what sets the request's path values.
		// A pattern that is not one of ours is the mux's own redirect or
		// error; it must not become a metrics label (unbounded cardinality).
		h, pattern := s.mux.Handler(r)
		if !s.routes[pattern] {
			s.unmatched(rw, r, h)
			return
		}
		route = pattern
		s.mux.ServeHTTP(rw, r)
	})
}

// unmatched turns the mux's plain-text 404 and 405 into problems, keeping
// its Allow header. Anything else it produces (a redirect to a cleaned
// path) passes through unchanged.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request, h http.Handler) {
	c := &capture{header: http.Header{}}
	h.ServeHTTP(c, r)
	switch c.status {
	case http.StatusNotFound:
		p, _ := problemFor(errorf(ptNoRoute, "no route for %s %s; see /openapi.json", r.Method, r.URL.Path))
		writeProblem(w, r, p)
	case http.StatusMethodNotAllowed:
		if allow := c.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		p, _ := problemFor(errorf(ptMethodNotAllowed, "%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, c.header.Get("Allow")))
		writeProblem(w, r, p)
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

// fail answers with the problem for err. Internal errors are logged with
// their message (which may name database details the caller must not see).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	p, internal := problemFor(err)
	if internal {
		s.log.Error("internal error", "request_id", requestIDFrom(r.Context()),
			"method", r.Method, "path", r.URL.Path, "err", err)
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="swarmscore"`)
	}
	writeProblem(w, r, p)
}
