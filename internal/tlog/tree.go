package tlog

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// TileHeight is the height of a tile (C2SP tlog-tiles): 8 levels, 256
// hashes in a full tile.
const (
	TileHeight = 8
	TileWidth  = 1 << TileHeight
)

// HashSize is the size of every hash of the log (SHA-256).
const HashSize = sha256.Size

// hasher is RFC 6962's (SHA-256, 0x00 leaf and 0x01 node prefixes).
var hasher = rfc6962.DefaultHasher

var rangeFactory = compact.RangeFactory{Hash: hasher.HashChildren}

// LeafHash is the RFC 6962 hash of a leaf's data: SHA-256(0x00 || data).
func LeafHash(data []byte) []byte { return hasher.HashLeaf(data) }

// EmptyRoot is the root of the empty log: SHA-256 of nothing.
func EmptyRoot() []byte { return hasher.EmptyRoot() }

// Reader reads the stored hashes of a log: at tile level 0 the leaf
// hashes, at tile level L >= 1 the hashes of the complete subtrees of
// 256^L leaves, by index. It returns exactly to-from hashes of HashSize
// bytes, or an error (ErrNotFound when some are not stored).
type Reader interface {
	Hashes(ctx context.Context, level int, from, to uint64) ([][]byte, error)
}

// nodeHash is the hash of the perfect subtree id, folded from the stored
// hashes of the tile level at or below it.
func nodeHash(ctx context.Context, r Reader, id compact.NodeID) ([]byte, error) {
	level := int(id.Level / TileHeight)
	shift := id.Level % TileHeight
	from := id.Index << shift
	hs, err := r.Hashes(ctx, level, from, from+1<<shift)
	if err != nil {
		return nil, err
	}
	return foldPerfect(hs)
}

// foldPerfect is the root of a perfect subtree given its 2^k hashes of one
// level.
func foldPerfect(hs [][]byte) ([]byte, error) {
	if len(hs) == 1 {
		return hs[0], nil
	}
	cr := rangeFactory.NewEmptyRange(0)
	for _, h := range hs {
		if err := cr.Append(h, nil); err != nil {
			return nil, err
		}
	}
	return cr.GetRootHash(nil)
}

func nodeHashes(ctx context.Context, r Reader, ids []compact.NodeID) ([][]byte, error) {
	out := make([][]byte, len(ids))
	for i, id := range ids {
		h, err := nodeHash(ctx, r, id)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// RootHash is the RFC 6962 root of the log's first size leaves.
func RootHash(ctx context.Context, r Reader, size uint64) ([]byte, error) {
	if size == 0 {
		return EmptyRoot(), nil
	}
	hs, err := nodeHashes(ctx, r, compact.RangeNodes(0, size, nil))
	if err != nil {
		return nil, err
	}
	cr, err := rangeFactory.NewRange(0, size, hs)
	if err != nil {
		return nil, err
	}
	return cr.GetRootHash(nil)
}

// ConsistencyProof is the RFC 9162 consistency proof from the log at size1
// to the log at size2, empty from size 0. Errors: ErrInvalid unless
// size1 <= size2.
func ConsistencyProof(ctx context.Context, r Reader, size1, size2 uint64) ([][]byte, error) {
	if size1 > size2 {
		return nil, fmt.Errorf("%w: a consistency proof goes from a smaller tree to a larger one, not from %d to %d", errkind.ErrInvalid, size1, size2)
	}
	if size1 == 0 {
		// Every log extends the empty one: the proof is empty (RFC 9162
		// §2.1.4; C2SP tlog-witness sends none for an old size of 0).
		return [][]byte{}, nil
	}
	n, err := proof.Consistency(size1, size2)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errkind.ErrInvalid, err)
	}
	return rehash(ctx, r, n)
}

// InclusionProof is the RFC 9162 inclusion proof of leaf index in the log
// at size. Errors: ErrInvalid unless index < size.
func InclusionProof(ctx context.Context, r Reader, index, size uint64) ([][]byte, error) {
	if index >= size {
		return nil, fmt.Errorf("%w: leaf %d is not in a tree of %d leaves", errkind.ErrInvalid, index, size)
	}
	n, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errkind.ErrInvalid, err)
	}
	return rehash(ctx, r, n)
}

func rehash(ctx context.Context, r Reader, n proof.Nodes) ([][]byte, error) {
	hs, err := nodeHashes(ctx, r, n.IDs)
	if err != nil {
		return nil, err
	}
	return n.Rehash(hs, hasher.HashChildren)
}

// VerifyConsistency checks a consistency proof between two roots with
// transparency-dev/merkle; from size 0 the proof must be empty and root1
// the empty root. Errors: ErrInvalid (the proof does not prove it).
func VerifyConsistency(size1, size2 uint64, p [][]byte, root1, root2 []byte) error {
	if size1 == 0 {
		if len(p) > 0 || string(root1) != string(EmptyRoot()) || size2 < size1 {
			return fmt.Errorf("%w: a log of 0 leaves has the empty root and an empty consistency proof", errkind.ErrInvalid)
		}
		return nil
	}
	if err := proof.VerifyConsistency(hasher, size1, size2, p, root1, root2); err != nil {
		return fmt.Errorf("%w: the log at %d leaves is not a prefix of the log at %d: %s", errkind.ErrInvalid, size1, size2, proofError(err))
	}
	return nil
}

// proofError says why a proof failed, hashes in base64.
func proofError(err error) string {
	var m proof.RootMismatchError
	if errors.As(err, &m) {
		return fmt.Sprintf("the proof leads to root %s, not %s", base64.StdEncoding.EncodeToString(m.CalculatedRoot), base64.StdEncoding.EncodeToString(m.ExpectedRoot))
	}
	return err.Error()
}

// VerifyInclusion checks an inclusion proof of a leaf's data at index
// against a root with transparency-dev/merkle. Errors: ErrInvalid.
func VerifyInclusion(index, size uint64, leafData []byte, p [][]byte, root []byte) error {
	if err := proof.VerifyInclusion(hasher, index, size, LeafHash(leafData), p, root); err != nil {
		return fmt.Errorf("%w: leaf %d is not in the log of %d leaves: %s", errkind.ErrInvalid, index, size, proofError(err))
	}
	return nil
}

// Store is what Integrate writes to: the number of subtree hashes stored
// at a tile level, and a way to add more.
type Store interface {
	Reader
	// Count returns how many hashes tile level level >= 1 holds (they
	// are stored from index 0 without gaps).
	Count(ctx context.Context, level int) (uint64, error)
	// Add stores hashes at tile level level >= 1 from index from on;
	// hashes already stored there are left as they are (they are the same:
	// leaves never change).
	Add(ctx context.Context, level int, from uint64, hashes [][]byte) error
}

// integrateChunk bounds the hashes of the level below read at once.
const integrateChunk = 64 * TileWidth

// Integrate stores the hash of every complete subtree of 256^L leaves
// (L >= 1) within the first size leaves that is not stored yet, level by
// level, each from the level below. Several processes may integrate at
// once: they store the same hashes.
func Integrate(ctx context.Context, s Store, size uint64) error {
	span := uint64(TileWidth)
	for level := 1; size/span > 0; level++ {
		need := size / span
		have, err := s.Count(ctx, level)
		if err != nil {
			return err
		}
		for have < need {
			n := min(need-have, integrateChunk/TileWidth)
			below, err := s.Hashes(ctx, level-1, have*TileWidth, (have+n)*TileWidth)
			if err != nil {
				return err
			}
			out := make([][]byte, n)
			for i := range out {
				if out[i], err = foldPerfect(below[i*TileWidth : (i+1)*TileWidth]); err != nil {
					return err
				}
			}
			if err := s.Add(ctx, level, have, out); err != nil {
				return err
			}
			have += n
		}
		if span > (1<<63)/TileWidth {
			break
		}
		span *= TileWidth
	}
	return nil
}
