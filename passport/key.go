package passport

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"hash"
	"log/slog"
	"sync"
)

// MinKeySize is the shortest signing key accepted, in bytes (§8.1: "a shared
// secret (32+ bytes)").
const MinKeySize = 32

// redacted is what a Key prints as in every format, so that a key reaching a
// log line, an error message or a JSON response by accident discloses nothing.
const redacted = "[REDACTED]"

// Key is an HMAC-SHA256 signing key. The zero Key is not usable: obtain one
// from NewKey. A Key is safe for concurrent use and cheap to copy.
//
// A Key never prints its bytes: fmt (every verb, including %#v), encoding/json,
// encoding (text) and log/slog all render it as "[REDACTED]".
type Key struct {
	k *keyState
}

type keyState struct {
	secret []byte
	// macs holds HMAC states keyed with secret. Keying an HMAC hashes the
	// padded key twice; reusing a Reset state skips that on every use.
	macs sync.Pool
}

// NewKey makes a Key from the literal bytes of the configured secret: the
// string "abc…" is the key b"abc…", exactly what Node's
// crypto.createHmac("sha256", "abc…") or Python's hmac.new(b"abc…") use. No
// hex or base64 decoding happens, so a key configured as 64 hex characters is
// 64 key bytes. b is copied. It fails, matching ErrInvalid, when b is shorter
// than MinKeySize; the error states the length, never the bytes.
func NewKey(b []byte) (Key, error) {
	if len(b) < MinKeySize {
		return Key{}, fmt.Errorf("%w: signing key is %d bytes, need at least %d", ErrInvalid, len(b), MinKeySize)
	}
	s := &keyState{secret: append([]byte(nil), b...)}
	s.macs.New = func() any { return &macState{h: hmac.New(sha256.New, s.secret)} }
	return Key{s}, nil
}

// valid reports whether k came from NewKey.
func (k Key) valid() bool { return k.k != nil }

// macState is a keyed HMAC and a buffer for its sum: hash.Hash.Sum is an
// interface call, so a caller's buffer passed to it would escape to the heap.
type macState struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

// mac appends HMAC-SHA256(k, msg) to dst.
func (k Key) mac(dst []byte, msg []byte) []byte {
	s := k.k.macs.Get().(*macState)
	s.h.Reset()
	s.h.Write(msg)
	dst = append(dst, s.h.Sum(s.sum[:0])...)
	k.k.macs.Put(s)
	return dst
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
