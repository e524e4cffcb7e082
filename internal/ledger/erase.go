package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/jcsstr"
)

// An erasure (GDPR Art. 17, spec §11.4) replaces an agent's id with an
// irreversible pseudonym everywhere, while every chain keeps verifying.
//
// A record's hash covers its content, and the content names agents (the
// chain's agent, a buyer, a correction's agents), so after the rename the
// content rebuilt from the rows is not the content that was hashed. Every
// record whose content named the agent is therefore sealed: the walk no
// longer recomputes its link (it was verified when the erasure was made,
// and a changed hash still breaks the next link or the head), but checks
// instead that SHA-256 of its content as rebuilt now — pseudonym in place —
// is one of the digests the erasure committed to. The erasure itself is a
// record appended to the pseudonym's chain, whose content commits to those
// digests, so a sealed record whose row is altered afterwards still breaks
// the chain. A record sealed by an earlier erasure is sealed again when a
// later one renames another party of it.

// ErasureType is the type a ledger_records row gives an erasure's record:
// not an event type, so no event row is looked for.
const ErasureType Type = "erasure"

// Erasure is a stored erasure: it names the pseudonym, never the erased id.
type Erasure struct {
	ID        string
	Pseudonym string
	// Identity commits to the erased id without naming it: a salted
	// SHA-256 in hex whose opening (the salt) only the requester is given,
	// so that the agent can later prove it was the erased one.
	Identity string
	By       string
	At       time.Time
	// Digests are the sealed contents' SHA-256, sorted: what the erasure's
	// record commits to.
	Digests []Hash
}

// Commitment is SHA-256 over the sorted digests: the "sealed" member of the
// erasure's record.
func (e *Erasure) Commitment() Hash {
	h := sha256.New()
	for _, d := range e.Digests {
		h.Write(d[:])
	}
	var out Hash
	h.Sum(out[:0])
	return out
}

// AppendCanonical appends the canonical content of the erasure's record at
// position seq of the pseudonym's chain: RFC 8785 canonical JSON whose
// "erasure" member no event or correction record has.
func (e *Erasure) AppendCanonical(dst []byte, seq int64) []byte {
	c := e.Commitment()
	dst = append(dst, `{"agent_id":`...)
	dst = jcsstr.Append(dst, e.Pseudonym)
	dst = append(dst, `,"at":`...)
	dst = appendJSONTime(dst, e.At)
	dst = append(dst, `,"by":`...)
	dst = jcsstr.Append(dst, e.By)
	dst = append(dst, `,"erasure":`...)
	dst = jcsstr.Append(dst, e.ID)
	dst = append(dst, `,"identity":`...)
	dst = jcsstr.Append(dst, e.Identity)
	dst = append(dst, `,"sealed":"`...)
	dst = hex.AppendEncode(dst, c[:])
	dst = append(dst, `","sealed_count":`...)
	dst = strconv.AppendInt(dst, int64(len(e.Digests)), 10)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	return append(dst, '}')
}

// LinkErasure returns the chain hash of the erasure's record at seq of the
// pseudonym's chain, whose predecessor's hash is prev.
func (c *Chainer) LinkErasure(prev Hash, seq int64, e *Erasure) Hash {
	c.buf = append(c.buf[:0], prev[:]...)
	c.buf = e.AppendCanonical(c.buf, seq)
	return sha256.Sum256(c.buf)
}

// contentOf is the canonical content of a chain row's record as its rows
// give it back now (a report rebuilt from its event row, or a correction).
func (c *Chainer) contentOf(r *ChainRow) []byte {
	if r.Record.Type == SummaryType {
		if r.Summary == nil {
			return nil
		}
		c.buf = r.Summary.AppendCanonical(c.buf[:0])
		return c.buf
	}
	if r.Record.CorrectionID != "" {
		c.buf = r.Correction.AppendCanonical(c.buf[:0], r.AgentID, r.Record.Seq)
	} else {
		rec := RebuildRecord(&r.Record, &r.Event)
		c.buf = rec.AppendCanonical(c.buf[:0])
	}
	return c.buf
}

// ErasureRequest asks to erase one agent.
type ErasureRequest struct {
	AgentID   string
	Pseudonym string // chosen at random by the caller; never derived from AgentID
	Identity  string // the salted commitment to AgentID (Erasure.Identity)
	ID        string // the erasure's id
	By        string
	At        time.Time
}

// ScopedRow is a record an erasure affects, as the walk reads it, with the
// stored hash of the record before it in its chain (zero for the first).
type ScopedRow struct {
	ChainRow
	Prev Hash
}

// ErasureScope is what an erasure is decided against, loaded in the
// transaction that writes it: every record whose content names the agent
// (its whole chain, the reports of events it bought, the corrections that
// moved events to or from it or whose reason or author names it, as
// NamesID tells), the agent's head, and the digests of the
// erasures that sealed any of those records before.
type ErasureScope struct {
	Head  Head
	Found bool // the agent is registered
	// Erased is true when the agent is an earlier erasure's pseudonym.
	Erased bool
	// Taken is true when the pseudonym names an agent or an erasure, or
	// the erasure id is in use.
	Taken   bool
	Records []ScopedRow
	Sealed  map[string][]Hash // earlier erasures' digests, by erasure id
}

// ErasurePlan is what a decided erasure writes, in one transaction: rename
// the agent to the pseudonym everywhere, mark Sealed records sealed by the
// erasure, store the erasure and append its record to the pseudonym's
// chain.
type ErasurePlan struct {
	Erasure Erasure
	// Sealed are the records to mark, named as they will be after the
	// rename.
	Sealed []ChainRecord
	// Record is the erasure's record in the pseudonym's chain, and Head
	// that chain's head after it.
	Record ChainRecord
	Head   Head
}

// DecideErasure checks that every record the erasure affects is intact —
// an unsealed one by its link, a sealed one by its digest — and returns the
// plan. Errors: ErrInvalid for a malformed request or a pseudonym equal to
// the id; ErrNotFound for an unknown agent; ErrConflict for a pseudonym
// (erased already), a pseudonym or id in use, or when an affected record is broken (repair the chain
// first: sealing it would hide the break).
func DecideErasure(req ErasureRequest, sc ErasureScope) (ErasurePlan, error) {
	for _, f := range []struct{ name, v string }{{"agent_id", req.AgentID}, {"pseudonym", req.Pseudonym}, {"id", req.ID}, {"by", req.By}} {
		if err := CheckID(f.name, f.v); err != nil {
			return ErasurePlan{}, err
		}
	}
	switch {
	case len(req.Identity) != 2*sha256.Size || !isLowerHex(req.Identity):
		return ErasurePlan{}, fieldErr("identity", "must be a SHA-256 in lower-case hex")
	case req.Pseudonym == req.AgentID:
		return ErasurePlan{}, fieldErr("pseudonym", "must differ from the erased id")
	case req.At.IsZero():
		return ErasurePlan{}, fieldErr("at", "is required")
	case !sc.Found:
		return ErasurePlan{}, fmt.Errorf("%w: agent %q", errkind.ErrNotFound, req.AgentID)
	case sc.Erased:
		return ErasurePlan{}, fmt.Errorf("%w: agent %q is the pseudonym of an erased agent", errkind.ErrConflict, req.AgentID)
	case sc.Taken:
		return ErasurePlan{}, fmt.Errorf("%w: the pseudonym or the erasure id is already in use", errkind.ErrConflict)
	}
	x, p := req.AgentID, req.Pseudonym
	rename := func(s string) string {
		if s == x {
			return p
		}
		return s
	}
	var chain Chainer
	plan := ErasurePlan{Erasure: Erasure{ID: req.ID, Pseudonym: p, Identity: req.Identity, By: req.By, At: req.At.UTC().Truncate(Resolution)}}
	seen := map[Hash]bool{}
	for i := range sc.Records {
		r := sc.Records[i].ChainRow
		lost := !r.HasEvent
		switch {
		case r.Record.Type == SummaryType:
			lost = r.Summary == nil
		case r.Record.CorrectionID != "":
			lost = !r.HasCorrection
		}
		if !r.HasRecord || lost {
			return ErasurePlan{}, fmt.Errorf("%w: record %s/%d has lost its row; repair the chain before erasing", errkind.ErrConflict, r.AgentID, r.Record.Seq)
		}
		content := chain.contentOf(&r)
		if by := r.Record.SealedBy; by != "" {
			if !slices.Contains(sc.Sealed[by], sha256.Sum256(content)) {
				return ErasurePlan{}, fmt.Errorf("%w: sealed record %s/%d does not match erasure %s; repair the chain before erasing", errkind.ErrConflict, r.AgentID, r.Record.Seq, by)
			}
		} else if h := Link(sc.Records[i].Prev, content); !bytes.Equal(h[:], r.StoredHash) {
			return ErasurePlan{}, fmt.Errorf("%w: record %s/%d is broken; repair the chain before erasing", errkind.ErrConflict, r.AgentID, r.Record.Seq)
		}
		// The same record as its rows will give it back after the rename.
		r.AgentID, r.Record.AgentID = rename(r.AgentID), rename(r.Record.AgentID)
		r.Event.Event.AgentID, r.Event.Event.BuyerID = rename(r.Event.Event.AgentID), rename(r.Event.Event.BuyerID)
		if r.Event.Corrected != nil {
			cur := *r.Event.Corrected
			cur.AgentID = rename(cur.AgentID)
			r.Event.Corrected = &cur
		}
		r.Correction.FromAgent, r.Correction.ToAgent, r.Correction.AgentID = rename(r.Correction.FromAgent), rename(r.Correction.ToAgent), rename(r.Correction.AgentID)
		r.Correction.Reason, r.Correction.By = ReplaceID(r.Correction.Reason, x, p), ReplaceID(r.Correction.By, x, p)
		if r.Summary != nil {
			s := *r.Summary
			s.AgentID = rename(s.AgentID)
			r.Summary = &s
		}
		d := sha256.Sum256(chain.contentOf(&r))
		if !seen[d] {
			seen[d] = true
			plan.Erasure.Digests = append(plan.Erasure.Digests, d)
		}
		sealed := r.Record
		sealed.SealedBy = req.ID
		plan.Sealed = append(plan.Sealed, sealed)
	}
	slices.SortFunc(plan.Erasure.Digests, func(a, b Hash) int { return bytes.Compare(a[:], b[:]) })
	seq := sc.Head.Seq + 1
	hash := chain.LinkErasure(sc.Head.Hash, seq, &plan.Erasure)
	plan.Record = ChainRecord{AgentID: p, Seq: seq, Type: ErasureType, EventID: req.ID, Hash: hash}
	plan.Head = Head{Seq: seq, Hash: hash}
	return plan, nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ReplaceID returns s with every occurrence of id that stands as a whole
// identifier replaced by with: an occurrence counts when the bytes around
// it are not letters, digits, '.', '_' or '-' (a ':' separates, so the
// principal "agent:ID" names ID). Dots that no other identifier byte
// follows (or, before it, precedes) are punctuation, not part of an id:
// "filed by ID." and "…ID" name ID, "ID.v2" does not. Free text — a
// correction's reason, an appeal's statement — is renamed with it when an
// agent is erased, so a doubt is settled towards renaming.
func ReplaceID(s, id, with string) string {
	if id == "" {
		return s
	}
	var b []byte
	last := 0
	for i := 0; i+len(id) <= len(s); {
		j := indexFrom(s, id, i)
		if j < 0 {
			break
		}
		end := j + len(id)
		if idStarts(s, j) && idEnds(s, end) {
			b = append(b, s[last:j]...)
			b = append(b, with...)
			last = end
			i = end
			continue
		}
		i = j + 1
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

func indexFrom(s, sub string, from int) int {
	if i := strings.Index(s[from:], sub); i >= 0 {
		return from + i
	}
	return -1
}

// idStarts reports whether an id may start at s[j]: what precedes it,
// past any dots, is the start of s or a byte no id has.
func idStarts(s string, j int) bool {
	for j > 0 && s[j-1] == '.' {
		j--
	}
	return j == 0 || !wordByte(s[j-1])
}

// idEnds reports whether an id may end before s[end]: what follows it,
// past any dots, is the end of s or a byte no id has.
func idEnds(s string, end int) bool {
	for end < len(s) && s[end] == '.' {
		end++
	}
	return end == len(s) || !wordByte(s[end])
}

func wordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// NamesAgent reports whether r, a record of another agent's chain, names
// agent x in its content (an erasure of x must seal it): a report whose
// buyer is x, or a correction that moves an event from or to x or names x
// in its reason or actor.
func (r *ChainRow) NamesAgent(x string) bool {
	if r.Record.CorrectionID != "" {
		c := &r.Correction
		return c.FromAgent == x || c.ToAgent == x || NamesID(c.Reason, x) || NamesID(c.By, x)
	}
	return r.Event.Event.BuyerID == x
}

// NamesID reports whether ReplaceID would change s.
func NamesID(s, id string) bool { return ReplaceID(s, id, "\x00") != s }
