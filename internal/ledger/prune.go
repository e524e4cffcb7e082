package ledger

import (
	"cmp"
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

// Retention (spec §11.4: keep transaction-level data 90 days, then
// aggregate and anonymise). Pruning removes, per agent, a prefix of its
// chain — records 1..k, all of events that ended before the cutoff — and
// the rows of those events, and leaves:
//   - an anchor, the stored hash of record k, from which the walk starts
//     (record k+1 still links to it, so an altered anchor breaks the
//     chain);
//   - a summary record appended to the chain, whose content holds the
//     pruned events' counts by type, final status and month, with no event
//     or buyer id, and the anchor; a later prune that removes it carries
//     its rows into the next one.
// A checkpoint made after a prune notarises the new heads. Scores are
// untouched: the cutoff lies before every window still in use.

// SummaryType is the type a ledger_records row gives a summary record.
const SummaryType Type = "summary"

// AppealWindow is how long after its computed_at a passport may be
// appealed (§11.3), so how long its events must stay beyond the window.
const AppealWindow = 30 * 24 * time.Hour

// RetentionCutoff returns the instant before which ended events may be
// pruned when keep is the retention period: now − keep − AppealWindow.
// Errors: ErrInvalid when keep is shorter than the scoring window (a
// prune would change scores still in use).
func RetentionCutoff(now time.Time, keep time.Duration) (time.Time, error) {
	if keep < Window {
		return time.Time{}, fmt.Errorf("%w: retention %s is shorter than the 90-day scoring window: pruning would change current scores", errkind.ErrInvalid, days(keep))
	}
	return now.UTC().Add(-keep - AppealWindow).Truncate(Resolution), nil
}

// Prunable reports whether an event may be pruned at cutoff: it is final
// (no report can follow) and ended before cutoff, and no correction moved
// it to another agent (its records then span two chains, whose prefixes
// are pruned independently).
func Prunable(e *StoredEvent, cutoff time.Time, reattributed bool) bool {
	return !reattributed && e.Event.Status.Terminal() && !e.Event.EndedAt.IsZero() && e.Event.EndedAt.Before(cutoff)
}

// Anchor is where a pruned chain's walk starts: the seq and stored hash of
// its last pruned record.
type Anchor struct {
	Seq  int64
	Hash Hash
}

// SummaryRow counts pruned events of one kind: type, status after
// corrections, whether voided, and the UTC month ("2006-01") they ended in.
type SummaryRow struct {
	Type        Type
	Status      Status
	Voided      bool
	Month       string
	Count       int64
	EscrowCents int64 // the sum of their amounts (AP2)
}

func (r *SummaryRow) key() string {
	return r.Month + "\x00" + string(r.Type) + "\x00" + string(r.Status) + "\x00" + strconv.FormatBool(r.Voided)
}

// MonthOf is the summary month of an end time.
func MonthOf(t time.Time) string { return t.UTC().Format("2006-01") }

// Summary is a summary record's content.
type Summary struct {
	AgentID       string
	Seq           int64
	At            time.Time
	PrunedThrough int64
	Anchor        Hash
	Rows          []SummaryRow // sorted by month, type, status, voided
}

// AppendCanonical appends the summary record's canonical content: RFC
// 8785 JSON with a "summary" type no event has.
func (s *Summary) AppendCanonical(dst []byte) []byte {
	dst = append(dst, `{"agent_id":`...)
	dst = jcsstr.Append(dst, s.AgentID)
	dst = append(dst, `,"anchor":"`...)
	dst = hex.AppendEncode(dst, s.Anchor[:])
	dst = append(dst, `","at":`...)
	dst = appendJSONTime(dst, s.At)
	dst = append(dst, `,"pruned_through":`...)
	dst = strconv.AppendInt(dst, s.PrunedThrough, 10)
	dst = append(dst, `,"rows":`...)
	dst = AppendSummaryRows(dst, s.Rows)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, s.Seq, 10)
	return append(dst, `,"type":"summary"}`...)
}

// AppendSummaryRows appends rows as a summary record's canonical "rows"
// member: an array of objects, members in byte order of their names.
func AppendSummaryRows(dst []byte, rows []SummaryRow) []byte {
	dst = append(dst, '[')
	for i, r := range rows {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"count":`...)
		dst = strconv.AppendInt(dst, r.Count, 10)
		dst = append(dst, `,"escrow_cents":`...)
		dst = strconv.AppendInt(dst, r.EscrowCents, 10)
		dst = append(dst, `,"month":`...)
		dst = jcsstr.Append(dst, r.Month)
		dst = append(dst, `,"status":`...)
		dst = jcsstr.Append(dst, string(r.Status))
		dst = append(dst, `,"type":`...)
		dst = jcsstr.Append(dst, string(r.Type))
		dst = append(dst, `,"voided":`...)
		dst = strconv.AppendBool(dst, r.Voided)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// LinkSummary returns the chain hash of a summary record whose
// predecessor's hash is prev.
func (c *Chainer) LinkSummary(prev Hash, s *Summary) Hash {
	c.buf = append(c.buf[:0], prev[:]...)
	c.buf = s.AppendCanonical(c.buf)
	return sha256.Sum256(c.buf)
}

// PruneState is what one agent's prune is decided against, loaded in the
// transaction that writes it.
type PruneState struct {
	Head Head
	// Through is the last record of the prefix to prune (0: none), and
	// ThroughHash its stored hash.
	Through     int64
	ThroughHash Hash
	// Anchor is the chain's current anchor (zero Seq when never pruned).
	Anchor Anchor
	// Rows count the events whose rows the prune removes; Carried are the
	// rows of the summary records inside the prefix.
	Rows, Carried []SummaryRow
}

// PrunePlan is what a decided prune writes for one agent, in one
// transaction: the new anchor, the summary record appended at the head,
// and the head after it.
type PrunePlan struct {
	Anchor  Anchor
	Summary Summary
	Record  ChainRecord
	Head    Head
}

// DecidePrune decides one agent's prune. ok is false when there is
// nothing to prune: no event's rows would go (a prefix of earlier
// summaries alone is left as it is, or every prune would replace them).
// Errors: ErrConflict when the prefix is past the head.
func DecidePrune(agentID string, st PruneState, at time.Time) (plan PrunePlan, ok bool, err error) {
	switch {
	case st.Through > st.Head.Seq:
		return PrunePlan{}, false, fmt.Errorf("%w: agent %q: prune through seq %d, past its head %d", errkind.ErrConflict, agentID, st.Through, st.Head.Seq)
	case st.Through <= st.Anchor.Seq || len(st.Rows) == 0:
		return PrunePlan{}, false, nil
	}
	merged := map[string]*SummaryRow{}
	for _, rows := range [][]SummaryRow{st.Rows, st.Carried} {
		for _, r := range rows {
			if m, ok := merged[r.key()]; ok {
				m.Count += r.Count
				m.EscrowCents += r.EscrowCents
				continue
			}
			r := r
			merged[r.key()] = &r
		}
	}
	s := Summary{AgentID: agentID, Seq: st.Head.Seq + 1, At: at.UTC().Truncate(Resolution), PrunedThrough: st.Through, Anchor: st.ThroughHash}
	for _, r := range merged {
		s.Rows = append(s.Rows, *r)
	}
	SortSummaryRows(s.Rows)
	var c Chainer
	hash := c.LinkSummary(st.Head.Hash, &s)
	return PrunePlan{
		Anchor:  Anchor{Seq: st.Through, Hash: st.ThroughHash},
		Summary: s,
		Record:  ChainRecord{AgentID: agentID, Seq: s.Seq, Type: SummaryType, EventID: SummaryID(s.Seq), Hash: hash},
		Head:    Head{Seq: s.Seq, Hash: hash},
	}, true, nil
}

// SummaryID is the event_id a summary record at seq carries.
func SummaryID(seq int64) string { return "summary-" + strconv.FormatInt(seq, 10) }

// SortSummaryRows sorts rows as a summary holds them.
func SortSummaryRows(rows []SummaryRow) {
	slices.SortFunc(rows, func(a, b SummaryRow) int {
		return cmp.Or(strings.Compare(a.Month, b.Month), strings.Compare(string(a.Type), string(b.Type)),
			strings.Compare(string(a.Status), string(b.Status)), cmp.Compare(boolInt(a.Voided), boolInt(b.Voided)))
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WithAnchors gives VerifyChains the pruned chains' anchors, by agent: such
// a chain's walk starts after its anchor, from its hash.
func WithAnchors(anchors map[string]Anchor) VerifyOption {
	return func(v *walker) { v.anchors = anchors }
}

// WithSummaries gives VerifyChains the summary records' contents, by agent
// and seq.
func WithSummaries(s map[string]map[int64]*Summary) VerifyOption {
	return func(v *walker) { v.summaries = s }
}

// PruneReport says what a prune removed.
type PruneReport struct {
	Cutoff  time.Time
	Agents  int64 // chains pruned (each got a summary record)
	Records int64 // chain records removed
	Events  int64 // event rows removed
}

// EventSpan is where an event's records lie in one chain: its first and
// last seq there.
type EventSpan struct {
	First, Last int64
}

// PrunePrefix returns how far a chain may be pruned given through, the end
// of its longest prefix of prunable records, and the spans of the events
// recorded after its anchor: an event is pruned whole or not at all (its
// row goes with its last record), so the prefix stops before the first
// record of any event that has a record past it.
func PrunePrefix(through int64, spans []EventSpan) int64 {
	for {
		k := through
		for _, s := range spans {
			if s.First <= k && s.Last > k {
				k = min(k, s.First-1)
			}
		}
		if k == through {
			return k
		}
		through = k
	}
}

// days renders a duration in days when it is whole days.
func days(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// AttachPruned gives the rows of one agent's chain (a one-chain read) what
// a prune left beside them: the anchor on every row, and each summary
// record's content from summaries (by seq).
func AttachPruned(rows []ChainRow, anchor Anchor, summaries map[int64]*Summary) {
	for i := range rows {
		r := &rows[i]
		r.Anchor = anchor
		if r.HasRecord && r.Record.Type == SummaryType {
			r.Summary = summaries[r.Record.Seq]
		}
	}
}
