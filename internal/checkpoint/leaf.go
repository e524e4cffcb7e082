package checkpoint

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Leaf is one agent's hash chain head as a checkpoint commits to it: the
// agent, the seq of its last record (0 for an agent without records) and
// that record's chain hash (ledger.Link; the zero hash at seq 0).
//
// A leaf whose agent was erased (GDPR Art. 17) keeps its place in the tree
// and the leaf hash the checkpoint committed to (ErasedHash), while AgentID
// becomes the pseudonym: the root still verifies, and Seq and Hash still
// say where the pseudonym's chain stood, but the leaf no longer proves the
// id it was made from. Such a leaf is out of agent id order.
type Leaf struct {
	AgentID    string
	Seq        int64
	Hash       ledger.Hash
	Erased     bool
	ErasedHash Hash
}

// maxAgentIDLen is ledger.ValidID's bound on an id.
const maxAgentIDLen = 128

// maxLeafSize is the longest leaf encoding: the longest valid agent id.
const maxLeafSize = 2 + maxAgentIDLen + 8 + ledger.HashSize

// Validate reports, matching errkind.ErrInvalid, a leaf no ledger chain can
// have: an agent id outside ledger.ValidID's alphabet and length, or a
// negative seq.
func (l Leaf) Validate() error {
	switch {
	case !ledger.ValidID(l.AgentID):
		return fmt.Errorf("%w: leaf agent id %s must be 1 to %d characters from [A-Za-z0-9._:-]", errkind.ErrInvalid, quote(l.AgentID), maxAgentIDLen)
	case l.Seq < 0:
		return fmt.Errorf("%w: leaf of agent %s has seq %d, below 0", errkind.ErrInvalid, l.AgentID, l.Seq)
	}
	return nil
}

// AppendBinary appends the leaf's encoding, the data RFC 6962 hashes for it:
// the agent id's length as a big-endian uint16, the id's bytes, Seq as a
// big-endian uint64 and the 32 bytes of Hash. The length prefix makes the
// encoding injective (no two leaves share one) although ids vary in length.
// It is stable across versions: changing it changes every root. An invalid
// leaf (Validate) matches errkind.ErrInvalid and appends nothing.
func (l Leaf) AppendBinary(dst []byte) ([]byte, error) {
	if err := l.Validate(); err != nil {
		return dst, err
	}
	return l.appendBinary(dst), nil
}

func (l *Leaf) appendBinary(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(l.AgentID)))
	dst = append(dst, l.AgentID...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(l.Seq))
	return append(dst, l.Hash[:]...)
}

// MerkleHash is the leaf's RFC 6962 leaf hash, SHA-256(0x00 || encoding), as
// the tree and inclusion proofs use it. An invalid leaf matches
// errkind.ErrInvalid.
func (l Leaf) MerkleHash() (Hash, error) {
	if err := l.Validate(); err != nil {
		return Hash{}, err
	}
	return l.merkleHash(), nil
}

// merkleHash assembles 0x00 || encoding in an array, so that hashing a
// hundred thousand leaves allocates nothing per leaf.
func (l *Leaf) merkleHash() Hash {
	if l.Erased {
		return l.ErasedHash
	}
	var b [1 + maxLeafSize]byte
	data := l.appendBinary(b[:1])
	return sha256.Sum256(data)
}

// checkLeaf validates leaves[i] and its order after leaves[*last], the
// previous leaf not erased (none when *last is -1), and moves *last.
func checkLeaf(leaves []Leaf, i int, last *int) error {
	if err := leaves[i].Validate(); err != nil {
		return fmt.Errorf("leaf %d: %w", i, err)
	}
	if leaves[i].Erased {
		return nil
	}
	j := *last
	*last = i
	if j < 0 {
		return nil
	}
	switch prev, cur := leaves[j].AgentID, leaves[i].AgentID; {
	case cur == prev:
		return fmt.Errorf("%w: agent %s has two leaves (%d and %d); a checkpoint names each agent once", errkind.ErrInvalid, cur, j, i)
	case cur < prev:
		return fmt.Errorf("%w: leaf %d (agent %s) sorts before leaf %d (agent %s); leaves must be in agent id byte order", errkind.ErrInvalid, i, cur, j, prev)
	}
	return nil
}

// CheckLeaves reports, matching errkind.ErrInvalid, the first reason leaves
// cannot form a checkpoint: an invalid leaf (Validate), or leaves other
// than erased ones not in strictly increasing agent id byte order
// (unsorted, or an agent twice).
func CheckLeaves(leaves []Leaf) error {
	last := -1
	for i := range leaves {
		if err := checkLeaf(leaves, i, &last); err != nil {
			return err
		}
	}
	return nil
}

// NewTree builds the Merkle tree over leaves, which must pass CheckLeaves
// (its errors match errkind.ErrInvalid). The tree holds leaf hashes, not
// leaves: leaves may be reused afterwards.
func NewTree(leaves []Leaf) (*Tree, error) {
	if len(leaves) > MaxInteger {
		return nil, fmt.Errorf("%w: %d leaves, more than a checkpoint can count", errkind.ErrInvalid, len(leaves))
	}
	hashes := make([]Hash, len(leaves))
	last := -1
	for i := range leaves {
		if err := checkLeaf(leaves, i, &last); err != nil {
			return nil, err
		}
		hashes[i] = leaves[i].merkleHash()
	}
	return newTreeFromHashes(hashes), nil
}

// Find returns the index of agentID's leaf in leaves, in the order
// CheckLeaves requires, and whether it is there: the index to Prove.
func Find(leaves []Leaf, agentID string) (int64, bool) {
	i, ok := slices.BinarySearchFunc(leaves, agentID, func(l Leaf, id string) int { return strings.Compare(l.AgentID, id) })
	if ok {
		return int64(i), true
	}
	// An erased leaf out of order can mislead the search.
	i = slices.IndexFunc(leaves, func(l Leaf) bool { return l.AgentID == agentID })
	return int64(i), i >= 0
}

// quote renders untrusted text for an error message: Go-quoted, cut to 64
// bytes.
func quote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "…"
	}
	return strconv.Quote(s)
}
