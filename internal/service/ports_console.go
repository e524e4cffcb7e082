package service

import (
	"context"
	"crypto/sha256"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/store"
)

// ActionStore is the action log (auth.Action): append-only.
type ActionStore interface {
	// AppendAction appends a and returns its Seq. Errors: ErrInvalid for
	// an entry without a kind, an outcome or an edge; ErrUnavailable.
	AppendAction(ctx context.Context, a auth.Action) (int64, error)
	// Actions returns the entries q selects, newest first, at most
	// q.Limit (MaxActionsPage when 0 or more). Errors: ErrUnavailable.
	Actions(ctx context.Context, q auth.ActionQuery) ([]auth.Action, error)
}

// MaxActionsPage bounds one read of the action log.
const MaxActionsPage = store.MaxActionsPage

// SessionStore holds the console's sessions by the SHA-256 of their
// cookie.
type SessionStore interface {
	// CreateSession stores s, and deletes the sessions last seen before
	// forgetBefore (they ended long ago). Errors: ErrNotFound for an
	// unknown token; ErrConflict for a session id in use;
	// ErrUnavailable.
	CreateSession(ctx context.Context, s auth.Session, forgetBefore time.Time) error
	// Session returns the session with this IDSum, with its token's
	// operator and role and whether the token was revoked. Errors:
	// ErrNotFound; ErrUnavailable.
	Session(ctx context.Context, sum [sha256.Size]byte) (auth.Session, error)
	// TouchSession sets the session's SeenAt to at, if later. Errors:
	// ErrUnavailable.
	TouchSession(ctx context.Context, sum [sha256.Size]byte, at time.Time) error
	// RevokeSession marks the session revoked at at by by (the first
	// time is kept). Errors: ErrNotFound; ErrUnavailable.
	RevokeSession(ctx context.Context, sum [sha256.Size]byte, at time.Time, by string) error
	// Sessions returns the sessions neither revoked nor of a revoked
	// token, seen at or after seenSince and created at or after
	// createdSince, most recently seen first. Errors: ErrUnavailable.
	Sessions(ctx context.Context, seenSince, createdSince time.Time) ([]auth.Session, error)
}
