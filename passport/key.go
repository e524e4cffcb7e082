package passport

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"hash"
	"log/slog"
	"sync"
	"time"
)

// MinKeySize is the shortest signing key accepted, in bytes (§8.1: "a shared
// secret (32+ bytes)").
const MinKeySize = 32

// The algorithms a key signs with, as issuer.alg names them (the JOSE
// names of RFC 7518 and RFC 8037).
const (
	// AlgHS256 is HMAC-SHA256 (§6.2): a shared secret signs and verifies.
	AlgHS256 = "HS256"
	// AlgEdDSA is Ed25519 (RFC 8032): a private key signs, its public key
	// verifies, so verifiers need no secret.
	AlgEdDSA = "EdDSA"
)

// KeyStatus says whether passports signed by a key are accepted. The zero
// value is KeyAccepted.
type KeyStatus uint8

const (
	// KeyAccepted: passports it signed verify (an active or verify-only
	// key).
	KeyAccepted KeyStatus = iota
	// KeyRetired: its passports are refused with CodeKeyRetired. A retired
	// key is kept so that its passports are told apart from forgeries.
	KeyRetired
	// KeyRevoked: the key is compromised; its passports are refused with
	// CodeKeyRevoked.
	KeyRevoked
)

// redacted is what a Key prints as in every format, so that a key reaching a
// log line, an error message or a JSON response by accident discloses nothing.
const redacted = "[REDACTED]"

// Key is a signing or verification key: an HMAC-SHA256 secret (NewKey), an
// Ed25519 private key (NewEd25519Key) or an Ed25519 public key, which only
// verifies (NewEd25519PublicKey). It may carry an id (WithID), which Sign
// writes into issuer.kid with issuer.alg, and a status (WithStatus). The
// zero Key is not usable. A Key is safe for concurrent use and cheap to
// copy.
//
// A Key never prints its bytes: fmt (every verb, including %#v), encoding/json,
// encoding (text) and log/slog all render it as "[REDACTED]".
type Key struct {
	k      *keyState
	id     string
	status KeyStatus
	iv     *SigningInterval // WithInterval; nil for a key accepted by its status alone
}

type keyState struct {
	alg    string
	secret []byte // HS256
	// macs holds HMAC states keyed with secret. Keying an HMAC hashes the
	// padded key twice; reusing a Reset state skips that on every use.
	macs sync.Pool
	priv ed25519.PrivateKey // EdDSA, nil for a public key
	pub  ed25519.PublicKey  // EdDSA
}

// NewKey makes an HS256 Key from the literal bytes of the configured secret:
// the string "abc…" is the key b"abc…", exactly what Node's
// crypto.createHmac("sha256", "abc…") or Python's hmac.new(b"abc…") use. No
// hex or base64 decoding happens, so a key configured as 64 hex characters is
// 64 key bytes. b is copied. It fails, matching ErrInvalid, when b is shorter
// than MinKeySize; the error states the length, never the bytes.
func NewKey(b []byte) (Key, error) {
	if len(b) < MinKeySize {
		return Key{}, fmt.Errorf("%w: signing key is %d bytes, need at least %d", ErrInvalid, len(b), MinKeySize)
	}
	s := &keyState{alg: AlgHS256, secret: append([]byte(nil), b...)}
	s.macs.New = func() any { return &macState{h: hmac.New(sha256.New, s.secret)} }
	return Key{k: s}, nil
}

// NewEd25519Key makes an EdDSA Key that signs with priv (copied). It fails,
// matching ErrInvalid, when priv is not ed25519.PrivateKeySize bytes or its
// public half does not match its seed.
func NewEd25519Key(priv ed25519.PrivateKey) (Key, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return Key{}, fmt.Errorf("%w: an Ed25519 private key is %d bytes, got %d", ErrInvalid, ed25519.PrivateKeySize, len(priv))
	}
	p := ed25519.NewKeyFromSeed(priv.Seed())
	if !p.Public().(ed25519.PublicKey).Equal(priv.Public()) {
		return Key{}, fmt.Errorf("%w: the Ed25519 private key's public half does not match its seed", ErrInvalid)
	}
	return Key{k: &keyState{alg: AlgEdDSA, priv: p, pub: p.Public().(ed25519.PublicKey)}}, nil
}

// NewEd25519PublicKey makes an EdDSA Key that verifies passports signed by
// the private half of pub (copied) and signs nothing. It fails, matching
// ErrInvalid, when pub is not ed25519.PublicKeySize bytes.
func NewEd25519PublicKey(pub ed25519.PublicKey) (Key, error) {
	if len(pub) != ed25519.PublicKeySize {
		return Key{}, fmt.Errorf("%w: an Ed25519 public key is %d bytes, got %d", ErrInvalid, ed25519.PublicKeySize, len(pub))
	}
	return Key{k: &keyState{alg: AlgEdDSA, pub: append(ed25519.PublicKey(nil), pub...)}}, nil
}

// WithID returns k naming the key id kid: Sign then writes issuer.kid and
// issuer.alg, and Verify checks a passport naming kid with this key only.
// kid must be 1–128 characters from [A-Za-z0-9._:-] (ErrInvalid).
func (k Key) WithID(kid string) (Key, error) {
	if !validKeyID(kid) {
		return Key{}, fmt.Errorf("%w: key id %q must be 1 to %d characters from [A-Za-z0-9._:-]", ErrInvalid, clip(kid), maxAgentIDLen)
	}
	k.id = kid
	return k, nil
}

// WithStatus returns k with status s.
func (k Key) WithStatus(s KeyStatus) Key {
	k.status = s
	return k
}

// SigningInterval is when a key signed, as a key history publishes it
// (KeyHistory): from when it became active until another key replaced it,
// and when it was revoked, if it was.
type SigningInterval struct {
	// From is when the key became active.
	From time.Time
	// Until is when another key replaced it; zero while it signs.
	Until time.Time
	// RevokedAt is when the key was revoked; zero unless it was.
	RevokedAt time.Time
}

// Contains reports whether a passport computed at t may have been signed
// in the interval: From − MaxClockSkew ≤ t ≤ Until + MaxClockSkew (no upper
// bound while Until is zero). The allowance covers what every signer of a
// deployment may differ by: clocks that differ, computed_at's whole
// seconds, and a server still signing with a key another replaced less
// than a reload ago.
func (iv SigningInterval) Contains(t time.Time) bool {
	if t.Before(iv.From.Add(-MaxClockSkew)) {
		return false
	}
	return iv.Until.IsZero() || !t.After(iv.Until.Add(MaxClockSkew))
}

// WithInterval returns k bound to what it signed in iv, as a key history
// publishes it: its signature on a passport is accepted exactly when
// iv.Contains(issuer.computed_at), whether the key is still accepted, only
// verifies or is retired (KeyRetired: what it signed while it was active
// still verifies); a revoked key (KeyRevoked) is refused whatever date the
// passport bears (ERRATA E48). A passport computed outside iv is refused
// with CodeKeyInactive.
func (k Key) WithInterval(iv SigningInterval) Key {
	k.iv = &iv
	return k
}

// Interval returns the interval given to WithInterval, and whether there
// is one.
func (k Key) Interval() (SigningInterval, bool) {
	if k.iv == nil {
		return SigningInterval{}, false
	}
	return *k.iv, true
}

// acceptsAt reports whether k's signature on a passport computed at t is
// accepted: never for a revoked key, by the interval for a key that has
// one, else by its status.
func (k Key) acceptsAt(t time.Time) bool {
	switch {
	case k.status == KeyRevoked:
		return false
	case k.iv != nil:
		return k.iv.Contains(t)
	}
	return k.status == KeyAccepted
}

func validKeyID(kid string) bool { return checkAgentID(kid) == nil }

// ID is the key id given to WithID, or "".
func (k Key) ID() string { return k.id }

// Status is the status given to WithStatus (KeyAccepted by default).
func (k Key) Status() KeyStatus { return k.status }

// Alg is AlgHS256 or AlgEdDSA, or "" for the zero Key.
func (k Key) Alg() string {
	if k.k == nil {
		return ""
	}
	return k.k.alg
}

// Public is the Ed25519 public key of an EdDSA Key (a copy), nil for an
// HS256 one: HMAC secrets have no public half.
func (k Key) Public() ed25519.PublicKey {
	if k.k == nil || k.k.pub == nil {
		return nil
	}
	return append(ed25519.PublicKey(nil), k.k.pub...)
}

// CanSign reports whether Sign accepts k: an HS256 secret or an Ed25519
// private key.
func (k Key) CanSign() bool { return k.k != nil && (k.k.secret != nil || k.k.priv != nil) }

// SignMessage signs msg with an EdDSA key's private half (Ed25519, RFC
// 8032) and returns the 64-byte signature: for documents other than
// passports that the issuer secures with the same key, such as the W3C
// Data Integrity proofs of its credentials. An HS256 key or a public key
// is ErrInvalid: an HMAC would not be verifiable by anyone without the
// secret.
func (k Key) SignMessage(msg []byte) ([]byte, error) {
	if k.k == nil || k.k.alg != AlgEdDSA || k.k.priv == nil {
		return nil, fmt.Errorf("%w: only an Ed25519 private key signs messages", ErrInvalid)
	}
	return ed25519.Sign(k.k.priv, msg), nil
}

// valid reports whether k came from a constructor.
func (k Key) valid() bool { return k.k != nil }

// sigSize is the length of the raw signature k makes.
func (k Key) sigSize() int {
	if k.k.alg == AlgEdDSA {
		return ed25519.SignatureSize
	}
	return sha256.Size
}

// macState is a keyed HMAC and a buffer for its sum: hash.Hash.Sum is an
// interface call, so a caller's buffer passed to it would escape to the heap.
type macState struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

// mac appends HMAC-SHA256(k, msg) to dst; k is HS256.
func (k Key) mac(dst []byte, msg []byte) []byte {
	s := k.k.macs.Get().(*macState)
	s.h.Reset()
	s.h.Write(msg)
	dst = append(dst, s.h.Sum(s.sum[:0])...)
	k.k.macs.Put(s)
	return dst
}

// sign appends k's raw signature of msg to dst; k can sign.
func (k Key) sign(dst []byte, msg []byte) []byte {
	if k.k.alg == AlgEdDSA {
		return append(dst, ed25519.Sign(k.k.priv, msg)...)
	}
	return k.mac(dst, msg)
}

// verify reports whether raw is k's signature of msg, in constant time for
// HMAC (Ed25519 verification involves no secret).
func (k Key) verify(msg, raw []byte) bool {
	if len(raw) != k.sigSize() {
		return false
	}
	if k.k.alg == AlgEdDSA {
		return ed25519.Verify(k.k.pub, msg, raw)
	}
	var got [sha256.Size]byte
	return hmac.Equal(k.mac(got[:0], msg), raw)
}

// String returns "[REDACTED]".
func (Key) String() string { return redacted }

// GoString returns "[REDACTED]", so %#v cannot show the bytes either.
func (Key) GoString() string { return redacted }

// Format writes "[REDACTED]" for every verb, so that %x, %q and %v of a Key
// (or of a struct holding one) cannot show the bytes.
func (Key) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// MarshalJSON renders the key as the JSON string "[REDACTED]".
func (Key) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText renders the key as "[REDACTED]".
func (Key) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// LogValue makes log/slog print "[REDACTED]".
func (Key) LogValue() slog.Value { return slog.StringValue(redacted) }
