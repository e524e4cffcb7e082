package httpapi

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
)

// Errors below the handlers. net/http answers some requests itself, before
// any handler runs, in plain text: a request line or header it cannot
// parse (400: a malformed request line, an invalid percent-escape in the
// path, a bad header name or value, a missing or malformed Host), headers
// past MaxHeaderBytes (431), a Transfer-Encoding it does not implement
// (501) and a protocol version it does not speak (505). It offers no hook
// for these, but writes each one to the connection in a single Write of a
// fixed shape:
//
//	HTTP/1.1 <code> <reason>\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n<text>
//
// It also answers an Expect other than 100-continue with an empty 417 of
// its own, in one Write starting "HTTP/1.1 417 ", a status no handler here
// sends.
//
// Listener wraps the server's connections and replaces exactly those
// responses with the same status as an RFC 9457 problem. A handler's
// response never has the first shape (net/http always adds Date, and this
// server's responses carry X-Request-Id), so nothing else is touched. What
// stays as net/http does it: connections it drops without a word (a client
// that stops mid-request, a read timeout, a request that is not HTTP at
// all once the connection is closed), and HTTP/2, which this server does
// not offer.

// netHTTPErrorHeaders is the header block net/http puts on its own errors.
const netHTTPErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// Listener returns ln with net/http's own error responses (see above)
// rewritten as problems, for http.Server.Serve. It changes nothing else:
// connections, deadlines and every other byte pass through.
func Listener(ln net.Listener) net.Listener { return problemListener{ln} }

type problemListener struct{ net.Listener }

func (l problemListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &problemConn{Conn: c}, nil
}

// problemConn rewrites net/http's error responses written to it.
type problemConn struct{ net.Conn }

func (c *problemConn) Write(p []byte) (int, error) {
	if b, ok := problemResponse(p); ok {
		if _, err := c.Conn.Write(b); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite lets net/http half-close the connection after a 431, as it
// does on a bare TCP connection, so the client reads the answer before the
// reset.
func (c *problemConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// problemResponse returns the problem response for p when p is one of
// net/http's own error responses.
func problemResponse(p []byte) ([]byte, bool) {
	const prefix = "HTTP/1.1 "
	if len(p) < len(prefix)+4 || string(p[:len(prefix)]) != prefix {
		return nil, false
	}
	if bytes.HasPrefix(p[len(prefix):], []byte("417 ")) && bytes.HasSuffix(p, []byte("\r\n\r\n")) {
		return problemBytes("417 Expectation Failed", ptExpectationFailed,
			"the request's Expect header asks for something other than 100-continue"), true
	}
	line, rest, ok := bytes.Cut(p[len(prefix):], []byte(netHTTPErrorHeaders[:2]))
	if !ok || !bytes.HasPrefix(p[len(prefix)+len(line):], []byte(netHTTPErrorHeaders)) {
		return nil, false
	}
	text := rest[len(netHTTPErrorHeaders)-2:]
	code, err := strconv.Atoi(string(line[:3]))
	if err != nil || code < 400 {
		return nil, false
	}
	var pt problemType
	var detail string
	switch code {
	case http.StatusRequestHeaderFieldsTooLarge:
		pt, detail = ptHeadersTooLarge, "the request's header fields are larger than this server accepts"
	case http.StatusNotImplemented:
		pt, detail = ptNotImplemented, "the request's Transfer-Encoding is not supported (only chunked is)"
	case http.StatusHTTPVersionNotSupported:
		pt, detail = ptVersionNotSupported, "the request's HTTP version is not supported (use HTTP/1.0 or HTTP/1.1)"
	case http.StatusBadRequest:
		pt = ptInvalid
		detail = "the request could not be parsed: a malformed request line, request target (such as an invalid percent-escape), header or Host"
		// net/http's own text, when it gives one ("400 Bad Request:
		// missing required Host header"), names the part; it never
		// echoes the client's bytes.
		if _, reason, ok := bytes.Cut(text, []byte(": ")); ok && len(reason) > 0 {
			detail = "the request could not be parsed: " + string(reason)
		}
	default:
		return nil, false
	}
	return problemBytes(string(line), pt, detail), true
}

// problemBytes is a whole response: the status line (after "HTTP/1.1 ")
// and pt's problem with detail, closing the connection as net/http does.
func problemBytes(line string, pt problemType, detail string) []byte {
	body := marshal(Problem{Type: ProblemBase + pt.slug, Title: pt.title, Status: pt.status, Detail: detail})
	out := make([]byte, 0, 160+len(body))
	out = append(out, "HTTP/1.1 "...)
	out = append(out, line...)
	out = append(out, "\r\nContent-Type: application/problem+json\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, "\r\nCache-Control: no-store\r\nContent-Security-Policy: "...)
	out = append(out, secCSP[0]...)
	out = append(out, "\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\nReferrer-Policy: same-origin\r\nConnection: close\r\n\r\n"...)
	return append(out, body...)
}
