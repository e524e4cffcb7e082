// Package keyring is the vocabulary of signing keys (spec §8.1): a key's id,
// algorithm, environment, state and age, the rules for moving between
// states, and the sealing of key material at rest under a master key
// (AES-256-GCM). It does no I/O: internal/service keeps the keyring, the
// store keeps sealed records.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// State is where a key is in its life. Exactly one key is Active.
type State string

// The states, in the order a key normally passes through them.
const (
	// Active: the key signs new passports.
	Active State = "active"
	// VerifyOnly: no longer signs; its passports still verify.
	VerifyOnly State = "verify-only"
	// Retired: its passports are no longer accepted (key_retired).
	Retired State = "retired"
	// Revoked: compromised; its passports are refused as such
	// (key_revoked).
	Revoked State = "revoked"
)

// Valid reports whether s is one of the four states.
func (s State) Valid() bool {
	switch s {
	case Active, VerifyOnly, Retired, Revoked:
		return true
	}
	return false
}

// Accepted reports whether passports signed by a key in state s verify.
func (s State) Accepted() bool { return s == Active || s == VerifyOnly }

// CheckMove says whether a key may be moved from one state to another by
// hand (retire, revoke): only forward (verify-only → retired → revoked,
// skipping allowed), so a retired or revoked key never signs or verifies
// again, and never away from Active, which only a rotation replaces (the
// new key becomes active and the old one verify-only in one step), so that
// there is always a key to sign with. Moving to the same state is a no-op.
// Errors match errkind.ErrConflict, or ErrInvalid for an unknown state.
func CheckMove(from, to State) error {
	order := map[State]int{Active: 0, VerifyOnly: 1, Retired: 2, Revoked: 3}
	f, ok1 := order[from]
	t, ok2 := order[to]
	switch {
	case !ok1 || !ok2:
		return fmt.Errorf("%w: key state %q -> %q", errkind.ErrInvalid, from, to)
	case from == to:
		return nil
	case from == Active:
		return fmt.Errorf("%w: the active key cannot become %s; rotate first (swarmscore key rotate), then %s the old key", errkind.ErrConflict, to, verb(to))
	case to == Active || t < f:
		return fmt.Errorf("%w: a %s key cannot become %s again", errkind.ErrConflict, from, to)
	}
	return nil
}

func verb(s State) string {
	switch s {
	case Retired:
		return "retire"
	case Revoked:
		return "revoke"
	}
	return "change"
}

// Record is a signing key as stored. The secret never leaves the service
// unsealed: Sealed is Seal(master, ID, secret).
type Record struct {
	// ID is the key id (kid) passports name.
	ID string
	// Alg is the passport algorithm: "HS256" (HMAC-SHA256) or "EdDSA"
	// (Ed25519).
	Alg string
	// Environment is the deployment the key belongs to (production,
	// staging…); a server refuses keys of another environment.
	Environment string
	State       State
	CreatedAt   time.Time
	// StateChangedAt is when State was last set (CreatedAt for a new key):
	// for a revoked key, when it was revoked.
	StateChangedAt time.Time
	// ActiveFrom and ActiveUntil are the interval the key signed in: from
	// when it became active (its creation: keys are made active) until
	// another key replaced it, zero while it is active. A retirement or
	// revocation does not change them. ActiveFrom is zero only for a key
	// that was never active.
	ActiveFrom, ActiveUntil time.Time
	// Public is the Ed25519 public key; nil for HMAC keys, which are never
	// published.
	Public []byte
	// Sealed is the secret (the HMAC key, or the Ed25519 seed) sealed
	// under the master key.
	Sealed []byte
}

// MasterKeySize is the length of a master key: AES-256.
const MasterKeySize = 32

// ErrSealed is returned when sealed material cannot be opened: the wrong
// master key, or a record altered at rest. It matches errkind.ErrInvalid.
var ErrSealed = fmt.Errorf("%w: a signing key cannot be unsealed (wrong SWARMSCORE_MASTER_KEY, or the record was altered)", errkind.ErrInvalid)

// Seal encrypts secret under master with AES-256-GCM, binding it to the key
// id (the additional data), so that a sealed secret moved to another
// record does not open. The result is the random 12-byte nonce followed by
// the ciphertext and tag.
func Seal(master []byte, id string, secret []byte) ([]byte, error) {
	aead, err := newAEAD(master)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(secret)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, secret, []byte(id)), nil
}

// Open reverses Seal. Errors: ErrSealed for a wrong master key or altered
// material, ErrInvalid for a master key of the wrong size.
func Open(master []byte, id string, sealed []byte) ([]byte, error) {
	aead, err := newAEAD(master)
	if err != nil {
		return nil, err
	}
	if len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrSealed
	}
	out, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(id))
	if err != nil {
		return nil, ErrSealed
	}
	return out, nil
}

func newAEAD(master []byte) (cipher.AEAD, error) {
	if len(master) != MasterKeySize {
		return nil, fmt.Errorf("%w: the master key is %d bytes, want %d", errkind.ErrInvalid, len(master), MasterKeySize)
	}
	block, err := aes.NewCipher(master)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Fingerprint is a short public identifier of key material: the first 8
// bytes of its SHA-256, in hex. It reveals nothing usable about the secret.
func Fingerprint(material []byte) string {
	sum := sha256.Sum256(material)
	return fmt.Sprintf("%x", sum[:8])
}

// KeyID is the id of a key of algorithm alg (HS256, EdDSA) whose material
// is the HMAC secret or the Ed25519 public key: the algorithm in lower case
// and the material's Fingerprint ("hs256-1cb49482a9493dcb"). A key has the
// same id wherever it is configured, and a verifier holding the secret
// finds the id itself. For an HMAC secret the fingerprint tells a guess
// from a wrong one no better than any passport's HMAC does.
func KeyID(alg string, material []byte) string {
	return strings.ToLower(alg) + "-" + Fingerprint(material)
}

var errNoActive = errors.New("no active key")

// ActiveOf returns the active record among recs (errkind.ErrNotFound when
// there is none, ErrConflict when there are several).
func ActiveOf(recs []Record) (Record, error) {
	var found []Record
	for _, r := range recs {
		if r.State == Active {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return Record{}, fmt.Errorf("%w: %w", errkind.ErrNotFound, errNoActive)
	case 1:
		return found[0], nil
	}
	return Record{}, fmt.Errorf("%w: %d keys are active", errkind.ErrConflict, len(found))
}

// The algorithms a key may have, named as in a passport's issuer.alg.
const (
	HS256 = "HS256"
	EdDSA = "EdDSA"
)

// Validate checks a record before it is stored (errkind.ErrInvalid naming
// the field): an id and environment in the ledger's id alphabet, a known
// algorithm and state, a creation time, sealed material, and a 32-byte
// public key exactly for EdDSA keys.
func (r *Record) Validate() error {
	switch {
	case !ledger.ValidID(r.ID):
		return fmt.Errorf("%w: key id %q must be 1 to 128 characters from [A-Za-z0-9._:-]", errkind.ErrInvalid, r.ID)
	case !ledger.ValidID(r.Environment):
		return fmt.Errorf("%w: environment %q must be 1 to 128 characters from [A-Za-z0-9._:-]", errkind.ErrInvalid, r.Environment)
	case r.Alg != HS256 && r.Alg != EdDSA:
		return fmt.Errorf("%w: key algorithm %q is not %s or %s", errkind.ErrInvalid, r.Alg, HS256, EdDSA)
	case !r.State.Valid():
		return fmt.Errorf("%w: key state %q", errkind.ErrInvalid, r.State)
	case r.CreatedAt.IsZero():
		return fmt.Errorf("%w: key %s has no creation time", errkind.ErrInvalid, r.ID)
	case len(r.Sealed) == 0:
		return fmt.Errorf("%w: key %s has no sealed material", errkind.ErrInvalid, r.ID)
	case (r.Alg == EdDSA) != (len(r.Public) == 32):
		return fmt.Errorf("%w: key %s: an %s key has a 32-byte public key exactly when it is EdDSA", errkind.ErrInvalid, r.ID, r.Alg)
	case r.State == Active && !r.ActiveUntil.IsZero():
		return fmt.Errorf("%w: key %s is active and has an end to its active interval", errkind.ErrInvalid, r.ID)
	case !r.ActiveUntil.IsZero() && (r.ActiveFrom.IsZero() || r.ActiveUntil.Before(r.ActiveFrom)):
		return fmt.Errorf("%w: key %s: its active interval ends before it starts", errkind.ErrInvalid, r.ID)
	}
	return nil
}

// RevokedAt is when r was revoked, or the zero time.
func (r *Record) RevokedAt() time.Time {
	if r.State != Revoked {
		return time.Time{}
	}
	return r.StateChangedAt
}
