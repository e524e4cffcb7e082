package passport

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// JWK set: how an issuer publishes the public keys of its Ed25519 passports
// (RFC 7517, with the OKP key type of RFC 8037), so that anyone can verify
// them offline with no shared secret. HMAC keys are never published: an
// HMAC key verifies and forges alike.

// MaxKeySetSize bounds a JWK set ParseJWKSet reads, in bytes.
const MaxKeySetSize = 64 << 10

// JWK is one public key of a set: kty "OKP", crv "Ed25519", x the public key
// in base64url without padding, its kid, alg "EdDSA", use "sig", and its
// validity, which RFC 7517 leaves to the publisher: Status ("active": it
// signs new passports; "verify-only": it no longer does), NotBefore (when it
// was created) and Expires (after it, no passport it signed can still be
// valid; absent while the key may sign), both NumericDates (seconds since
// 1970, as in JWT).
type JWK struct {
	Kty       string `json:"kty"`
	Crv       string `json:"crv"`
	X         string `json:"x"`
	Kid       string `json:"kid"`
	Alg       string `json:"alg"`
	Use       string `json:"use"`
	Status    string `json:"status,omitempty"`
	NotBefore int64  `json:"nbf,omitempty"`
	Expires   int64  `json:"exp,omitempty"`
}

// JWKSet is a JWK set document: {"keys":[…]}.
type JWKSet struct {
	Keys []JWK `json:"keys"`
}

// PublicJWK describes the public half of k, an EdDSA key with an id, as a
// JWK with the given status, created at notBefore and, when expires is not
// zero, no longer vouching for any passport after expires. An HS256 key or
// one without an id is ErrInvalid: there is nothing to publish.
func PublicJWK(k Key, status string, notBefore, expires time.Time) (JWK, error) {
	if !k.valid() || k.k.alg != AlgEdDSA {
		return JWK{}, fmt.Errorf("%w: only Ed25519 keys have a public key to publish", ErrInvalid)
	}
	if k.id == "" {
		return JWK{}, fmt.Errorf("%w: a published key needs an id (Key.WithID)", ErrInvalid)
	}
	j := JWK{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(k.k.pub), Kid: k.id, Alg: AlgEdDSA, Use: "sig", Status: status}
	if !notBefore.IsZero() {
		j.NotBefore = notBefore.Unix()
	}
	if !expires.IsZero() {
		j.Expires = expires.Unix()
	}
	return j, nil
}

// KeyHistory is a key history document: every Ed25519 public key a
// deployment ever signed with, each with the interval it signed in and its
// status, so that what a key signed can be verified after it was rotated
// out and retired (a JWK set, RFC 7517, lists only the keys a verifier
// should accept now). It is a JWK set whose keys carry three more members;
// ParseJWKSet reads both.
type KeyHistory struct {
	Keys []HistoryKey `json:"keys"`
}

// HistoryKey is one key of a KeyHistory: the JWK members (kty "OKP", crv
// "Ed25519", x, kid, alg "EdDSA", use "sig"), its status (active,
// verify-only, retired or revoked), and the interval it signed in:
// active_from, active_until (absent while it is active) and, for a revoked
// key, revoked_at, as RFC 3339 times.
type HistoryKey struct {
	Kty         string     `json:"kty"`
	Crv         string     `json:"crv"`
	X           string     `json:"x"`
	Kid         string     `json:"kid"`
	Alg         string     `json:"alg"`
	Use         string     `json:"use"`
	Status      string     `json:"status"`
	ActiveFrom  time.Time  `json:"active_from"`
	ActiveUntil *time.Time `json:"active_until,omitempty"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
}

// The statuses of a key in a JWK set or key history.
const (
	StatusActive     = "active"      // it signs new passports
	StatusVerifyOnly = "verify-only" // it no longer signs; what it signed still verifies
	StatusRetired    = "retired"     // no longer accepted, but what it signed while active verifies by a key history
	StatusRevoked    = "revoked"     // compromised: nothing it signed is accepted
)

// PublicHistoryKey describes the public half of k, an EdDSA key with an id,
// in a key history: with status (one of the Status constants) and the
// interval iv it signed in (RevokedAt only for a revoked key). Times are
// written in UTC. An HS256 key, one without an id, an unknown status, an
// interval with no start, one that ends before it starts or is still open
// for a key no longer active, or a revocation time for a key that is not
// revoked (or none for one that is), is ErrInvalid.
func PublicHistoryKey(k Key, status string, iv SigningInterval) (HistoryKey, error) {
	j, err := PublicJWK(k, status, time.Time{}, time.Time{})
	if err != nil {
		return HistoryKey{}, err
	}
	if err := checkHistory(k.id, status, iv); err != nil {
		return HistoryKey{}, err
	}
	h := HistoryKey{Kty: j.Kty, Crv: j.Crv, X: j.X, Kid: j.Kid, Alg: j.Alg, Use: j.Use, Status: status, ActiveFrom: iv.From.UTC()}
	if !iv.Until.IsZero() {
		t := iv.Until.UTC()
		h.ActiveUntil = &t
	}
	if !iv.RevokedAt.IsZero() {
		t := iv.RevokedAt.UTC()
		h.RevokedAt = &t
	}
	return h, nil
}

// checkHistory checks what a key history says of key kid.
func checkHistory(kid, status string, iv SigningInterval) error {
	switch {
	case status != StatusActive && status != StatusVerifyOnly && status != StatusRetired && status != StatusRevoked:
		return fmt.Errorf("%w: key %q has status %q, not active, verify-only, retired or revoked", ErrInvalid, kid, clip(status))
	case iv.From.IsZero():
		return fmt.Errorf("%w: key %q has no active_from", ErrInvalid, kid)
	case !iv.Until.IsZero() && iv.Until.Before(iv.From):
		return fmt.Errorf("%w: key %q: active_until is before active_from", ErrInvalid, kid)
	case (status == StatusActive) != iv.Until.IsZero():
		return fmt.Errorf("%w: key %q: active_until is given exactly when a key is no longer active", ErrInvalid, kid)
	case (status == StatusRevoked) != !iv.RevokedAt.IsZero():
		return fmt.Errorf("%w: key %q: revoked_at is given exactly when a key is revoked", ErrInvalid, kid)
	}
	return nil
}

// ParseJWKSet reads a JWK set, or a key history (KeyHistory), and returns
// its Ed25519 signature keys as verification keys (NewEd25519PublicKey,
// with their kid), in order. As RFC 7517 §5 asks, keys of another type or
// curve are ignored (symmetric "oct" keys included: a verifier must never
// take an HMAC secret from a public document). A key's status, when given,
// is kept: retired is KeyRetired, revoked KeyRevoked. A key with
// active_from is a key history's: it is bound to the interval it signed
// in (Key.WithInterval), so that what it signed while active verifies even
// once it is retired. It fails (ErrInvalid, naming the key) for a document
// that is not a JWK set or is larger than MaxKeySetSize, and for an
// Ed25519 key whose x is not 32 bytes of unpadded base64url, that carries
// private material (d), whose alg is not EdDSA (an HMAC alg on a public
// key is key confusion), whose use is not sig, whose kid is invalid or
// repeated, whose status is unknown, or whose interval is not RFC 3339
// times that fit its status.
func ParseJWKSet(b []byte) ([]Key, error) {
	if len(b) > MaxKeySetSize {
		return nil, fmt.Errorf("%w: the key set is %d bytes, the limit is %d", ErrInvalid, len(b), MaxKeySetSize)
	}
	var set struct {
		Keys []map[string]json.RawMessage `json:"keys"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&set); err != nil {
		return nil, fmt.Errorf("%w: not a JWK set: %v", ErrInvalid, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: not a JWK set: data after the document", ErrInvalid)
	}
	if set.Keys == nil {
		return nil, fmt.Errorf("%w: not a JWK set: no \"keys\" array", ErrInvalid)
	}
	var keys []Key
	seen := map[string]bool{}
	for i, m := range set.Keys {
		str := func(name string) (string, bool, error) {
			raw, ok := m[name]
			if !ok {
				return "", false, nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", true, fmt.Errorf("%w: key %d: %s must be a string", ErrInvalid, i, name)
			}
			return s, true, nil
		}
		kty, _, err := str("kty")
		if err != nil {
			return nil, err
		}
		crv, _, err := str("crv")
		if err != nil {
			return nil, err
		}
		if kty != "OKP" || crv != "Ed25519" {
			continue
		}
		kid, hasKid, err := str("kid")
		if err != nil {
			return nil, err
		}
		if !hasKid || !validKeyID(kid) {
			return nil, fmt.Errorf("%w: key %d: kid %q must be 1 to %d characters from [A-Za-z0-9._:-]", ErrInvalid, i, clip(kid), maxAgentIDLen)
		}
		if seen[kid] {
			return nil, fmt.Errorf("%w: key %q appears twice", ErrInvalid, kid)
		}
		seen[kid] = true
		if _, ok := m["d"]; ok {
			return nil, fmt.Errorf("%w: key %q carries its private part (d); a published set must not", ErrInvalid, kid)
		}
		if alg, ok, err := str("alg"); err != nil {
			return nil, err
		} else if ok && alg != AlgEdDSA {
			return nil, fmt.Errorf("%w: key %q is an Ed25519 key with alg %q: only %s may use it (key confusion)", ErrInvalid, kid, clip(alg), AlgEdDSA)
		}
		if use, ok, err := str("use"); err != nil {
			return nil, err
		} else if ok && use != "sig" {
			return nil, fmt.Errorf("%w: key %q has use %q, not sig", ErrInvalid, kid, clip(use))
		}
		x, _, err := str("x")
		if err != nil {
			return nil, err
		}
		pub, err := base64.RawURLEncoding.Strict().DecodeString(x)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("%w: key %q: x must be the %d-byte public key in base64url without padding", ErrInvalid, kid, ed25519.PublicKeySize)
		}
		k, err := NewEd25519PublicKey(pub)
		if err != nil {
			return nil, err
		}
		if k, err = k.WithID(kid); err != nil {
			return nil, err
		}
		status, hasStatus, err := str("status")
		if err != nil {
			return nil, err
		}
		var iv SigningInterval
		for _, t := range []struct {
			name string
			dst  *time.Time
		}{{"active_from", &iv.From}, {"active_until", &iv.Until}, {"revoked_at", &iv.RevokedAt}} {
			s, ok, err := str(t.name)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			if *t.dst, err = time.Parse(time.RFC3339Nano, s); err != nil {
				return nil, fmt.Errorf("%w: key %q: %s %q is not an RFC 3339 time", ErrInvalid, kid, t.name, clip(s))
			}
		}
		if !hasStatus {
			status = StatusActive
			if !iv.Until.IsZero() {
				status = StatusVerifyOnly
			}
		}
		switch {
		case !iv.From.IsZero() || !iv.Until.IsZero() || !iv.RevokedAt.IsZero():
			if err := checkHistory(kid, status, iv); err != nil {
				return nil, err
			}
			k = k.WithInterval(iv)
		case status != StatusActive && status != StatusVerifyOnly && status != StatusRetired && status != StatusRevoked:
			return nil, fmt.Errorf("%w: key %q has status %q, not active, verify-only, retired or revoked", ErrInvalid, kid, clip(status))
		}
		switch status {
		case StatusRetired:
			k = k.WithStatus(KeyRetired)
		case StatusRevoked:
			k = k.WithStatus(KeyRevoked)
		}
		keys = append(keys, k)
	}
	return keys, nil
}
