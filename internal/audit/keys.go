package audit

import (
	"fmt"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/passport"
)

// Keys are what Verify checks signatures with: nothing but these and the
// bundle.
type Keys struct {
	// Passport is the keyring passport.Verify checks the passport with.
	Passport []passport.Key
	// Checkpoint checks the checkpoint's signature; nil when no key was
	// given, and then a bundle with a checkpoint does not verify.
	Checkpoint checkpoint.Verifier
	// history holds the Ed25519 keys of the key set by id, with their
	// status and, from a key history, the interval they signed in.
	history map[string]passport.Key
}

// MaxKeySetSize bounds the key set NewKeys reads.
const MaxKeySetSize = passport.MaxKeySetSize

// NewKeys builds Keys from an HMAC secret and a key set, either of which
// may be nil. The secret (SWARMSCORE_SIGNING_KEY's literal bytes, at least
// 32) verifies HMAC passports and HS256 checkpoints, whatever key id the
// checkpoint names: an HMAC secret is its own authority. The key set is a
// JWK set (RFC 7517), or a key history (passport.KeyHistory), whose
// Ed25519 public keys (kty OKP, crv Ed25519, RFC 8037) verify EdDSA
// checkpoints and passports by key id; keys of other types are ignored, as
// RFC 7517 §5 asks, so a set published for other uses can be given as it
// is, and the secret checks HMAC passports naming the id a server gives
// it. A key history's keys verify what is dated within the interval they
// signed in (SignedAt), a revoked key nothing. Errors match
// errkind.ErrInvalid: a short secret, and every error of
// passport.ParseJWKSet (a set that is not JSON or over MaxKeySetSize, an
// Ed25519 key with a private part, without a valid kid, with a kid given
// twice, with an x that is not 32 bytes of unpadded base64url, with an
// interval that does not fit its status). Messages never hold key
// material.
func NewKeys(secret, keySet []byte) (Keys, error) {
	var k Keys
	v := &verifier{ed: map[string]*checkpoint.Ed25519Verifier{}}
	if secret != nil {
		pk, err := passport.NewKey(secret)
		if err != nil {
			return Keys{}, fmt.Errorf("%w: the HMAC key is %d bytes; at least %d are required", errkind.ErrInvalid, len(secret), passport.MinKeySize)
		}
		// The id a server gives this secret (keyring.KeyID), so that a
		// passport naming it is checked with it.
		if pk, err = pk.WithID(keyring.KeyID(keyring.HS256, secret)); err != nil {
			return Keys{}, err
		}
		k.Passport = []passport.Key{pk}
		v.secret = append([]byte(nil), secret...)
	}
	if keySet != nil {
		pks, err := passport.ParseJWKSet(keySet)
		if err != nil {
			return Keys{}, fmt.Errorf("%w: the key set: %s", errkind.ErrInvalid, strings.TrimPrefix(err.Error(), passport.ErrInvalid.Error()+": "))
		}
		k.history = map[string]passport.Key{}
		for _, pk := range pks {
			ev, err := checkpoint.NewEd25519Verifier(pk.ID(), pk.Public())
			if err != nil {
				return Keys{}, err
			}
			v.ed[pk.ID()] = ev
			k.history[pk.ID()] = pk
		}
		// The set's Ed25519 keys check EdDSA passports too.
		k.Passport = append(k.Passport, pks...)
	}
	if v.secret != nil || len(v.ed) > 0 {
		k.Checkpoint = v
	}
	return k, nil
}

// SignedAt says whether the key kid of algorithm alg, whose signature on
// something dated at (a checkpoint's time) verified, is accepted for it:
// an HMAC secret and a key of a plain JWK set always are; a key of a key
// history when at lies in the interval it signed in
// (passport.SigningInterval.Contains); a revoked key never, whatever the
// date, since whoever holds a compromised key can sign any date. A refusal
// matches checkpoint.ErrSignature.
func (k Keys) SignedAt(kid, alg string, at time.Time) error {
	pk, ok := k.history[kid]
	if alg != checkpoint.EdDSA || !ok {
		return nil
	}
	iv, bounded := pk.Interval()
	switch {
	case pk.Status() == passport.KeyRevoked && !iv.RevokedAt.IsZero():
		return fmt.Errorf("%w: key %s was revoked (compromised) at %s: nothing it signed is accepted, whatever its date", checkpoint.ErrSignature, kid, iv.RevokedAt.UTC().Format(time.RFC3339))
	case pk.Status() == passport.KeyRevoked:
		return fmt.Errorf("%w: key %s is revoked (compromised): nothing it signed is accepted", checkpoint.ErrSignature, kid)
	case bounded && !iv.Contains(at):
		until := "on"
		if !iv.Until.IsZero() {
			until = "until " + iv.Until.UTC().Format(time.RFC3339)
		}
		return fmt.Errorf("%w: dated %s, but key %s signed from %s %s (give or take %s): it was not active then",
			checkpoint.ErrSignature, at.UTC().Format(time.RFC3339), kid, iv.From.UTC().Format(time.RFC3339), until, passport.MaxClockSkew)
	}
	return nil
}

// verifier checks checkpoint signatures with an HMAC secret and Ed25519
// public keys by id.
type verifier struct {
	secret []byte
	ed     map[string]*checkpoint.Ed25519Verifier
}

// Verify implements checkpoint.Verifier. The algorithm picks the key type
// and the key id the key, so a document naming an Ed25519 key id with
// HS256 is checked as HMAC, which the public key cannot forge.
func (v *verifier) Verify(kid, alg string, message, signature []byte) error {
	switch alg {
	case checkpoint.HS256:
		if v.secret == nil {
			return fmt.Errorf("%w: HS256 key %s: no HMAC key was given", checkpoint.ErrSignature, kid)
		}
		hk, err := checkpoint.NewHMACKey(kid, v.secret)
		if err != nil {
			return fmt.Errorf("%w: %v", checkpoint.ErrSignature, err)
		}
		return hk.Verify(kid, alg, message, signature)
	case checkpoint.EdDSA:
		ev, ok := v.ed[kid]
		if !ok {
			return fmt.Errorf("%w: EdDSA key %s is not in the key set given", checkpoint.ErrSignature, kid)
		}
		return ev.Verify(kid, alg, message, signature)
	}
	return fmt.Errorf("%w: algorithm %q", checkpoint.ErrSignature, clip(alg))
}

// Format prints no key material, for every verb.
func (v verifier) Format(f fmt.State, _ rune) {
	_, _ = fmt.Fprintf(f, "audit keys (HMAC %v, %d Ed25519)", v.secret != nil, len(v.ed))
}
