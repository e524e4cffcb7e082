package ledger

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"iter"
	"slices"
	"strings"
)

// ChainRow is one step of a chain walk as a back end reads it. Rows with a
// record come in chain order: every record of an agent together, by seq,
// each with its agent's stored head and the event row its (type, id)
// names. A row without a record is an agent that has none.
type ChainRow struct {
	AgentID string
	// Registered is false when the agent has no agents row; HeadSeq and
	// HeadHash are its stored head otherwise (HeadHash as stored, possibly
	// of a wrong length).
	Registered bool
	HeadSeq    int64
	HeadHash   []byte
	// HasRecord is false for an agent without chain records.
	HasRecord bool
	// Record is the stored chain record (its Hash unused) and StoredHash
	// its hash as stored, possibly of a wrong length.
	Record     ChainRecord
	StoredHash []byte
	// HasEvent is false when no event row has the record's type and id.
	HasEvent bool
	Event    StoredEvent
	// HasCorrection is false when the record names a correction
	// (Record.CorrectionID) that has no row; Correction is that row.
	HasCorrection bool
	Correction    Correction
	// Summary is a summary record's content (SummaryType), as the walk,
	// an erasure's scope or a one-chain read finds it; nil otherwise.
	Summary *Summary
	// Anchor is the chain's anchor when a prune removed its first records
	// (Seq 0 otherwise), set by a one-chain read (CheckpointStore.Chain):
	// the first row's record then follows Anchor.Hash.
	Anchor Anchor
}

// EventLink is an event row with the chain record its seq names, as a back
// end reads it: every event row once, in any order.
type EventLink struct {
	Type    Type
	ID      string
	AgentID string
	Seq     int64
	// Linked is true when the agent has a record at Seq; RecordType and
	// RecordID are what that record names.
	Linked     bool
	RecordType Type
	RecordID   string
}

// VerifyChains walks every agent's hash chain as chains yields it and every
// event row as links yields them, and returns the first broken link of each
// damaged chain (in chain order; seq 0 means "before the first record").
// A link is broken when:
//   - a record's hash differs from SHA-256(previous stored hash || the
//     record's canonical content), rebuilt by RebuildRecord from the record
//     and its event row: an edit to the record, to a hashed field of the
//     row or to the stored hash breaks the link where it happened;
//   - a seq is missing, or the chain's end is not the agent's stored head;
//   - a record's event row is missing, is not at its latest record or
//     differs from it in status or void, or now belongs to another agent
//     although no later correction in this chain moved it there;
//   - a correction's row is missing or differs from its record;
//   - an event row names no record, or a record of another event;
//   - records exist for an agent that is not registered.
//
// The error is only for failing to read (the first error an iterator
// yields).
func VerifyChains(chains iter.Seq2[*ChainRow, error], links iter.Seq2[*EventLink, error], opts ...VerifyOption) (VerifyReport, error) {
	v := walker{broken: make(map[string]BrokenLink), moved: make(map[EventKey]movedRow), erasures: map[string]*erasureCheck{}}
	for _, o := range opts {
		o(&v)
	}
	for r, err := range chains {
		if err != nil {
			return VerifyReport{}, err
		}
		v.step(r)
	}
	v.end()
	for l, err := range links {
		if err != nil {
			return VerifyReport{}, err
		}
		v.link(l)
	}
	for id, e := range v.erasures {
		if !e.recorded {
			v.fail(e.Pseudonym, 0, id, "erasure %s has no record in the chain of %s (removed)", id, e.Pseudonym)
		}
	}
	for _, b := range v.broken {
		v.report.Broken = append(v.report.Broken, b)
	}
	slices.SortFunc(v.report.Broken, func(a, b BrokenLink) int { return strings.Compare(a.AgentID, b.AgentID) })
	return v.report, nil
}

// VerifyOption adds to what VerifyChains knows.
type VerifyOption func(*walker)

// WithErasures gives VerifyChains the stored erasures, every one of them:
// a sealed record is checked against the digests of the erasure that
// sealed it, and an erasure's record against its digests.
func WithErasures(es []Erasure) VerifyOption {
	return func(v *walker) {
		for _, e := range es {
			set := make(map[Hash]bool, len(e.Digests))
			for _, d := range e.Digests {
				set[d] = true
			}
			v.erasures[e.ID] = &erasureCheck{Erasure: e, digests: set}
		}
	}
}

// erasureCheck is an erasure as the walk uses it.
type erasureCheck struct {
	Erasure
	digests  map[Hash]bool
	recorded bool // its record was met in the walk
}

// walker holds one chain at a time.
type walker struct {
	erasures  map[string]*erasureCheck
	anchors   map[string]Anchor
	summaries map[string]map[int64]*Summary
	report    VerifyReport
	broken    map[string]BrokenLink

	agent      string
	started    bool
	registered bool
	headSeq    int64
	headHash   []byte
	prev       Hash
	expectSeq  int64
	chain      Chainer
	// moved are the events whose rows belong to another agent now, with
	// the first record of theirs in this chain: a later re-attribution
	// out of this chain must explain each.
	moved map[EventKey]movedRow
}

type movedRow struct {
	seq   int64
	agent string
}

// fail records a broken link, keeping the earliest of each chain.
func (v *walker) fail(agent string, seq int64, event, format string, args ...any) {
	if b, ok := v.broken[agent]; ok && b.Seq <= seq {
		return
	}
	v.broken[agent] = BrokenLink{AgentID: agent, Seq: seq, EventID: event, Reason: fmt.Sprintf(format, args...)}
}

func (v *walker) step(r *ChainRow) {
	if !v.started || r.AgentID != v.agent {
		v.end()
		v.report.Agents++
		v.started, v.agent, v.registered = true, r.AgentID, r.Registered
		v.headSeq, v.headHash = r.HeadSeq, append(v.headHash[:0], r.HeadHash...)
		v.prev, v.expectSeq = Hash{}, 1
		if a, ok := v.anchors[r.AgentID]; ok {
			v.prev, v.expectSeq = a.Hash, a.Seq+1
		}
		clear(v.moved)
		if !r.HasRecord {
			return
		}
		if !r.Registered {
			v.fail(r.AgentID, r.Record.Seq, r.Record.EventID, "chain records exist for an agent that is not registered")
		}
	}
	if !r.HasRecord {
		return
	}
	rec := &r.Record
	v.report.Records++
	if rec.Seq != v.expectSeq {
		v.fail(v.agent, v.expectSeq, "", "record seq %d is missing (next present is %d)", v.expectSeq, rec.Seq)
	}
	v.expectSeq = rec.Seq + 1
	row, cor := &r.Event, &r.Correction
	isCorrection := rec.CorrectionID != ""
	key := EventKey{rec.Type, rec.EventID}
	switch {
	case rec.Type == ErasureType:
		v.erasureRecord(r)
	case rec.Type == SummaryType:
		v.summaryRecord(r)
	case isCorrection && !r.HasCorrection:
		v.fail(v.agent, rec.Seq, rec.EventID, "correction %s recorded in the chain has no row (deleted)", rec.CorrectionID)
	case isCorrection && (cor.ID != rec.CorrectionID || cor.EventType != rec.Type || cor.EventID != rec.EventID || cor.ToStatus != rec.Status ||
		(v.agent != cor.FromAgent && v.agent != cor.ToAgent)):
		v.fail(v.agent, rec.Seq, rec.EventID, "correction %s differs from its chain record (altered outside the ledger)", rec.CorrectionID)
	case !r.HasEvent:
		v.fail(v.agent, rec.Seq, rec.EventID, "%s recorded in the chain has no row (deleted)", rec.Type)
	default:
		if rec.SealedBy != "" {
			e := v.erasures[rec.SealedBy]
			switch content := v.chain.contentOf(r); {
			case e == nil:
				v.fail(v.agent, rec.Seq, rec.EventID, "the record is sealed by erasure %s, which does not exist", rec.SealedBy)
			case !e.digests[sha256.Sum256(content)]:
				v.fail(v.agent, rec.Seq, rec.EventID, "sealed record differs from what erasure %s sealed: its %s row or correction was altered", rec.SealedBy, rec.Type)
			}
		} else {
			var got Hash
			if isCorrection {
				got, _ = v.chain.LinkCorrection(v.prev, v.agent, rec.Seq, cor)
			} else {
				canonical := RebuildRecord(rec, row)
				got, _ = v.chain.Link(v.prev, &canonical)
			}
			if !bytes.Equal(got[:], r.StoredHash) {
				v.fail(v.agent, rec.Seq, rec.EventID, "hash mismatch: the chain record, its %s row or its correction was altered outside the ledger", rec.Type)
			}
		}
		voids := isCorrection && cor.Action == ActionVoid
		switch current := row.CurrentAgent(); {
		case current != v.agent && isCorrection && cor.Action == ActionReattribute && cor.FromAgent == v.agent:
			delete(v.moved, key) // this chain moved it away: every earlier record of it is explained
		case current != v.agent:
			if _, ok := v.moved[key]; !ok {
				v.moved[key] = movedRow{rec.Seq, current}
			}
		case rec.Seq > row.Seq:
			v.fail(v.agent, rec.Seq, rec.EventID, "%s row is not at its latest chain record (it names seq %d)", rec.Type, row.Seq)
		case rec.Seq == row.Seq && row.CurrentStatus() != rec.Status:
			v.fail(v.agent, rec.Seq, rec.EventID, "%s row differs from its chain record (status %s, recorded %s; altered outside the ledger)",
				rec.Type, row.CurrentStatus(), rec.Status)
		case rec.Seq == row.Seq && row.IsVoided() != voids:
			v.fail(v.agent, rec.Seq, rec.EventID, "%s row differs from its chain record (void %v, recorded %v; altered outside the ledger)",
				rec.Type, row.IsVoided(), voids)
		}
	}
	// The next link is judged against the stored hash, so that one altered
	// record is reported where it is, not as every record after it.
	v.prev = Hash{}
	copy(v.prev[:], r.StoredHash)
}

// summaryRecord checks a summary record: its content is stored, and links
// (or, sealed by an erasure, is one the erasure committed to).
func (v *walker) summaryRecord(r *ChainRow) {
	rec := &r.Record
	r.Summary = v.summaries[v.agent][rec.Seq]
	switch {
	case r.Summary == nil:
		v.fail(v.agent, rec.Seq, rec.EventID, "summary record has no stored content (deleted)")
	case rec.SealedBy != "":
		e := v.erasures[rec.SealedBy]
		if e == nil || !e.digests[sha256.Sum256(v.chain.contentOf(r))] {
			v.fail(v.agent, rec.Seq, rec.EventID, "sealed summary record differs from what erasure %s sealed", rec.SealedBy)
		}
	default:
		if got := v.chain.LinkSummary(v.prev, r.Summary); !bytes.Equal(got[:], r.StoredHash) {
			v.fail(v.agent, rec.Seq, rec.EventID, "hash mismatch: the summary of pruned records was altered outside the ledger")
		}
	}
}

// erasureRecord checks an erasure's record: the erasure exists, names this
// chain's agent, and its content links.
func (v *walker) erasureRecord(r *ChainRow) {
	rec := &r.Record
	e := v.erasures[rec.EventID]
	switch {
	case e == nil:
		v.fail(v.agent, rec.Seq, rec.EventID, "erasure %s recorded in the chain has no row (deleted)", rec.EventID)
	case e.Pseudonym != v.agent:
		v.fail(v.agent, rec.Seq, rec.EventID, "erasure %s names %s, not this chain", rec.EventID, e.Pseudonym)
	default:
		e.recorded = true
		if got := v.chain.LinkErasure(v.prev, rec.Seq, &e.Erasure); !bytes.Equal(got[:], r.StoredHash) {
			v.fail(v.agent, rec.Seq, rec.EventID, "hash mismatch: erasure %s or its digests were altered outside the ledger", rec.EventID)
		}
	}
}

// end checks the chain just walked against its agent's head, and that
// every event it recorded that belongs to another agent now was moved there
// by a correction in it.
func (v *walker) end() {
	if !v.started {
		return
	}
	for k, m := range v.moved {
		v.fail(v.agent, m.seq, k.ID, "%s row belongs to agent %q, not to this chain, and no correction here moved it", k.Type, m.agent)
	}
	if !v.registered {
		return
	}
	last := v.expectSeq - 1
	if last != v.headSeq || !bytes.Equal(v.prev[:], v.headHash) {
		v.fail(v.agent, last, "", "chain ends at seq %d but the agent's head is seq %d with another hash (records removed or head altered)", last, v.headSeq)
	}
}

func (v *walker) link(l *EventLink) {
	v.report.Events++
	switch {
	case !l.Linked:
		v.fail(l.AgentID, l.Seq, l.ID, "%s row points at a chain record that does not exist", l.Type)
	case l.RecordType != l.Type || l.RecordID != l.ID:
		v.fail(l.AgentID, l.Seq, l.ID, "%s row points at chain record %d, which records %s %s", l.Type, l.Seq, l.RecordType, l.RecordID)
	}
}
