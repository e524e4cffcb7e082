package httpapi

import (
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
// header, not what it held.
func (s *Server) authenticate(r *http.Request) (string, error) {
	token, err := bearerToken(r, "<operator token>")
	if err != nil {
		return "", err
	}
	op, err := s.svc.Authenticate(r.Context(), token)
	switch {
	case err == nil:
		return op, nil
	case errors.Is(err, errkind.ErrUnauthorized):
		return "", &httpError{ptUnauthorized, "the bearer token is not valid (unknown or revoked)"}
	}
	return "", err
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
