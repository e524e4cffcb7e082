package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// MaxInteger is the largest tree size, checkpoint number and agent count:
// JSON numbers are doubles for JCS, JavaScript and most verifiers, exact
// for every integer up to 2^53−1 and not above.
const MaxInteger = 1<<53 - 1

// ErrProof is matched by every inclusion proof that does not verify. It
// matches errkind.ErrInvalid.
var ErrProof = fmt.Errorf("%w: inclusion proof does not verify", errkind.ErrInvalid)

// HashSize is the length of a Merkle tree hash.
const HashSize = sha256.Size

// Hash is a node of the Merkle tree: a leaf hash, an interior node or a root.
type Hash [HashSize]byte

// EmptyRoot is the root of the tree of no leaves (RFC 6962 §2.1: the hash of
// the empty string), the root of a checkpoint of an empty ledger.
var EmptyRoot = Hash(sha256.Sum256(nil))

// String is the lowercase hex of h.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// MarshalText renders h as 64 lowercase hex characters, so that a Hash in a
// struct encodes as a JSON string.
func (h Hash) MarshalText() ([]byte, error) { return hex.AppendEncode(nil, h[:]), nil }

// UnmarshalText accepts exactly 64 lowercase hex characters, the only form
// MarshalText produces, so that a hash has one spelling in a signed or
// archived document. Other input matches errkind.ErrInvalid.
func (h *Hash) UnmarshalText(b []byte) error {
	v, err := parseHash(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

func parseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*HashSize || !lowerHex(s) {
		return h, fmt.Errorf("%w: a hash must be %d lowercase hex characters, got %s", errkind.ErrInvalid, 2*HashSize, quote(s))
	}
	_, _ = hex.Decode(h[:], []byte(s)) // cannot fail: checked above
	return h, nil
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// hashNode is the RFC 6962 interior node hash SHA-256(0x01 || left || right).
// The message is assembled in an array rather than written to a hash.Hash so
// that building a large tree allocates nothing per node.
func hashNode(left, right *Hash) Hash {
	var b [1 + 2*HashSize]byte
	b[0] = 1
	copy(b[1:], left[:])
	copy(b[1+HashSize:], right[:])
	return sha256.Sum256(b[:])
}

// Tree is the RFC 6962 Merkle tree over a checkpoint's leaves, kept whole so
// that an inclusion proof for any leaf costs O(log n). Obtain one from
// NewTree (the zero Tree is not usable); a Tree is immutable and safe for
// concurrent use.
type Tree struct {
	// levels[0] holds the leaf hashes; levels[k+1][i] is the parent of
	// levels[k][2i] and levels[k][2i+1], or levels[k][2i] itself when that
	// node has no right sibling. Promoting an unpaired node unchanged yields
	// exactly RFC 6962's tree, whose left subtree always has the largest
	// power of two of leaves below n, and makes every audit path a walk up
	// the levels.
	levels [][]Hash
}

// newTreeFromHashes builds the levels over leaf hashes, which it keeps.
func newTreeFromHashes(leaves []Hash) *Tree {
	t := &Tree{levels: [][]Hash{leaves}}
	if len(leaves) < 2 {
		return t
	}
	// One allocation for every level above the leaves: they add up to
	// fewer than n + log2(n) hashes.
	total := 0
	for n := len(leaves); n > 1; n = (n + 1) / 2 {
		total += (n + 1) / 2
	}
	buf := make([]Hash, total)
	for prev := leaves; len(prev) > 1; {
		m := (len(prev) + 1) / 2
		next := buf[:m:m]
		buf = buf[len(next):]
		for i := 0; i+1 < len(prev); i += 2 {
			next[i/2] = hashNode(&prev[i], &prev[i+1])
		}
		if len(prev)%2 == 1 {
			next[len(next)-1] = prev[len(prev)-1]
		}
		t.levels = append(t.levels, next)
		prev = next
	}
	return t
}

// Size is the number of leaves.
func (t *Tree) Size() int64 { return int64(len(t.levels[0])) }

// Root is the RFC 6962 Merkle Tree Hash of the leaves: EmptyRoot for none.
func (t *Tree) Root() Hash {
	top := t.levels[len(t.levels)-1]
	if len(top) == 0 {
		return EmptyRoot
	}
	return top[0]
}

// MaxPathLen bounds an audit path: a tree of at most MaxInteger leaves has at
// most 53 levels above its leaves.
const MaxPathLen = 53

// Prove returns the inclusion proof (RFC 6962 §2.1.1 audit path, RFC 9162
// §2.1.3.1) of the leaf at index, in the tree's leaf order. An index outside
// [0, Size) matches errkind.ErrInvalid.
func (t *Tree) Prove(index int64) (Proof, error) {
	n := t.Size()
	if index < 0 || index >= n {
		return Proof{}, fmt.Errorf("%w: leaf index %d is outside a tree of %d leaves", errkind.ErrInvalid, index, n)
	}
	p := Proof{Index: index, Size: n, Path: make([]Hash, 0, len(t.levels)-1)}
	i := int(index)
	for _, level := range t.levels[:len(t.levels)-1] {
		// A node without a sibling was promoted: nothing to prove at
		// this level.
		if sib := i ^ 1; sib < len(level) {
			p.Path = append(p.Path, level[sib])
		}
		i /= 2
	}
	return p, nil
}

// Proof is an inclusion proof: the audit path from the leaf at Index to the
// root of a tree of Size leaves, nearest sibling first, as RFC 9162's
// inclusion_proof_v2 carries it. Size is what the prover claims; verifying
// against a checkpoint checks it against the signed agent count.
type Proof struct {
	Index int64
	Size  int64
	Path  []Hash
}

// rootFromPath is RFC 9162 §2.1.3.2: the root that leaf, at index in a tree
// of size leaves, has with path, or an error when path has the wrong length
// for that position.
func rootFromPath(index, size int64, leaf Hash, path []Hash) (Hash, error) {
	if size <= 0 || index < 0 || index >= size {
		return Hash{}, fmt.Errorf("%w: leaf index %d is outside a tree of %d leaves", ErrProof, index, size)
	}
	fn, sn := uint64(index), uint64(size-1)
	r := leaf
	for i := range path {
		if sn == 0 {
			return Hash{}, fmt.Errorf("%w: the path has %d hashes, more than leaf %d of %d needs", ErrProof, len(path), index, size)
		}
		if fn&1 == 1 || fn == sn {
			r = hashNode(&path[i], &r)
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			r = hashNode(&r, &path[i])
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 {
		return Hash{}, fmt.Errorf("%w: the path has %d hashes, fewer than leaf %d of %d needs", ErrProof, len(path), index, size)
	}
	return r, nil
}

// VerifyInclusion checks that p proves leaf to be the leaf at p.Index of the
// tree of size leaves whose root is root; root and size must come from a
// trusted source (a checkpoint whose signature verified), because an audit
// path alone does not fix the tree's size. It fails, matching ErrProof (and
// so errkind.ErrInvalid), when p.Size is not size, when the path has the
// wrong length for its position, or when it leads to another root: a proof
// of another leaf, another index or another tree. An invalid leaf matches
// errkind.ErrInvalid.
func VerifyInclusion(root Hash, size int64, leaf Leaf, p Proof) error {
	if p.Size != size {
		return fmt.Errorf("%w: the proof is for a tree of %d leaves, the checkpoint has %d", ErrProof, p.Size, size)
	}
	lh, err := leaf.MerkleHash()
	if err != nil {
		return err
	}
	got, err := rootFromPath(p.Index, p.Size, lh, p.Path)
	if err != nil {
		return err
	}
	if got != root {
		return fmt.Errorf("%w: agent %s at seq %d, leaf %d of %d, leads to root %s, not %s", ErrProof, leaf.AgentID, leaf.Seq, p.Index, p.Size, got, root)
	}
	return nil
}
