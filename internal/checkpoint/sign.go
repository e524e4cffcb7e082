package checkpoint

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Signer signs checkpoints: the keyring's active key, or one of the keys
// below. KeyID and Alg are written into the document before it is signed,
// so that the signature covers them.
type Signer interface {
	// KeyID is the key's id, in the ledger's id alphabet.
	KeyID() string
	// Alg is HS256 or EdDSA.
	Alg() string
	// Sign returns the raw signature over message: 32 bytes for HS256,
	// 64 for EdDSA.
	Sign(message []byte) ([]byte, error)
}

// Verifier checks checkpoint signatures: the keyring, or one of the keys
// below. Verify returns nil only when signature is the raw signature over
// message of the key named kid, and that key's algorithm is alg. A negative
// answer should match ErrSignature; a failure to answer (a keyring that
// cannot be read) is any other error.
type Verifier interface {
	Verify(kid, alg string, message, signature []byte) error
}

// MinHMACKeySize is the shortest HMAC secret accepted, as for passports
// (§8.1: "a shared secret (32+ bytes)").
const MinHMACKeySize = 32

// HMACKey is an HS256 (HMAC-SHA256) key, both Signer and Verifier. Anyone
// who can verify with it can also sign: an HS256 checkpoint proves nothing
// to a party that does not trust every holder of the secret, so external
// notarisation wants EdDSA. It never prints its secret, in any fmt verb.
type HMACKey struct {
	kid    string
	secret []byte
}

// NewHMACKey makes an HS256 key named kid from the literal bytes of secret
// (copied), as passport.NewKey reads a configured secret. A kid outside the
// ledger's id alphabet or a secret shorter than MinHMACKeySize matches
// errkind.ErrInvalid; the error states the length, never the bytes.
func NewHMACKey(kid string, secret []byte) (*HMACKey, error) {
	if err := checkKeyID(kid); err != nil {
		return nil, err
	}
	if len(secret) < MinHMACKeySize {
		return nil, fmt.Errorf("%w: HMAC key %s is %d bytes, need at least %d", errkind.ErrInvalid, kid, len(secret), MinHMACKeySize)
	}
	return &HMACKey{kid: kid, secret: append([]byte(nil), secret...)}, nil
}

// KeyID is the key's id.
func (k *HMACKey) KeyID() string { return k.kid }

// Alg is HS256.
func (k *HMACKey) Alg() string { return HS256 }

// Sign returns HMAC-SHA256(secret, message). It never fails.
func (k *HMACKey) Sign(message []byte) ([]byte, error) {
	m := hmac.New(sha256.New, k.secret)
	m.Write(message)
	return m.Sum(nil), nil
}

// Verify checks an HS256 signature in constant time. A kid or alg other
// than the key's, or a signature that is not its HMAC of message, matches
// ErrSignature.
func (k *HMACKey) Verify(kid, alg string, message, signature []byte) error {
	if err := checkVerifier(k.kid, HS256, kid, alg); err != nil {
		return err
	}
	want, _ := k.Sign(message)
	if !hmac.Equal(want, signature) {
		return fmt.Errorf("%w: not the HMAC of key %s (the document was altered or signed with another key)", ErrSignature, k.kid)
	}
	return nil
}

// Format prints the algorithm and key id, for every verb and for the key or
// a pointer to it: fmt prints unexported fields, the secret among them.
func (k HMACKey) Format(f fmt.State, _ rune) { _, _ = fmt.Fprintf(f, "HS256 key %s", k.kid) }

// Ed25519Signer is an EdDSA (Ed25519) signing key. It never prints its
// private key, in any fmt verb.
type Ed25519Signer struct {
	kid  string
	priv ed25519.PrivateKey
}

// NewEd25519Signer makes an EdDSA signer named kid from priv (copied; the
// keyring stores the seed: ed25519.NewKeyFromSeed). A kid outside the
// ledger's id alphabet or a private key that is not ed25519.PrivateKeySize
// bytes matches errkind.ErrInvalid.
func NewEd25519Signer(kid string, priv ed25519.PrivateKey) (*Ed25519Signer, error) {
	if err := checkKeyID(kid); err != nil {
		return nil, err
	}
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: Ed25519 private key %s is %d bytes, want %d", errkind.ErrInvalid, kid, len(priv), ed25519.PrivateKeySize)
	}
	return &Ed25519Signer{kid: kid, priv: append(ed25519.PrivateKey(nil), priv...)}, nil
}

// KeyID is the key's id.
func (s *Ed25519Signer) KeyID() string { return s.kid }

// Alg is EdDSA.
func (s *Ed25519Signer) Alg() string { return EdDSA }

// Sign returns the Ed25519 signature of message. It never fails.
func (s *Ed25519Signer) Sign(message []byte) ([]byte, error) {
	return ed25519.Sign(s.priv, message), nil
}

// Verifier returns the verifier of the key's public half.
func (s *Ed25519Signer) Verifier() *Ed25519Verifier {
	return &Ed25519Verifier{kid: s.kid, pub: s.priv.Public().(ed25519.PublicKey)}
}

// Format prints the algorithm and key id, for every verb and for the key or
// a pointer to it.
func (s Ed25519Signer) Format(f fmt.State, _ rune) { _, _ = fmt.Fprintf(f, "EdDSA key %s", s.kid) }

// Ed25519Verifier verifies EdDSA signatures with one public key.
type Ed25519Verifier struct {
	kid string
	pub ed25519.PublicKey
}

// NewEd25519Verifier makes a verifier for the public key pub (copied) named
// kid. A kid outside the ledger's id alphabet or a key that is not
// ed25519.PublicKeySize bytes matches errkind.ErrInvalid.
func NewEd25519Verifier(kid string, pub ed25519.PublicKey) (*Ed25519Verifier, error) {
	if err := checkKeyID(kid); err != nil {
		return nil, err
	}
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: Ed25519 public key %s is %d bytes, want %d", errkind.ErrInvalid, kid, len(pub), ed25519.PublicKeySize)
	}
	return &Ed25519Verifier{kid: kid, pub: append(ed25519.PublicKey(nil), pub...)}, nil
}

// Verify checks an Ed25519 signature. A kid or alg other than the key's, or
// a signature that does not verify, matches ErrSignature.
func (v *Ed25519Verifier) Verify(kid, alg string, message, signature []byte) error {
	if err := checkVerifier(v.kid, EdDSA, kid, alg); err != nil {
		return err
	}
	if !ed25519.Verify(v.pub, message, signature) {
		return fmt.Errorf("%w: not a signature of key %s (the document was altered or signed with another key)", ErrSignature, v.kid)
	}
	return nil
}

func checkKeyID(kid string) error {
	if !ledger.ValidID(kid) {
		return fmt.Errorf("%w: key id %s must be 1 to 128 characters from [A-Za-z0-9._:-]", errkind.ErrInvalid, quote(kid))
	}
	return nil
}

// checkVerifier refuses a document naming another key, or this key with
// another algorithm: the algorithm is taken from the key, never from the
// document.
func checkVerifier(haveKid, haveAlg, kid, alg string) error {
	switch {
	case kid != haveKid:
		return fmt.Errorf("%w: signed with key %s, not with key %s", ErrSignature, quote(kid), haveKid)
	case alg != haveAlg:
		return fmt.Errorf("%w: key %s is %s, the document says %s", ErrSignature, haveKid, haveAlg, quote(alg))
	}
	return nil
}
