package audit

import (
	"encoding/base64"
	"fmt"
	"strconv"

	"golang.org/x/mod/sumdb/note"

	"github.com/swarmscore/swarmscore/internal/jcsstr"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/tlog"
	"github.com/swarmscore/swarmscore/passport"
)

// CodeLogInclusion: the bundle's log inclusion proof does not prove the
// audited agent's record to be in the transparency log of its checkpoint
// note, or the note does not verify under the keys given.
const CodeLogInclusion = "log_inclusion"

// LogInclusion proves the audited agent's record at Seq (its head when
// the bundle was built) to be leaf Index of the exporter's transparency
// log (issue 23) at the size of Note, a C2SP checkpoint note signed by the
// exporter's Ed25519 key: the leaf is the record's chain hash and Seq
// (ledger.LogLeaf), the proof RFC 9162's.
type LogInclusion struct {
	Note  []byte
	Index int64
	Seq   int64
	Proof [][]byte
}

// appendJSON writes the member's object: the note as a JSON string, the
// leaf index, the seq and the proof's hashes in standard base64.
func (l *LogInclusion) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"checkpoint":`...)
	dst = jcsstr.Append(dst, string(l.Note))
	dst = append(dst, `,"leaf_index":`...)
	dst = strconv.AppendInt(dst, l.Index, 10)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, l.Seq, 10)
	dst = append(dst, `,"inclusion_proof":[`...)
	for i, h := range l.Proof {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, h)
		dst = append(dst, '"')
	}
	return append(dst, "]}"...)
}

// logInclusion reads the member appendJSON writes.
func (s *scanner) logInclusion() (*LogInclusion, error) {
	l := &LogInclusion{}
	err := s.members("log_inclusion", []string{"checkpoint", "leaf_index", "seq", "inclusion_proof"}, nil, func(name string) error {
		var err error
		switch name {
		case "checkpoint":
			var n string
			n, err = s.str("log_inclusion.checkpoint")
			if err == nil && len(n) > tlog.MaxNoteSize {
				err = s.fail("log_inclusion.checkpoint: a note is at most %d bytes", tlog.MaxNoteSize)
			}
			l.Note = []byte(n)
		case "leaf_index":
			l.Index, err = s.integer("log_inclusion.leaf_index")
		case "seq":
			l.Seq, err = s.integer("log_inclusion.seq")
		case "inclusion_proof":
			err = s.array("log_inclusion.inclusion_proof", func(i int) error {
				v, err := s.str("log_inclusion.inclusion_proof")
				if err != nil {
					return err
				}
				h, err := base64.StdEncoding.Strict().DecodeString(v)
				if err != nil || len(h) != tlog.HashSize || i >= 64 {
					return s.fail("log_inclusion.inclusion_proof: at most 64 hashes of 32 bytes in standard base64")
				}
				l.Proof = append(l.Proof, h)
				return nil
			})
		}
		return err
	})
	return l, err
}

// checkLogInclusion checks the note's signature by one of the Ed25519
// keys given that is not revoked (a note carries no time: a revoked key's
// notes are all refused), and that the audited chain's record at Seq is
// leaf Index of the log at the note's size.
func checkLogInclusion(b *Bundle, keys Keys, r *Report) *Finding {
	l := b.Log
	if l == nil {
		return nil
	}
	fail := func(format string, args ...any) *Finding {
		return &Finding{Code: CodeLogInclusion, AgentID: b.AgentID, Seq: l.Seq, Message: fmt.Sprintf(format, args...)}
	}
	unverified, err := tlogCheckpointOf(l.Note)
	if err != nil {
		return fail("the log checkpoint: %v", err)
	}
	var vs []note.Verifier
	for _, k := range keys.history {
		if k.Alg() != passport.AlgEdDSA || k.Status() == passport.KeyRevoked {
			continue
		}
		v, err := tlog.Ed25519Verifier(unverified.Origin, k.Public())
		if err != nil {
			return fail("%v", err)
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return fail("the log checkpoint is signed by an Ed25519 key, and no key set or key history with one (not revoked) was given to check it")
	}
	_, c, err := tlog.Open(l.Note, note.VerifierList(vs...))
	if err != nil {
		return fail("the log checkpoint: %v", err)
	}
	chain := &b.Chains[0]
	i := l.Seq - chain.FromSeq
	if l.Seq < chain.FromSeq || i >= int64(len(chain.Records)) || l.Index < 0 {
		return fail("the proof is for record %d, which the audited chain does not hold", l.Seq)
	}
	leaf := ledger.LogLeaf{Hash: chain.Records[i].Hash, Seq: l.Seq}
	if err := tlog.VerifyInclusion(uint64(l.Index), c.Size, leaf.Data(), l.Proof, c.Root); err != nil {
		return fail("record %d is not leaf %d of the log %s of %d leaves: the record or the log was rewritten, or the proof is false (%v)", l.Seq, l.Index, c.Origin, c.Size, err)
	}
	r.LogSize, r.LogIndex = c.Size, l.Index
	return nil
}

// tlogCheckpointOf reads a note's checkpoint without its signatures, for
// its origin.
func tlogCheckpointOf(b []byte) (tlog.Checkpoint, error) {
	text, _, ok := cutNote(b)
	if !ok {
		return tlog.Checkpoint{}, fmt.Errorf("not a signed note")
	}
	return tlog.ParseCheckpoint(text)
}

// cutNote splits a signed note at the blank line before its signatures.
func cutNote(b []byte) (text string, sigs string, ok bool) {
	s := string(b)
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '\n' && s[i+1] == '\n' {
			return s[:i+1], s[i+2:], true
		}
	}
	return "", "", false
}
