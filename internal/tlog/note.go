package tlog

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// Checkpoint is the body of a C2SP tlog-checkpoint: the log's origin, its
// size and its root hash.
type Checkpoint struct {
	Origin string
	Size   uint64
	Root   []byte
}

// Text is the checkpoint's note text: the origin, the size in decimal and
// the root in standard base64, each on its own line ending in a newline,
// with no extension lines.
func (c Checkpoint) Text() string {
	return c.Origin + "\n" + strconv.FormatUint(c.Size, 10) + "\n" + base64.StdEncoding.EncodeToString(c.Root) + "\n"
}

// MaxOriginLength bounds an origin (a schema-less URL, C2SP
// tlog-checkpoint); longer ones are refused.
const MaxOriginLength = 256

// CheckOrigin checks an origin: a non-empty line of printable ASCII
// without spaces or plus signs (a note key name, which the log's
// signature is named by, can hold neither) of at most MaxOriginLength
// bytes. Errors: ErrInvalid.
func CheckOrigin(origin string) error {
	if origin == "" || len(origin) > MaxOriginLength {
		return fmt.Errorf("%w: a log origin is 1 to %d bytes", errkind.ErrInvalid, MaxOriginLength)
	}
	for i := 0; i < len(origin); i++ {
		if c := origin[i]; c <= ' ' || c > '~' || c == '+' {
			return fmt.Errorf("%w: log origin %q holds %q: it must be printable ASCII without spaces or '+'", errkind.ErrInvalid, origin, c)
		}
	}
	return nil
}

// ParseCheckpoint reads a checkpoint's note text (Note.Text of an opened
// note): origin, size and root lines, then any extension lines, which are
// ignored as C2SP tlog-checkpoint asks. Errors: ErrInvalid.
func ParseCheckpoint(text string) (Checkpoint, error) {
	lines := strings.SplitN(text, "\n", 4)
	if len(lines) < 4 {
		return Checkpoint{}, fmt.Errorf("%w: a checkpoint has an origin, a size and a root hash line", errkind.ErrInvalid)
	}
	if err := CheckOrigin(lines[0]); err != nil {
		return Checkpoint{}, err
	}
	size, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != lines[1] {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint size %q is not a decimal number without leading zeros", errkind.ErrInvalid, clip(lines[1]))
	}
	root, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(root) != HashSize {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint root hash %q is not 32 bytes of standard base64", errkind.ErrInvalid, clip(lines[2]))
	}
	return Checkpoint{Origin: lines[0], Size: size, Root: root}, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Ed25519Verifier is the note verifier of an Ed25519 public key under
// name (the log's origin): its key hash is that of C2SP signed-note, the
// first four bytes of SHA-256(name || "\n" || 0x01 || key).
func Ed25519Verifier(name string, pub ed25519.PublicKey) (note.Verifier, error) {
	vkey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errkind.ErrInvalid, err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errkind.ErrInvalid, err)
	}
	return v, nil
}

// ed25519Signer signs notes with a key whose private half stays with its
// owner (sign).
type ed25519Signer struct {
	name string
	hash uint32
	sign func([]byte) ([]byte, error)
}

func (s ed25519Signer) Name() string                    { return s.name }
func (s ed25519Signer) KeyHash() uint32                 { return s.hash }
func (s ed25519Signer) Sign(msg []byte) ([]byte, error) { return s.sign(msg) }

// Ed25519Signer is the note signer of an Ed25519 key named name, whose
// public half is pub and whose signatures sign makes (plain Ed25519 over
// the note text, RFC 8032).
func Ed25519Signer(name string, pub ed25519.PublicKey, sign func([]byte) ([]byte, error)) (note.Signer, error) {
	v, err := Ed25519Verifier(name, pub)
	if err != nil {
		return nil, err
	}
	return ed25519Signer{name: name, hash: v.KeyHash(), sign: sign}, nil
}

// Sign signs c as a note with s. Errors: ErrInvalid for an origin
// CheckOrigin refuses or a root that is not a hash.
func Sign(c Checkpoint, s note.Signer) ([]byte, error) {
	if err := CheckOrigin(c.Origin); err != nil {
		return nil, err
	}
	if len(c.Root) != HashSize {
		return nil, fmt.Errorf("%w: a root hash is %d bytes", errkind.ErrInvalid, HashSize)
	}
	return note.Sign(&note.Note{Text: c.Text()}, s)
}

// ErrSignature is matched by the errors of Open for a note that no known
// key signed.
var ErrSignature = errors.New("the checkpoint is not signed by a key of this log")

// MaxNoteSize bounds a note read from anywhere.
const MaxNoteSize = 16 << 10

// Open verifies a signed checkpoint note with known and reads it: the
// opened note (its Sigs are those known verified, UnverifiedSigs the
// others, such as witnesses' cosignatures) and its checkpoint. Errors:
// ErrInvalid for what is not a note or not a checkpoint, and one matching
// ErrSignature (and ErrInvalid) when no known key signed it or a known
// key's signature is wrong.
func Open(msg []byte, known note.Verifiers) (*note.Note, Checkpoint, error) {
	if len(msg) > MaxNoteSize {
		return nil, Checkpoint{}, fmt.Errorf("%w: a checkpoint note is at most %d bytes", errkind.ErrInvalid, MaxNoteSize)
	}
	n, err := note.Open(msg, known)
	var unverified *note.UnverifiedNoteError
	var invalid *note.InvalidSignatureError
	switch {
	case errors.As(err, &unverified):
		return nil, Checkpoint{}, fmt.Errorf("%w: %w: none of its %d signature(s) is by a known key", errkind.ErrInvalid, ErrSignature, len(unverified.Note.UnverifiedSigs))
	case errors.As(err, &invalid):
		return nil, Checkpoint{}, fmt.Errorf("%w: %w: %v", errkind.ErrInvalid, ErrSignature, err)
	case err != nil:
		return nil, Checkpoint{}, fmt.Errorf("%w: not a signed note: %v", errkind.ErrInvalid, err)
	}
	c, err := ParseCheckpoint(n.Text)
	if err != nil {
		return nil, Checkpoint{}, err
	}
	for _, s := range n.Sigs {
		if s.Name != c.Origin {
			return nil, Checkpoint{}, fmt.Errorf("%w: %w: the checkpoint of %q is signed by a key named %q, not by its origin", errkind.ErrInvalid, ErrSignature, clip(c.Origin), clip(s.Name))
		}
	}
	return n, c, nil
}

// AppendSignatures adds signature lines (each "— name base64", without
// its newline, as a witness returns them) to a signed note, after its own.
// Lines that are not signature lines are refused (ErrInvalid).
func AppendSignatures(signed []byte, lines []string) ([]byte, error) {
	out := bytes.Clone(signed)
	for _, l := range lines {
		if !strings.HasPrefix(l, "— ") || strings.ContainsAny(l, "\n") || len(l) > 1024 {
			return nil, fmt.Errorf("%w: %q is not a note signature line", errkind.ErrInvalid, clip(l))
		}
		out = append(out, l...)
		out = append(out, '\n')
	}
	return out, nil
}
