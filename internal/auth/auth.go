// Package auth is the vocabulary of API authentication: operator tokens,
// minted here and stored only as the SHA-256 of their secret. It does no
// I/O: the service stores and looks up what it mints.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"time"
)

// Token is an API token record. SHA256 is the hash of the secret token;
// the token itself is never stored.
type Token struct {
	ID string
	// Operator is the operator the token acts for or, for an agent's
	// token, the operator that granted it.
	Operator string
	// AgentID scopes the token to one agent: it may read that agent's own
	// data and act on its consent, visibility and appeals, and nothing
	// else. "" for an operator's token.
	AgentID string
	// Role is what an operator's token may do; an agent's token has none.
	Role      Role
	SHA256    [32]byte
	CreatedAt time.Time
	RevokedAt time.Time // zero while active
}

// Revoked reports whether the token was revoked.
func (t Token) Revoked() bool { return !t.RevokedAt.IsZero() }

// SecretPrefix starts every secret Mint returns, so that a leaked token is
// recognisable to secret scanners.
const SecretPrefix = "sst_"

// Sum is what a token is stored and looked up by: the SHA-256 of its
// secret. The secret itself is never compared, stored or sent to a
// database.
func Sum(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// Mint makes a new token for operator created at: a record (an id
// "tok-" and 12 hex digits, and Sum of the secret) and its secret,
// SecretPrefix followed by 256 random bits in unpadded base64url. The
// secret is returned once and cannot be recovered from the record. The
// only error is the system's random source failing.
func Mint(operator string, at time.Time) (Token, string, error) {
	var secret [32]byte
	var id [6]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return Token{}, "", err
	}
	if _, err := rand.Read(id[:]); err != nil {
		return Token{}, "", err
	}
	s := SecretPrefix + base64.RawURLEncoding.EncodeToString(secret[:])
	return Token{ID: "tok-" + hex.EncodeToString(id[:]), Operator: operator, SHA256: Sum(s), CreatedAt: at}, s, nil
}
