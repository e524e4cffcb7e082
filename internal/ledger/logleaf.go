package ledger

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// LogLeafSize is the length of a log leaf's data: a chain hash and a
// chain position.
const LogLeafSize = HashSize + 8

// LogLeaf is a chain record as the transparency log holds it (issue 23,
// docs/FORMATS.md "Log leaves"): the record's chain hash and its position
// in its agent's chain, and nothing else. The agent is not named, so
// erasing one leaves its leaves as they were (a sealed record keeps its
// hash and seq), and pruning deletes records but never leaves: every leaf
// the log ever committed to stays.
type LogLeaf struct {
	Hash Hash
	Seq  int64
}

// Data is the leaf's bytes as the log hashes them (RFC 6962 leaf input):
// the 32-byte chain hash, then the seq as an 8-byte big-endian unsigned
// integer.
func (l LogLeaf) Data() []byte {
	b := make([]byte, LogLeafSize)
	copy(b, l.Hash[:])
	binary.BigEndian.PutUint64(b[HashSize:], uint64(l.Seq))
	return b
}

// ParseLogLeaf reads Data's bytes back. Errors: ErrInvalid for another
// length or a seq below 1.
func ParseLogLeaf(b []byte) (LogLeaf, error) {
	if len(b) != LogLeafSize {
		return LogLeaf{}, fmt.Errorf("%w: a log leaf is %d bytes, not %d", errkind.ErrInvalid, LogLeafSize, len(b))
	}
	var l LogLeaf
	copy(l.Hash[:], b)
	seq := binary.BigEndian.Uint64(b[HashSize:])
	if seq < 1 || seq > 1<<62 {
		return LogLeaf{}, fmt.Errorf("%w: a log leaf's seq %d is outside 1 to 2^62", errkind.ErrInvalid, seq)
	}
	l.Seq = int64(seq)
	return l, nil
}

// LoggedRecord is a chain record with the log index it was appended at.
type LoggedRecord struct {
	AgentID string
	Seq     int64
	Hash    Hash
	Type    Type
	EventID string
	// Index is the record's leaf index in the log; -1 when the record
	// has not been appended yet (a ledger from before the log whose
	// backfill has not reached it).
	Index int64
}

// Leaf is the record's log leaf.
func (r LoggedRecord) Leaf() LogLeaf { return LogLeaf{Hash: r.Hash, Seq: r.Seq} }

// LogCheckpoint is a signed checkpoint note of the log as stored: the size
// and root it commits to, when it was signed, and the note.
type LogCheckpoint struct {
	Size      int64
	Root      Hash
	Note      []byte
	CreatedAt time.Time
}

// Cosignature is a witness's cosignature of a checkpoint note: the name of
// the witness's key and its signature line ("— name base64", no newline).
type Cosignature struct {
	KeyName string
	Line    string
	At      time.Time
}
