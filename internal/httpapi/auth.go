package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// maxTokenLen bounds what is hashed and looked up; real tokens are far
// shorter.
const maxTokenLen = 256

// authenticate resolves the request's bearer token to an operator. The
// token is never logged nor echoed: details say what is wrong with the
// header, not what it held. The lookup is throttled (lookup).
func (s *Server) authenticate(r *http.Request) (string, error) {
	token, err := bearerToken(r, "<operator token>")
	if err != nil {
		return "", err
	}
	var op string
	err = s.lookup(r, true, func(ctx context.Context) (err error) {
		op, err = s.svc.Tokens.Authenticate(ctx, token)
		return err
	})
	return op, err
}

// lookup runs a bearer token's lookup for r, throttled per client, for the
// operator routes (authenticate) and the routes of agents' own tokens
// (caller) alike, so that no route lets a client guess tokens faster than
// another. Failed lookups are throttled per client (the rate limit's
// client, IPv6 per network): Options.AuthFailures in a burst, then one per
// Options.AuthFailureEvery; past that the client gets 429 with
// Retry-After and no lookup, whatever token it sends. A client with
// recent failures takes one of its allowance before its lookup and gets it
// back if the token is good, so parallel guesses cannot overrun the
// throttle; a client with none looks up freely, so an operator's parallel
// requests are never throttled. With gated, the lookup holds a database
// slot (Options.DBMaxRequests) under Options.DBTimeout; a lookup made by a
// handler, which runs in a slot already or needs none, passes false so as
// not to take a second. ErrUnauthorized from
// find becomes a 401 problem that says nothing of the token; other errors
// are returned as they are.
func (s *Server) lookup(r *http.Request, gated bool, find func(context.Context) error) error {
	client := s.clientIP(r)
	reserved := false
	if !s.authFails.full(client, s.now()) {
		ok, wait := s.authFails.allow(client, s.now())
		if !ok {
			s.authThrottled.Add(1)
			secs := seconds(wait)
			return &retryAfterError{errorf(ptRateLimited, "too many failed authentications from this client; retry after %d s", secs), secs}
		}
		reserved = true
	}
	ctx, done := r.Context(), func() {}
	if gated {
		var err error
		if ctx, done, err = s.gate.enter(ctx); err != nil {
			if reserved {
				s.authFails.refund(client, s.now())
			}
			return err
		}
	}
	err := find(ctx)
	done()
	switch {
	case err == nil:
		if reserved {
			s.authFails.refund(client, s.now())
		}
		return nil
	case errors.Is(err, errkind.ErrUnauthorized):
		if !reserved {
			s.authFails.allow(client, s.now())
		}
		return &httpError{pt: ptUnauthorized, detail: "the bearer token is not valid (unknown or revoked)"}
	}
	if reserved {
		s.authFails.refund(client, s.now())
	}
	return err
}

// operatorFrom is the authenticated operator of an operator route.
func operatorFrom(r *http.Request) string {
	op, _ := r.Context().Value(operatorKey).(string)
	return op
}

// bearerToken reads the Authorization header's bearer token; a missing
// header is 401 with a detail asking for one (hint says which), and so is
// a malformed one. The token is never part of a detail.
func bearerToken(r *http.Request, hint string) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", errorf(ptUnauthorized, "the Authorization header is missing; send Authorization: Bearer %s", hint)
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", errorf(ptUnauthorized, "the Authorization header must use the Bearer scheme")
	}
	token = strings.TrimSpace(token)
	if token == "" || len(token) > maxTokenLen {
		return "", errorf(ptUnauthorized, "the Authorization header's bearer token is empty or too long")
	}
	return token, nil
}
