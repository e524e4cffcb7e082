package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
)

// ProblemBase is the prefix of every problem type URI. The URIs are part of
// the API: clients match on them, so they never change once published
// (api.ProblemTypes lists them; a test keeps it and the catalogue in step).
const ProblemBase = api.ProblemBase

// Problem is an RFC 9457 problem details object (api.Problem).
type Problem = api.Problem

// problemType is one row of the problem catalogue: the stable last segment
// of the type URI, its title and its status.
type problemType struct {
	slug   string
	title  string
	status int
}

// The catalogue. The OpenAPI document lists the same slugs (a test keeps the
// two in step).
var (
	ptInvalid          = problemType{"invalid-request", "Invalid request", http.StatusBadRequest}
	ptMalformedJSON    = problemType{"malformed-json", "Malformed JSON", http.StatusBadRequest}
	ptWrongType        = problemType{"wrong-type", "Wrong JSON type", http.StatusBadRequest}
	ptUnauthorized     = problemType{"unauthorized", "Unauthorized", http.StatusUnauthorized}
	ptForbidden        = problemType{"forbidden", "Forbidden", http.StatusForbidden}
	ptNotFound         = problemType{"not-found", "Not found", http.StatusNotFound}
	ptNoRoute          = problemType{"no-route", "No such route", http.StatusNotFound}
	ptMethodNotAllowed = problemType{"method-not-allowed", "Method not allowed", http.StatusMethodNotAllowed}
	ptConflict         = problemType{"conflict", "Conflict", http.StatusConflict}
	ptBodyTooLarge     = problemType{"body-too-large", "Request body too large", http.StatusRequestEntityTooLarge}
	ptMediaType        = problemType{"unsupported-media-type", "Unsupported media type", http.StatusUnsupportedMediaType}
	ptRateLimited      = problemType{"rate-limited", "Too many requests", http.StatusTooManyRequests}
	ptInternal         = problemType{"internal", "Internal server error", http.StatusInternalServerError}
	ptUnavailable      = problemType{"unavailable", "Service unavailable", http.StatusServiceUnavailable}
	// Answered by net/http itself, rewritten by Listener.
	ptHeadersTooLarge     = problemType{"headers-too-large", "Request header fields too large", http.StatusRequestHeaderFieldsTooLarge}
	ptNotImplemented      = problemType{"not-implemented", "Not implemented", http.StatusNotImplemented}
	ptVersionNotSupported = problemType{"http-version-not-supported", "HTTP version not supported", http.StatusHTTPVersionNotSupported}
	ptExpectationFailed   = problemType{"expectation-failed", "Expectation failed", http.StatusExpectationFailed}
)

// problemTypes lists every problem this server can send.
var problemTypes = []problemType{
	ptInvalid, ptMalformedJSON, ptWrongType, ptUnauthorized, ptForbidden, ptNotFound, ptNoRoute,
	ptMethodNotAllowed, ptConflict, ptBodyTooLarge, ptMediaType, ptRateLimited, ptInternal, ptUnavailable,
	ptHeadersTooLarge, ptNotImplemented, ptVersionNotSupported, ptExpectationFailed,
}

// httpError is an error the HTTP layer itself raises (as opposed to one a
// use case returns): it already knows its problem type.
type httpError struct {
	pt     problemType
	detail string
	cause  error // what a %w in errorf's format wrapped, for errkind.Code
}

func (e *httpError) Error() string { return e.detail }
func (e *httpError) Unwrap() error { return e.cause }

func errorf(pt problemType, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &httpError{pt, err.Error(), errors.Unwrap(err)}
}

// problemFor is the one place an error becomes a problem. Use-case errors are
// classified by errkind, except that a batch of events that is malformed
// JSON or too large (service.InputError) gets the problem a malformed or
// oversized body gets. The detail is the public detail an error carries
// (errkind.WithPublic), else, for the kinds whose messages the use cases
// promise are fit for the caller and name the offending field (invalid,
// conflict, unauthorized, forbidden), the message itself. Everything else
// gets a fixed detail that reveals nothing about the back end: no host,
// user, database, layer or SQLSTATE. When the caller does not see the
// error's message, logged is true and level says how loudly to log it.
func problemFor(err error) (p Problem, level slog.Level, logged bool) {
	pt, detail, level, logged := classify(err)
	p = Problem{
		Type:   ProblemBase + pt.slug,
		Title:  pt.title,
		Status: pt.status,
		Detail: detail,
	}
	if pt != ptInternal {
		p.Code = errkind.Code(err)
	}
	return p, level, logged
}

// Fixed details for errors whose messages stay in the log.
const (
	detailInternal    = "the server failed to handle the request; quote the request id when reporting it"
	detailUnavailable = "the service cannot reach its database or it is not ready; retry later, and quote the request id if it persists"
	detailNotFound    = "not found"
)

func classify(err error) (pt problemType, detail string, level slog.Level, logged bool) {
	var he *httpError
	var mb *http.MaxBytesError
	var ie *service.InputError
	var busy *busyError
	switch {
	case errors.As(err, &he):
		return he.pt, he.detail, 0, false
	case errors.As(err, &busy):
		return ptUnavailable, busy.Error(), 0, false
	case errors.As(err, &mb):
		return ptBodyTooLarge, "request body exceeds " + strconv.FormatInt(mb.Limit, 10) + " bytes", 0, false
	case errors.As(err, &ie) && ie.Problem == service.InputMalformed:
		return ptMalformedJSON, ie.Detail, 0, false
	case errors.As(err, &ie) && ie.Problem == service.InputTooLarge:
		return ptBodyTooLarge, ie.Detail, 0, false
	}
	row := kindProblems[errkind.Of(err)]
	public, hasPublic := errkind.PublicDetail(err)
	hasPublic = hasPublic && !row.internal
	switch {
	case row.fixed == "" && hasPublic:
		return row.pt, public, slog.LevelDebug, public != err.Error()
	case row.fixed == "":
		return row.pt, err.Error(), 0, false
	case hasPublic:
		return row.pt, public, row.level, true
	}
	return row.pt, row.fixed, row.level, true
}

// kindProblems is the problem of a use case's error of each kind. A kind
// without a fixed detail shows the error's message; the others show fixed
// and log the message at level. A public detail (errkind.WithPublic)
// replaces either, except for an internal error.
var kindProblems = [...]struct {
	pt       problemType
	fixed    string
	level    slog.Level
	internal bool
}{
	errkind.Invalid:      {pt: ptInvalid},
	errkind.Conflict:     {pt: ptConflict},
	errkind.Unauthorized: {pt: ptUnauthorized},
	errkind.Forbidden:    {pt: ptForbidden},
	errkind.NotFound:     {pt: ptNotFound, fixed: detailNotFound, level: slog.LevelDebug},
	errkind.Unavailable:  {pt: ptUnavailable, fixed: detailUnavailable, level: slog.LevelWarn},
	errkind.Unknown:      {pt: ptInternal, fixed: detailInternal, level: slog.LevelError, internal: true},
}

// writeProblem sends p as application/problem+json.
func writeProblem(w http.ResponseWriter, r *http.Request, p Problem) {
	p.Instance = r.URL.Path
	p.RequestID = requestIDFrom(r.Context())
	b := marshal(p)
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("Cache-Control", "no-store")
	h.Del("ETag")
	w.WriteHeader(p.Status)
	w.Write(b)
}

// ProblemFor is the problem an error of a use case becomes, by the one
// table of this file: what other edges that answer strangers (the MCP
// tools) report, with the same type, status and code as the HTTP API.
// Instance and RequestID are left empty. When the caller does not see the
// error's message, logged is true and level says how loudly to log it.
func ProblemFor(err error) (p api.Problem, level slog.Level, logged bool) { return problemFor(err) }
