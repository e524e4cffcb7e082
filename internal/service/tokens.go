package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// TokenPrefix starts every operator token this package mints, so a leaked
// token is recognisable to secret scanners.
const TokenPrefix = "sst_"

// MinAdminTokenLen is the shortest SWARMSCORE_ADMIN_TOKEN accepted: a
// bearer token is a password that never expires, so it must not be
// guessable.
const MinAdminTokenLen = 32

// AdminOperator is the operator the SWARMSCORE_ADMIN_TOKEN token acts as.
const AdminOperator = "admin"

// envTokenPrefix starts the id of the token bootstrapped from the
// environment; the rest is derived from its hash, so changing the variable
// makes a new token (and Bootstrap revokes the old one).
const envTokenPrefix = "env-"

// Tokens manages operator API tokens. Only a token's SHA-256 is stored: the
// token is shown once, at creation, and never logged.
type Tokens struct {
	Store Backend
	Now   func() time.Time
}

// NewToken is a created token. Secret is the bearer token; it cannot be
// recovered later.
type NewToken struct {
	ID       string
	Operator string
	Secret   string
}

// Create mints a token for operator (registering the operator). Errors:
// ErrInvalid for an invalid operator name, ErrUnavailable.
func (t *Tokens) Create(ctx context.Context, operator string) (NewToken, error) {
	if err := ledger.CheckID("operator", operator); err != nil {
		return NewToken{}, err
	}
	var secret, id [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return NewToken{}, err
	}
	if _, err := rand.Read(id[:6]); err != nil {
		return NewToken{}, err
	}
	nt := NewToken{
		ID:       "tok-" + hex.EncodeToString(id[:6]),
		Operator: operator,
		Secret:   TokenPrefix + base64.RawURLEncoding.EncodeToString(secret[:]),
	}
	err := t.Store.CreateToken(ctx, auth.Token{
		ID: nt.ID, Operator: operator, SHA256: sha256.Sum256([]byte(nt.Secret)), CreatedAt: t.now(),
	})
	if err != nil {
		return NewToken{}, err
	}
	return nt, nil
}

// Revoke revokes token id (idempotent). Errors: ErrNotFound for an unknown
// id, ErrUnavailable.
func (t *Tokens) Revoke(ctx context.Context, id string) error {
	return t.Store.RevokeToken(ctx, id, t.now())
}

// List returns every token, without secrets or hashes.
func (t *Tokens) List(ctx context.Context) ([]auth.Token, error) {
	toks, err := t.Store.ListTokens(ctx)
	for i := range toks {
		toks[i].SHA256 = [32]byte{}
	}
	return toks, err
}

// Authenticate returns the operator owning token. The store is searched by
// the token's SHA-256, so the secret itself is never compared, stored or
// sent to the database. Errors: ErrUnauthorized for an unknown or revoked
// token, ErrUnavailable.
func (t *Tokens) Authenticate(ctx context.Context, token string) (string, error) {
	if token == "" {
		return "", fmt.Errorf("%w: empty token", errkind.ErrUnauthorized)
	}
	return t.Store.Authenticate(ctx, sha256.Sum256([]byte(token)))
}

// Bootstrap makes secret (SWARMSCORE_ADMIN_TOKEN) a valid token of the
// AdminOperator, and revokes any earlier bootstrapped token whose secret was
// different, so rotating the variable retires the old token. It is
// idempotent. Errors: ErrInvalid for a secret shorter than MinAdminTokenLen
// or one that was revoked (messages never contain the secret),
// ErrUnavailable.
func (t *Tokens) Bootstrap(ctx context.Context, secret string) (id string, err error) {
	if len(secret) < MinAdminTokenLen {
		return "", fmt.Errorf("%w: SWARMSCORE_ADMIN_TOKEN is %d characters; at least %d are required (generate one with `swarmscore keygen`)",
			errkind.ErrInvalid, len(secret), MinAdminTokenLen)
	}
	if strings.TrimSpace(secret) != secret {
		return "", fmt.Errorf("%w: SWARMSCORE_ADMIN_TOKEN has leading or trailing white space", errkind.ErrInvalid)
	}
	sum := sha256.Sum256([]byte(secret))
	// The id is derived from the hash of the hash, so it reveals nothing
	// that could help guess the token.
	idSum := sha256.Sum256(sum[:])
	id = envTokenPrefix + hex.EncodeToString(idSum[:6])
	now := t.now()
	if err := t.Store.CreateToken(ctx, auth.Token{ID: id, Operator: AdminOperator, SHA256: sum, CreatedAt: now}); err != nil {
		return "", err
	}
	toks, err := t.Store.ListTokens(ctx)
	if err != nil {
		return "", err
	}
	for _, tok := range toks {
		if tok.ID == id && !tok.RevokedAt.IsZero() {
			return "", fmt.Errorf("%w: the token in SWARMSCORE_ADMIN_TOKEN was revoked at %s; set a new one",
				errkind.ErrInvalid, tok.RevokedAt.UTC().Format(time.RFC3339))
		}
	}
	for _, tok := range toks {
		if strings.HasPrefix(tok.ID, envTokenPrefix) && tok.ID != id && tok.RevokedAt.IsZero() {
			if err := t.Store.RevokeToken(ctx, tok.ID, now); err != nil {
				return "", err
			}
		}
	}
	return id, nil
}

func (t *Tokens) now() time.Time {
	if t.Now != nil {
		return t.Now().UTC()
	}
	return time.Now().UTC()
}
