package service

import "context"

// CredentialStore keeps the index of each W3C Verifiable Credential's
// entry in the Bitstring Status List (credentials.go): one index per
// passport a credential was made of, allocated once and never reused.
type CredentialStore interface {
	// CredentialIndex returns the status index of the credential of the
	// issued passport passportID, allocating the next one (1, 2, …) the
	// first time; the same passport always gets the same index, from any
	// process. Errors: ErrNotFound for a passport never issued here,
	// ErrUnavailable.
	CredentialIndex(ctx context.Context, passportID string) (int64, error)
	// RevokedCredentials returns, in increasing order, the indexes in
	// [from, to) whose passport was revoked (its agent erased) or signed
	// by one of revokedKeys, and the highest index allocated so far (0 for
	// none). Errors: ErrUnavailable.
	RevokedCredentials(ctx context.Context, from, to int64, revokedKeys []string) (revoked []int64, highest int64, err error)
}
