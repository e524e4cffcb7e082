package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
)

// maxTokenLen bounds what is hashed and looked up; real tokens are far
// shorter.
const maxTokenLen = 256

// authenticate resolves the request's bearer token to an operator. The
// token is never logged nor echoed: details say what is wrong with the
// header, not what it held. The lookup is throttled (lookup).
func (s *Server) authenticate(r *http.Request) (service.Caller, error) {
	token, err := bearerToken(r, "<operator token>")
	if err != nil {
		return service.Caller{}, err
	}
	var c service.Caller
	err = s.lookup(r, true, func(ctx context.Context) (err error) {
		c, err = s.svc.Tokens.Authenticate(ctx, token)
		return err
	})
	return c, err
}

// lookup runs a bearer token's lookup for r, for the operator routes
// (authenticate) and the routes of agents' own tokens (caller) alike.
// Every presented token is looked up, so a valid token always gets
// through, whatever else its client sent (docs/ERRATA.md E49). Failed
// lookups are counted per client (the rate limit's client, IPv6 per
// network): Options.AuthFailures in a burst, then one per
// Options.AuthFailureEvery; past that a wrong token is answered 429 with
// Retry-After rather than 401, telling a misconfigured client to stop,
// and counted (swarmscore_auth_throttled_total). With gated, the lookup
// holds a database slot (Options.DBMaxRequests) under Options.DBTimeout;
// a lookup made by a handler, which runs in a slot already or needs none,
// passes false so as not to take a second. ErrUnauthorized from find
// becomes a 401 problem that says nothing of the token; other errors are
// returned as they are.
func (s *Server) lookup(r *http.Request, gated bool, find func(context.Context) error) error {
	ctx, done := r.Context(), func() {}
	if gated {
		var err error
		if ctx, done, err = s.gate.enter(ctx); err != nil {
			return err
		}
	}
	err := find(ctx)
	done()
	if !errors.Is(err, errkind.ErrUnauthorized) {
		return err
	}
	if ok, wait := s.authFails.allow(s.clientIP(r), s.now()); !ok {
		s.authThrottled.Add(1)
		secs := seconds(wait)
		return &retryAfterError{errorf(ptRateLimited, "too many failed authentications from this client; retry after %d s", secs), secs}
	}
	return &httpError{pt: ptUnauthorized, detail: "the bearer token is not valid (unknown or revoked)"}
}

// asOperator is r for operator c: its caller and operator in the context,
// and the actor under which the use cases record what it does.
func (s *Server) asOperator(r *http.Request, c service.Caller) *http.Request {
	ctx := context.WithValue(r.Context(), operatorKey, c.Operator)
	ctx = withCaller(ctx, c)
	return r.WithContext(service.WithActor(ctx, service.ActorOf(c, auth.ViaAPI, s.clientIP(r))))
}

// allowRole refuses, as 403 with the code forbidden_role, an operator
// whose role may not do perm (auth.Allow, the rule the console applies
// too), and records the refusal in the action log.
func (s *Server) allowRole(r *http.Request, c service.Caller, pattern string, perm auth.Permission) error {
	err := auth.Allow(c.Role, perm)
	if err != nil && s.svc.Console != nil {
		s.svc.Console.RecordDenied(r.Context(), pattern, err)
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
