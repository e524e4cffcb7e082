package checkpoint

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/jcsstr"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Wire constants of this version.
const (
	// Type is the document's "type" member. It names the format and its
	// version, and keeps a checkpoint's signed bytes from ever being those
	// of another document signed with the same key (a passport).
	Type = "swarmscore-checkpoint/v1"
	// TimeLayout is the document's "time": RFC 3339 in UTC, whole seconds.
	TimeLayout = "2006-01-02T15:04:05Z"
	// MaxDocumentSize bounds a document Parse accepts, so that parsing
	// untrusted input costs bounded work. The largest valid document is
	// 1,129 bytes in canonical form; the rest is room for indentation.
	MaxDocumentSize = 16 << 10

	// HS256 and EdDSA are the signature algorithms, named as keyring
	// records and passports name them.
	HS256 = "HS256"
	EdDSA = "EdDSA"

	maxPlatformLen = 256
)

// Signature lengths in bytes, before encoding.
const (
	hs256SigSize = 32
	eddsaSigSize = 64
)

// ErrSignature is matched by every verification failure of a checkpoint's
// signature: a key id or algorithm the verifier does not have, or a
// signature that is not the key's over the document. It matches
// errkind.ErrInvalid.
var ErrSignature = fmt.Errorf("%w: checkpoint signature does not verify", errkind.ErrInvalid)

// Checkpoint is a signed commitment to every agent's chain head at an
// instant: the document published at /swarmscore/checkpoints/{number}. Its
// JSON form is
//
//	{"agents":3,"checkpoint":17,"environment":"production",
//	 "issuer":{"alg":"EdDSA","kid":"k1","platform":"SwarmScore","signature":"…"},
//	 "root":"<64 hex>","time":"2026-05-01T12:00:00Z","type":"swarmscore-checkpoint/v1"}
//
// in RFC 8785 canonical form, members sorted. The signature is over the
// canonical form of the document without issuer.signature (SignedMessage),
// so it covers the key id and algorithm too.
type Checkpoint struct {
	// Number is the checkpoint's position in the operator's sequence of
	// checkpoints, from 1.
	Number int64
	// Time is the instant the heads were read, UTC, whole seconds. It is
	// the operator's claim, fixed only by copies archived by others.
	Time time.Time
	// Agents is the number of leaves: the tree size.
	Agents int64
	// Root is the Merkle tree hash of the leaves.
	Root Hash
	// Environment is the deployment (production, staging…), in the
	// ledger's id alphabet, as the signing key's keyring record names it.
	Environment string
	Issuer      Issuer
}

// Issuer names who signed the checkpoint and with what, and carries the
// signature.
type Issuer struct {
	// Platform is the operator, as in a passport's issuer.platform: 1 to
	// 256 bytes of UTF-8 without control characters or U+FFFD.
	Platform string
	// KeyID is the signing key's id (kid), in the ledger's id alphabet.
	KeyID string
	// Alg is HS256 or EdDSA.
	Alg string
	// Signature is the raw signature: 32 bytes for HS256 (lowercase hex in
	// the document), 64 for EdDSA (unpadded base64url). Empty before Sign.
	Signature []byte
}

// validate checks every member but the signature.
func (c *Checkpoint) validate() error {
	switch {
	case c.Number < 1 || c.Number > MaxInteger:
		return fmt.Errorf("%w: checkpoint number %d is outside 1 to 2^53-1", errkind.ErrInvalid, c.Number)
	case c.Agents < 0 || c.Agents > MaxInteger:
		return fmt.Errorf("%w: agent count %d is outside 0 to 2^53-1", errkind.ErrInvalid, c.Agents)
	case !ledger.ValidID(c.Environment):
		return fmt.Errorf("%w: environment %s must be 1 to 128 characters from [A-Za-z0-9._:-]", errkind.ErrInvalid, quote(c.Environment))
	case !ledger.ValidID(c.Issuer.KeyID):
		return fmt.Errorf("%w: issuer.kid %s must be 1 to 128 characters from [A-Za-z0-9._:-]", errkind.ErrInvalid, quote(c.Issuer.KeyID))
	case c.Issuer.Alg != HS256 && c.Issuer.Alg != EdDSA:
		return fmt.Errorf("%w: issuer.alg %s is not %s or %s", errkind.ErrInvalid, quote(c.Issuer.Alg), HS256, EdDSA)
	}
	if err := checkTime(c.Time); err != nil {
		return err
	}
	return checkPlatform(c.Issuer.Platform)
}

func checkTime(t time.Time) error {
	switch {
	case t.IsZero():
		return fmt.Errorf("%w: checkpoint time is not set", errkind.ErrInvalid)
	case t.Nanosecond() != 0:
		return fmt.Errorf("%w: checkpoint time %s has a fraction of a second; truncate it", errkind.ErrInvalid, t.UTC().Format(time.RFC3339Nano))
	case t.UTC().Year() < 1 || t.UTC().Year() > 9999:
		return fmt.Errorf("%w: checkpoint time %s is outside years 1 to 9999", errkind.ErrInvalid, t.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkPlatform refuses U+FFFD too: encoding/json decodes a lone surrogate
// escape, which RFC 8785 cannot canonicalize, to U+FFFD, so a platform
// holding one could not be told from a document that was never canonical.
func checkPlatform(s string) error {
	if s == "" || len(s) > maxPlatformLen {
		return fmt.Errorf("%w: issuer.platform must be 1 to %d bytes, got %d", errkind.ErrInvalid, maxPlatformLen, len(s))
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: issuer.platform is not valid UTF-8", errkind.ErrInvalid)
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return fmt.Errorf("%w: issuer.platform %s holds control character or U+FFFD %U", errkind.ErrInvalid, quote(s), r)
		}
	}
	return nil
}

// sigSize is the raw signature length of alg (0 for an unknown one).
func sigSize(alg string) int {
	switch alg {
	case HS256:
		return hs256SigSize
	case EdDSA:
		return eddsaSigSize
	}
	return 0
}

// encodeSignature is the document's spelling of a raw signature.
func encodeSignature(dst []byte, alg string, sig []byte) []byte {
	if alg == HS256 {
		return hex.AppendEncode(dst, sig)
	}
	return base64.RawURLEncoding.AppendEncode(dst, sig)
}

// decodeSignature accepts only the spelling encodeSignature produces, so
// that a signature has one form in an archived document.
func decodeSignature(alg, s string) ([]byte, error) {
	var sig []byte
	var err error
	switch alg {
	case HS256:
		if !lowerHex(s) {
			err = errors.New("not lowercase hex")
		} else {
			sig, err = hex.DecodeString(s)
		}
	case EdDSA:
		sig, err = base64.RawURLEncoding.Strict().DecodeString(s)
	default:
		return nil, fmt.Errorf("%w: issuer.alg %s is not %s or %s", errkind.ErrInvalid, quote(alg), HS256, EdDSA)
	}
	if err == nil && len(sig) != sigSize(alg) {
		err = fmt.Errorf("%d bytes, want %d", len(sig), sigSize(alg))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: issuer.signature is not an %s signature (%d bytes as %s): %v", errkind.ErrInvalid, alg, sigSize(alg), sigEncoding(alg), err)
	}
	return sig, nil
}

func sigEncoding(alg string) string {
	if alg == HS256 {
		return "lowercase hex"
	}
	return "unpadded base64url"
}

// SignedMessage returns the bytes the signature covers: the RFC 8785
// canonical JSON of the document without issuer.signature. Every member is
// validated first; an invalid one matches errkind.ErrInvalid.
func (c *Checkpoint) SignedMessage() ([]byte, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c.appendCanonical(make([]byte, 0, 512), false), nil
}

// MarshalJSON returns the signed document in RFC 8785 canonical form: what
// is published and archived, byte-stable for a given checkpoint. Publish
// these bytes as they are: encoding/json's Marshal and Encoder re-escape <,
// >, & and U+2028/U+2029 in a Marshaler's output (a platform may hold
// them), which Parse still reads and Verify still accepts, but which is no
// longer the canonical form. A
// checkpoint that is invalid or not signed (a signature of the wrong length
// for its algorithm) matches errkind.ErrInvalid.
func (c Checkpoint) MarshalJSON() ([]byte, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	if n := sigSize(c.Issuer.Alg); len(c.Issuer.Signature) != n {
		return nil, fmt.Errorf("%w: checkpoint %d is not signed (an %s signature has %d bytes, it has %d)", errkind.ErrInvalid, c.Number, c.Issuer.Alg, n, len(c.Issuer.Signature))
	}
	return c.appendCanonical(make([]byte, 0, 512), true), nil
}

// appendCanonical writes the members in RFC 8785 order, which for these
// ASCII names is byte order: agents, checkpoint, environment, issuer (alg,
// kid, platform, signature), root, time, type. Integers are at most 2^53−1,
// whose JCS form is their decimal digits; strings take jcsstr.Append.
func (c *Checkpoint) appendCanonical(dst []byte, withSignature bool) []byte {
	dst = append(dst, `{"agents":`...)
	dst = strconv.AppendInt(dst, c.Agents, 10)
	dst = append(dst, `,"checkpoint":`...)
	dst = strconv.AppendInt(dst, c.Number, 10)
	dst = append(dst, `,"environment":`...)
	dst = jcsstr.Append(dst, c.Environment)
	dst = append(dst, `,"issuer":{"alg":`...)
	dst = jcsstr.Append(dst, c.Issuer.Alg)
	dst = append(dst, `,"kid":`...)
	dst = jcsstr.Append(dst, c.Issuer.KeyID)
	dst = append(dst, `,"platform":`...)
	dst = jcsstr.Append(dst, c.Issuer.Platform)
	if withSignature {
		// Neither hex nor base64url has a character JSON escapes.
		dst = append(dst, `,"signature":"`...)
		dst = encodeSignature(dst, c.Issuer.Alg, c.Issuer.Signature)
		dst = append(dst, '"')
	}
	dst = append(dst, `},"root":"`...)
	dst = hex.AppendEncode(dst, c.Root[:])
	dst = append(dst, `","time":"`...)
	dst = c.Time.UTC().AppendFormat(dst, TimeLayout)
	dst = append(dst, `","type":"`+Type+`"}`...)
	return dst
}

// Sign sets the issuer's key id and algorithm to the signer's and signs the
// document with it. Every member but the signature must be valid; an
// invalid one, or a signer whose key id or algorithm is invalid or whose
// signature has the wrong length for its algorithm, matches
// errkind.ErrInvalid. A failure of the signer itself is returned wrapped,
// of whatever kind it is. On error c is unchanged.
func (c *Checkpoint) Sign(s Signer) error {
	signed := *c
	signed.Issuer.KeyID, signed.Issuer.Alg, signed.Issuer.Signature = s.KeyID(), s.Alg(), nil
	msg, err := signed.SignedMessage()
	if err != nil {
		return err
	}
	sig, err := s.Sign(msg)
	if err != nil {
		return fmt.Errorf("checkpoint %d: signing with key %s: %w", c.Number, signed.Issuer.KeyID, err)
	}
	if n := sigSize(signed.Issuer.Alg); len(sig) != n {
		return fmt.Errorf("%w: key %s returned a %d-byte %s signature, want %d", errkind.ErrInvalid, signed.Issuer.KeyID, len(sig), signed.Issuer.Alg, n)
	}
	signed.Issuer.Signature = sig
	*c = signed
	return nil
}

// Verify checks the signature with v over SignedMessage. An invalid
// checkpoint matches errkind.ErrInvalid; a signature that does not verify
// is v's error, which for this package's verifiers matches ErrSignature.
// Verify says nothing about the environment: a caller that expects one
// compares it.
func (c *Checkpoint) Verify(v Verifier) error {
	msg, err := c.SignedMessage()
	if err != nil {
		return err
	}
	if err := v.Verify(c.Issuer.KeyID, c.Issuer.Alg, msg, c.Issuer.Signature); err != nil {
		return fmt.Errorf("checkpoint %d: %w", c.Number, err)
	}
	return nil
}

// VerifyInclusion checks that p proves leaf to be in the tree c commits to:
// VerifyInclusion(c.Root, c.Agents, leaf, p). Verify c's signature first;
// the proof is only as good as the root and count it is checked against.
// Errors match ErrProof or errkind.ErrInvalid.
func (c *Checkpoint) VerifyInclusion(leaf Leaf, p Proof) error {
	if err := VerifyInclusion(c.Root, c.Agents, leaf, p); err != nil {
		return fmt.Errorf("checkpoint %d: %w", c.Number, err)
	}
	return nil
}
