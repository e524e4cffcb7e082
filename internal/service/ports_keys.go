package service

import (
	"context"
	"time"

	"github.com/swarmscore/swarmscore/internal/keyring"
)

// KeyStore keeps the deployment's signing keys, their secrets sealed
// (keyring.Record), so that every process sharing the database sees a
// rotation at once.
type KeyStore interface {
	// Keys returns every key, oldest first.
	Keys(ctx context.Context) ([]keyring.Record, error)
	// AddKey stores a new key. When it is active, the key active so far
	// (if any) becomes verify-only as of its CreatedAt in the same
	// transaction, so exactly one key is ever active. An id already used
	// is ErrConflict; an invalid record (id, state, algorithm) ErrInvalid.
	AddKey(ctx context.Context, r keyring.Record) error
	// SetKeyState moves a key by hand as of at, within keyring.CheckMove's
	// rules (ErrConflict otherwise). An unknown id is ErrNotFound.
	SetKeyState(ctx context.Context, id string, to keyring.State, at time.Time) error
}
