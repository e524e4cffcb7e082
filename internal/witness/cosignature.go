package witness

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// algCosignatureV1 is the signature type byte of an Ed25519 cosignature/v1
// key (C2SP tlog-cosignature): it goes into the key id and the vkey, so a
// witness key can never be mistaken for an ordinary note key (type 0x01),
// whose signatures sign a different message.
const algCosignatureV1 = 0x04

// timestampSize and cosignatureSize are the lengths of a
// timestamped_signature's fields for Ed25519.
const (
	timestampSize   = 8
	cosignatureSize = timestampSize + ed25519.SignatureSize
)

// CosignatureVerifier checks Ed25519 cosignature/v1 signatures (C2SP
// tlog-cosignature) of one witness key. It is a note.Verifier, so
// note.Open checks a checkpoint's cosignature lines with it.
// golang.org/x/mod/sumdb/note only knows type 0x01 keys, whose signed
// message is the note text alone; a cosignature signs
// "cosignature/v1\ntime T\n" followed by the note text, with T carried in
// the signature.
type CosignatureVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

// NewCosignatureVerifier parses a witness's verifier key in the signed-note
// vkey form, name+hash+base64(0x04 || 32-byte Ed25519 public key), where
// hash is the 8 hex digits of the key id SHA-256(name || "\n" || 0x04 ||
// key)[:4]. A key of another type (0x01 is an ordinary note key, not a
// cosigner's), a malformed name, or a hash that is not the key's id is
// errkind.ErrInvalid: a cosignature is only ever checked against the key
// the operator configured, never one derived from it.
func NewCosignatureVerifier(vkey string) (*CosignatureVerifier, error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	hash16, key64, ok2 := strings.Cut(rest, "+")
	if !ok1 || !ok2 || !validName(name) {
		return nil, fmt.Errorf("%w: witness key: want name+hash+base64 key", errkind.ErrInvalid)
	}
	key, err := base64.StdEncoding.Strict().DecodeString(key64)
	// The decoder skips line breaks; a key is one line.
	if err != nil || len(key) != 1+ed25519.PublicKeySize || strings.ContainsAny(key64, "\r\n") {
		return nil, fmt.Errorf("%w: witness key: the key is not base64 of a type byte and 32 bytes", errkind.ErrInvalid)
	}
	if key[0] != algCosignatureV1 {
		return nil, fmt.Errorf("%w: witness key: type 0x%02x, want 0x04 (Ed25519 cosignature/v1)", errkind.ErrInvalid, key[0])
	}
	hash, err := strconv.ParseUint(hash16, 16, 32)
	if len(hash16) != 8 || err != nil {
		return nil, fmt.Errorf("%w: witness key: the key id is not 8 hex digits", errkind.ErrInvalid)
	}
	v := &CosignatureVerifier{name: name, key: ed25519.PublicKey(key[1:])}
	v.hash = keyID(name, key)
	if uint32(hash) != v.hash {
		return nil, fmt.Errorf("%w: witness key: key id %s does not match the key (%08x)", errkind.ErrInvalid, hash16, v.hash)
	}
	return v, nil
}

// keyID is SHA-256(name || "\n" || typed key)[:4], big-endian.
func keyID(name string, typedKey []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n'})
	h.Write(typedKey)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// validName is signed-note's rule for key names: non-empty UTF-8 without
// spaces or '+'.
func validName(name string) bool {
	return name != "" && utf8.ValidString(name) && strings.IndexFunc(name, unicode.IsSpace) < 0 && !strings.Contains(name, "+")
}

// Name is the witness's key name, the name its signature lines carry.
func (v *CosignatureVerifier) Name() string { return v.name }

// KeyHash is the key id.
func (v *CosignatureVerifier) KeyHash() uint32 { return v.hash }

// Verify reports whether sig, a timestamped_signature (8-byte big-endian
// POSIX time, then 64 bytes of Ed25519), signs the cosignature/v1 message
// of the note text msg at that time. A timestamp above 2^63-1 is refused,
// as the spec forbids it.
func (v *CosignatureVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != cosignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	if t > math.MaxInt64 {
		return false
	}
	return ed25519.Verify(v.key, cosignedMessage(t, msg), sig[timestampSize:])
}

// cosignedMessage is what an Ed25519 cosignature/v1 signs: the header line,
// the time line (decimal, no leading zeroes), then the note text with its
// final newline.
func cosignedMessage(t uint64, text []byte) []byte {
	m := make([]byte, 0, len("cosignature/v1\ntime \n")+20+len(text))
	m = append(m, "cosignature/v1\ntime "...)
	m = strconv.AppendUint(m, t, 10)
	m = append(m, '\n')
	return append(m, text...)
}

// CosignatureTime returns the time a cosignature/v1 signature line
// ("— name base64", with or without its newline) says it was made. A line
// that is not one is errkind.ErrInvalid. It does not verify the signature.
func CosignatureTime(sigLine string) (time.Time, error) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(sigLine, "\n"), "— ")
	var b64 string
	if ok {
		_, b64, ok = strings.Cut(rest, " ")
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil || len(raw) != 4+cosignatureSize {
		return time.Time{}, fmt.Errorf("%w: not a cosignature/v1 signature line", errkind.ErrInvalid)
	}
	t := binary.BigEndian.Uint64(raw[4:])
	if t > math.MaxInt64 {
		return time.Time{}, fmt.Errorf("%w: cosignature time out of range", errkind.ErrInvalid)
	}
	return time.Unix(int64(t), 0).UTC(), nil
}

var _ note.Verifier = (*CosignatureVerifier)(nil)
