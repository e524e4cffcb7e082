package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"golang.org/x/mod/sumdb/note"

	"github.com/swarmscore/swarmscore/internal/tlog"
	"github.com/swarmscore/swarmscore/passport"
)

// LogCheckpointPath is where a server publishes its transparency log's
// latest checkpoint note (C2SP tlog-tiles), cosignatures included.
const LogCheckpointPath = "/swarmscore/log/checkpoint"

// LogCheckpoint is a checkpoint note of a server's transparency log (C2SP
// tlog-checkpoint): the log's origin, its size (the number of chain
// records appended) and its RFC 6962 root hash, with the note as served.
type LogCheckpoint struct {
	Origin string
	Size   uint64
	Root   []byte
	// Note is the signed note, exactly as served or given.
	Note []byte
	// Verified is true when VerifyCheckpoint checked the log's signature;
	// Cosigners then names the other keys that signed it (the witnesses),
	// whose signatures it did not check.
	Verified  bool
	Cosigners []string
}

// ParseCheckpoint reads a checkpoint note without checking any signature
// (VerifyCheckpoint does). Errors: ones matching passport.ErrInvalid.
func ParseCheckpoint(b []byte) (*LogCheckpoint, error) {
	n, err := note.Open(b, note.VerifierList())
	var unverified *note.UnverifiedNoteError
	if errors.As(err, &unverified) {
		n, err = unverified.Note, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: not a signed note: %v", passport.ErrInvalid, err)
	}
	c, err := tlog.ParseCheckpoint(n.Text)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", passport.ErrInvalid, err)
	}
	return &LogCheckpoint{Origin: c.Origin, Size: c.Size, Root: c.Root, Note: b}, nil
}

// VerifyCheckpoint verifies a checkpoint note offline with keys (from a
// key history, KeyHistory, or a JWK set): it must carry a valid Ed25519
// signature named by its origin by one of them that is not revoked (a
// note holds no time, so nothing shows it was signed before a
// revocation); a retired key is accepted for what it signed while active.
// Errors: ones matching passport.ErrInvalid for what is not a checkpoint
// or is not signed by one of keys.
func VerifyCheckpoint(b []byte, keys []passport.Key) (*LogCheckpoint, error) {
	c, err := ParseCheckpoint(b)
	if err != nil {
		return nil, err
	}
	var vs []note.Verifier
	for _, k := range keys {
		if k.Alg() != passport.AlgEdDSA || k.Status() == passport.KeyRevoked {
			continue
		}
		v, err := tlog.Ed25519Verifier(c.Origin, k.Public())
		if err != nil {
			return nil, fmt.Errorf("%w: %v", passport.ErrInvalid, err)
		}
		vs = append(vs, v)
	}
	n, _, err := tlog.Open(b, note.VerifierList(vs...))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", passport.ErrInvalid, err)
	}
	c.Verified = true
	for _, s := range n.UnverifiedSigs {
		c.Cosigners = append(c.Cosigners, s.Name)
	}
	return c, nil
}

// LogCheckpoint fetches the server's latest checkpoint note (GET
// /swarmscore/log/checkpoint), parsed but not verified: VerifyCheckpoint
// it against the server's key history.
func (c *Client) LogCheckpoint(ctx context.Context) (*LogCheckpoint, error) {
	_, b, err := c.do(ctx, http.MethodGet, LogCheckpointPath, nil, nil, "", false, nil)
	if err != nil {
		return nil, err
	}
	return ParseCheckpoint(b)
}

// Tile fetches a tile of the server's log (C2SP tlog-tiles, under
// /swarmscore/log/): width hashes of level at index.
func (c *Client) Tile(ctx context.Context, level int, index uint64, width int) ([]byte, error) {
	t := tlog.Tile{Level: level, Index: index, Width: width}
	_, b, err := c.do(ctx, http.MethodGet, "/swarmscore/log/"+t.Path(), nil, nil, "", false, nil)
	if err != nil {
		return nil, err
	}
	if len(b) != width*tlog.HashSize {
		return nil, fmt.Errorf("client: tile %s has %d bytes, want %d", t.Path(), len(b), width*tlog.HashSize)
	}
	return b, nil
}

// tileReader reads a log's hashes from its tiles, as of a tree size.
type tileReader struct {
	c     *Client
	size  uint64
	cache map[tlog.Tile][]byte
}

func (r *tileReader) Hashes(ctx context.Context, level int, from, to uint64) ([][]byte, error) {
	entries := r.size
	for range level {
		entries /= tlog.TileWidth
	}
	out := make([][]byte, 0, to-from)
	for i := from; i < to; {
		idx := i / tlog.TileWidth
		width := int(min(entries-idx*tlog.TileWidth, tlog.TileWidth))
		t := tlog.Tile{Level: level, Index: idx, Width: width}
		b, ok := r.cache[t]
		if !ok {
			var err error
			if b, err = r.c.Tile(ctx, level, idx, width); err != nil {
				return nil, err
			}
			r.cache[t] = b
		}
		for ; i < to && i/tlog.TileWidth == idx; i++ {
			off := int(i%tlog.TileWidth) * tlog.HashSize
			if off+tlog.HashSize > len(b) {
				return nil, fmt.Errorf("client: tile %s does not hold hash %d", t.Path(), i)
			}
			out = append(out, b[off:off+tlog.HashSize])
		}
	}
	return out, nil
}

// ProveConsistency checks, from the server's tiles, that the log of the
// newer checkpoint extends the log of the older (RFC 9162 consistency,
// verified with transparency-dev/merkle): the roots of both are
// recomputed from the tiles of the newer, and a proof built from the same
// tiles is checked against the two checkpoints' roots. The checkpoints
// must be of the same origin and verified by the caller. Errors: ones
// matching passport.ErrInvalid when the log does not extend old, a
// *Problem or a transport error when tiles cannot be fetched.
func (c *Client) ProveConsistency(ctx context.Context, old, new *LogCheckpoint) error {
	if old.Origin != new.Origin {
		return fmt.Errorf("%w: the checkpoints are of two logs (%q and %q)", passport.ErrInvalid, old.Origin, new.Origin)
	}
	if old.Size > new.Size {
		old, new = new, old
	}
	r := &tileReader{c: c, size: new.Size, cache: map[tlog.Tile][]byte{}}
	root, err := tlog.RootHash(ctx, r, new.Size)
	if err != nil {
		return err
	}
	if string(root) != string(new.Root) {
		return fmt.Errorf("%w: the server's tiles do not hash to the root of its checkpoint of size %d", passport.ErrInvalid, new.Size)
	}
	p, err := tlog.ConsistencyProof(ctx, r, old.Size, new.Size)
	if err != nil {
		return err
	}
	if err := tlog.VerifyConsistency(old.Size, new.Size, p, old.Root, new.Root); err != nil {
		return fmt.Errorf("%w: %v", passport.ErrInvalid, err)
	}
	return nil
}
