// Package auth is the vocabulary of API authentication: tokens, stored only
// as the SHA-256 of their secret. It does no I/O.
package auth

import "time"

// Token is an API token record. SHA256 is the hash of the secret token;
// the token itself is never stored.
type Token struct {
	ID        string
	Operator  string
	SHA256    [32]byte
	CreatedAt time.Time
	RevokedAt time.Time // zero while active
}
