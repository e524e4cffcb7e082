// Package errkind holds the small set of error kinds every layer reports and
// the two edges (HTTP problems, CLI exit codes) translate, each in one place.
//
// Code wraps a sentinel with %w and a specific message:
//
//	return fmt.Errorf("%w: agent %q", errkind.ErrNotFound, id)
//
// and the edges ask Of(err) which kind it is. A package with a sentinel of
// its own (the public passport.ErrInvalid and score.ErrInvalid) makes it
// with Sentinel, so that it has a kind without errkind knowing the package:
// errkind imports nothing of this module.
package errkind

import (
	"context"
	"errors"
)

// Kind classifies an error for the edges.
type Kind int

// The kinds. Unknown is any error that is none of the others: an internal
// failure whose details belong in the log, not in a response.
const (
	Unknown Kind = iota
	Invalid
	NotFound
	Conflict
	Unauthorized
	Forbidden
	Unavailable
)

// Sentinels to wrap with %w.
var (
	ErrInvalid      = errors.New("invalid")
	ErrNotFound     = errors.New("not found")
	ErrConflict     = errors.New("conflict")
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
	ErrUnavailable  = errors.New("unavailable")
)

// Kinds lists every kind, Unknown first: what each edge's table maps.
func Kinds() []Kind {
	return []Kind{Unknown, Invalid, NotFound, Conflict, Unauthorized, Forbidden, Unavailable}
}

// Sentinel returns a new sentinel error whose message is msg and which
// matches kind, one of the sentinels above, with errors.Is: a package's own
// sentinel with the kind of errkind's, and errors wrapping it with %w are
// of that kind. Two calls return distinct errors.
func Sentinel(kind error, msg string) error { return &sentinel{msg, kind} }

type sentinel struct {
	msg  string
	kind error
}

func (e *sentinel) Error() string { return e.msg }
func (e *sentinel) Unwrap() error { return e.kind }

var sentinels = []struct {
	err  error
	kind Kind
}{
	{ErrInvalid, Invalid},
	{ErrNotFound, NotFound},
	{ErrConflict, Conflict},
	{ErrUnauthorized, Unauthorized},
	{ErrForbidden, Forbidden},
	{ErrUnavailable, Unavailable},
	// A deadline that ran out is the one the server put on its own wait
	// for the database (a pool that cannot hand out a connection in time,
	// a connect or a statement that does not return: the database is
	// unreachable or overloaded), or a client's on its wait for a server:
	// either way the other side did not answer in time, and trying again
	// later may succeed. A cancelled context is not: someone gave up.
	{context.DeadlineExceeded, Unavailable},
}

// Of reports the kind of err: the first sentinel in the chain that it matches,
// Unknown if none (including nil). context.DeadlineExceeded anywhere in the
// chain (a pool acquire, connect or statement that ran past its deadline)
// is Unavailable, unless a sentinel above it in the list says otherwise.
func Of(err error) Kind {
	if err == nil {
		return Unknown
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.kind
		}
	}
	return Unknown
}

// String is the kind's lower-case name, for logs and test messages. The
// edges do not use it: HTTP problem types (internal/httpapi) and exit
// statuses (internal/cli) are each mapped from the kinds in one place of
// their own.
func (k Kind) String() string {
	switch k {
	case Invalid:
		return "invalid"
	case NotFound:
		return "not-found"
	case Conflict:
		return "conflict"
	case Unauthorized:
		return "unauthorized"
	case Forbidden:
		return "forbidden"
	case Unavailable:
		return "unavailable"
	}
	return "internal"
}

// publicError gives an error a message fit for anyone, for edges that
// answer strangers (HTTP): layer prefixes and names of internal parts stay
// in the log.
type publicError struct {
	err    error
	detail string
}

func (e *publicError) Error() string { return e.err.Error() }
func (e *publicError) Unwrap() error { return e.err }

// WithPublic returns err, unchanged for errors.Is, errors.As, Of and its
// message, carrying detail as the message to show to someone who is not
// the operator (PublicDetail). detail must name nothing internal: no
// layer, table, host, user or database. A nil err stays nil.
func WithPublic(err error, detail string) error {
	if err == nil {
		return nil
	}
	return &publicError{err, detail}
}

// PublicDetail returns the outermost detail given to WithPublic in err's
// chain, and whether there was one.
func PublicDetail(err error) (string, bool) {
	var pe *publicError
	if errors.As(err, &pe) {
		return pe.detail, true
	}
	return "", false
}

// A code is a stable, machine-readable name of one specific error within
// its kind ("invalid_id", "hold_conflict"): the edges publish it beside the
// kind (the "code" member of an HTTP problem, an MCP tool error) so that a
// client can branch on it without parsing the message. Codes are lower-case
// snake_case and, like problem types, never change once published.

// coder is any error in a chain that names its code.
type coder interface{ ErrorCode() string }

type codedError struct {
	err  error
	code string
}

func (e *codedError) Error() string     { return e.err.Error() }
func (e *codedError) Unwrap() error     { return e.err }
func (e *codedError) ErrorCode() string { return e.code }

// WithCode returns err, unchanged for errors.Is, errors.As, Of, its message
// and PublicDetail, carrying code (Code). A nil err stays nil.
func WithCode(err error, code string) error {
	if err == nil {
		return nil
	}
	return &codedError{err, code}
}

// Code returns the outermost non-empty code in err's chain: one given to
// WithCode, or one an error type reports with an ErrorCode() string
// method; "" when there is none.
func Code(err error) string {
	for err != nil {
		if c, ok := err.(coder); ok && c.ErrorCode() != "" {
			return c.ErrorCode()
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if c := Code(e); c != "" {
					return c
				}
			}
			return ""
		default:
			return ""
		}
	}
	return ""
}
