package audit

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/ledger"
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
}

// MaxKeySetSize bounds the key set NewKeys reads.
const MaxKeySetSize = 64 << 10

// NewKeys builds Keys from an HMAC secret and a key set, either of which
// may be nil. The secret (SWARMSCORE_SIGNING_KEY's literal bytes, at least
// 32) verifies HMAC passports and HS256 checkpoints, whatever key id the
// checkpoint names: an HMAC secret is its own authority. The key set is a
// JWK set (RFC 7517) whose Ed25519 public keys (kty OKP, crv Ed25519, RFC
// 8037) verify EdDSA checkpoints by key id; keys of other types are
// ignored, as RFC 7517 §5 asks, so a set published for other uses can be
// given as it is; its keys also check EdDSA passports by key id, and the
// secret checks HMAC passports naming the id a server gives it. Errors match errkind.ErrInvalid: a short secret, a key
// set that is not JSON or over MaxKeySetSize, an Ed25519 key with a
// private part, without a valid kid, with a kid given twice or with an x
// that is not 32 bytes of unpadded base64url. Messages never hold key
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
		if err := v.addKeySet(keySet); err != nil {
			return Keys{}, err
		}
		// The set's Ed25519 keys check EdDSA passports too.
		pks, err := passport.ParseJWKSet(keySet)
		if err != nil {
			return Keys{}, fmt.Errorf("%w: %v", errkind.ErrInvalid, err)
		}
		k.Passport = append(k.Passport, pks...)
	}
	if v.secret != nil || len(v.ed) > 0 {
		k.Checkpoint = v
	}
	return k, nil
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

func (v *verifier) addKeySet(b []byte) error {
	if len(b) > MaxKeySetSize {
		return fmt.Errorf("%w: the key set is %d bytes, more than %d", errkind.ErrInvalid, len(b), MaxKeySetSize)
	}
	var set struct {
		Keys []map[string]json.RawMessage `json:"keys"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&set); err != nil {
		return fmt.Errorf("%w: the key set is not a JWK set: %v", errkind.ErrInvalid, err)
	}
	if dec.More() || set.Keys == nil {
		return fmt.Errorf("%w: the key set is not a JWK set {\"keys\":[…]}", errkind.ErrInvalid)
	}
	for i, m := range set.Keys {
		str := func(name string) (string, error) {
			raw, ok := m[name]
			if !ok {
				return "", nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", fmt.Errorf("%w: key %d: %s is not a string", errkind.ErrInvalid, i, name)
			}
			return s, nil
		}
		kty, err := str("kty")
		if err != nil {
			return err
		}
		crv, err := str("crv")
		if err != nil {
			return err
		}
		if kty != "OKP" || crv != "Ed25519" {
			continue
		}
		kid, err := str("kid")
		if err != nil {
			return err
		}
		switch _, private := m["d"]; {
		case !ledger.ValidID(kid):
			return fmt.Errorf("%w: key %d: kid %q must be 1 to 128 characters from [A-Za-z0-9._:-]", errkind.ErrInvalid, i, clip(kid))
		case v.ed[kid] != nil:
			return fmt.Errorf("%w: key %s appears twice", errkind.ErrInvalid, kid)
		case private:
			return fmt.Errorf("%w: key %s carries its private part (d); give the public key only", errkind.ErrInvalid, kid)
		}
		x, err := str("x")
		if err != nil {
			return err
		}
		pub, err := base64.RawURLEncoding.Strict().DecodeString(x)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return fmt.Errorf("%w: key %s: x must be the %d-byte public key in unpadded base64url", errkind.ErrInvalid, kid, ed25519.PublicKeySize)
		}
		ev, err := checkpoint.NewEd25519Verifier(kid, pub)
		if err != nil {
			return err
		}
		v.ed[kid] = ev
	}
	return nil
}
