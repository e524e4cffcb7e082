package service

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/passport"
)

// Credentials are the use cases behind the passports served as W3C
// Verifiable Credentials (internal/vc formats and signs them): an agent's
// current certificate with the key that signed it and its status index,
// the Bitstring Status List's revoked entries, and the keys the DID
// document lists. A credential is only ever made of the certificate the
// certificate route serves, so the two never disagree.
type Credentials struct {
	store CredentialStore
	certs *Certificates
	keys  *signing
	clock clock
}

// CodeEd25519Required: a credential (or a status list) was asked of a
// deployment whose active key is an HMAC secret, which no one else can
// verify; its problem is a conflict with the deployment's state.
const CodeEd25519Required = "ed25519_key_required"

// StatusListSize is the number of entries in one Bitstring Status List:
// 131,072, the minimum the W3C Bitstring Status List recommends so that
// an entry says little about which credential it is.
const StatusListSize = 131072

// CredentialSource is what an agent's credential is made of.
type CredentialSource struct {
	Certificate Certificate
	Passport    *passport.Passport
	// Key is the Ed25519 key that signed the passport, with its private
	// half: it signs the credential too.
	Key passport.Key
	// StatusList and StatusIndex place the credential in the status
	// lists: list 1, 2, … and the index within it (0 to StatusListSize-1).
	StatusList, StatusIndex int64
}

// Credential returns what the agent's credential is made of: its
// certificate as c may see it (Certificates.CertificateFor), the key that
// signed it and its status entry, allocated on the passport's first
// credential. Errors: those of CertificateFor; ErrConflict with code
// CodeEd25519Required when the passport was not signed by an Ed25519 key
// (the deployment signs with HMAC); ErrUnavailable.
func (u *Credentials) Credential(ctx context.Context, c Caller, agentID string) (CredentialSource, error) {
	cert, err := u.certs.CertificateFor(ctx, c, agentID)
	if err != nil {
		return CredentialSource{}, err
	}
	p, err := passport.Parse(cert.Passport)
	if err != nil {
		return CredentialSource{}, fmt.Errorf("agent %q's certificate does not parse: %w", agentID, err)
	}
	key, err := u.signer(ctx, p.Issuer.KID)
	if err != nil {
		return CredentialSource{}, err
	}
	n, err := u.store.CredentialIndex(ctx, p.AgentPassportID)
	if err != nil {
		return CredentialSource{}, err
	}
	return CredentialSource{Certificate: cert, Passport: p, Key: key,
		StatusList: (n-1)/StatusListSize + 1, StatusIndex: (n - 1) % StatusListSize}, nil
}

// signer is the Ed25519 key kid of the keyring, with its private half.
func (u *Credentials) signer(ctx context.Context, kid string) (passport.Key, error) {
	ks := u.keys.current(ctx)
	for _, k := range ks.keys {
		if k.ID() == kid && k.Alg() == passport.AlgEdDSA && k.CanSign() {
			return k, nil
		}
	}
	return passport.Key{}, ed25519Required(ks.active.Alg())
}

func ed25519Required(alg string) error {
	return errkind.WithCode(fmt.Errorf("%w: this deployment signs with %s; W3C credentials are signed with its active key, "+
		"which must be Ed25519 (swarmscore key rotate --signing-alg Ed25519, then serve --signing-alg Ed25519)",
		errkind.ErrConflict, alg), CodeEd25519Required)
}

// StatusList is one Bitstring Status List as of Now: the entries revoked
// in it, and the active key that signs the list's credential.
type StatusList struct {
	List    int64
	Revoked []int64 // indexes within the list, increasing
	Key     passport.Key
	Now     time.Time
}

// StatusList returns status list number list (1, 2, …): an entry is
// revoked when its passport was revoked (its agent erased) or its key
// was. List 1 always exists; a later one once a credential was placed in
// it. Errors: ErrInvalid for a list number below 1, ErrNotFound for a list
// not yet begun, ErrConflict (CodeEd25519Required) when the active key is
// not Ed25519, ErrUnavailable.
func (u *Credentials) StatusList(ctx context.Context, list int64) (StatusList, error) {
	if list < 1 || list > 1<<40 {
		return StatusList{}, fmt.Errorf("%w: status list %d: lists are numbered from 1", errkind.ErrInvalid, list)
	}
	ks := u.keys.current(ctx)
	if ks.active.Alg() != passport.AlgEdDSA {
		return StatusList{}, ed25519Required(ks.active.Alg())
	}
	var revokedKeys []string
	for _, r := range ks.records {
		if r.State == keyring.Revoked {
			revokedKeys = append(revokedKeys, r.ID)
		}
	}
	first := (list-1)*StatusListSize + 1
	revoked, highest, err := u.store.RevokedCredentials(ctx, first, first+StatusListSize, revokedKeys)
	if err != nil {
		return StatusList{}, err
	}
	if list > 1 && highest < first {
		return StatusList{}, errkind.WithPublic(fmt.Errorf("%w: status list %d has no entries yet", errkind.ErrNotFound, list),
			fmt.Sprintf("status list %d has no entries yet", list))
	}
	for i := range revoked {
		revoked[i] -= first
	}
	return StatusList{List: list, Revoked: revoked, Key: ks.active, Now: u.clock.now()}, nil
}

// VerificationKey is one Ed25519 key of the deployment, public half only.
type VerificationKey struct {
	ID             string
	Public         ed25519.PublicKey
	State          keyring.State
	CreatedAt      time.Time
	StateChangedAt time.Time
}

// VerificationKeys returns the keys of the key history (Keys.KeyHistory):
// every Ed25519 key that was ever active, in every state, oldest first,
// which the DID document lists (retired and revoked keys included, so that
// what they signed can be told from a forgery; the document says which are
// revoked). HMAC keys have no public half and are never listed. It reloads
// a stale keyring and cannot fail.
func (u *Credentials) VerificationKeys(ctx context.Context) []VerificationKey {
	ks := u.keys.current(ctx)
	var out []VerificationKey
	for _, i := range ks.history() {
		k, r := ks.keys[i], ks.records[i]
		out = append(out, VerificationKey{ID: k.ID(), Public: k.Public(), State: r.State, CreatedAt: r.CreatedAt, StateChangedAt: r.StateChangedAt})
	}
	return out
}
