package audit

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/internal/jcsstr"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// maxMembers bounds a record's content: a correction has 14 members.
const maxMembers = 32

// contentOf reads canonical bytes the ledger produced (ledger.Record's or
// ledger.Correction's) into a Content.
func contentOf(canonical []byte) (Content, error) {
	s := &scanner{data: canonical}
	c, err := s.content("content")
	if err == nil {
		err = s.end()
	}
	return c, err
}

// content reads a record's content object: members named in [a-z_], each a
// string, an integer or a withheld value, sorted by name as they are
// stored (the canonical order; the document may list them in any order).
func (s *scanner) content(what string) (Content, error) {
	c := make(Content, 0, 16)
	err := s.object(what, func(name string) error {
		if len(c) == maxMembers {
			return s.fail("%s: more than %d members", what, maxMembers)
		}
		if !memberName(name) {
			return s.fail("%s: member name %s is not in [a-z_]", what, strconv.Quote(clip(name)))
		}
		m := Member{Name: name}
		var err error
		switch s.peek() {
		case '"':
			var v string
			v, err = s.str(what)
			m.Str = Clear(v)
		case '{':
			m.Str, err = s.withheld(what)
		case '[':
			m.Rows, err = s.summaryRows(what + ": " + name)
			m.IsRows = true
		default:
			m.Int, err = s.integer(what)
			m.IsInt = true
		}
		if pe, ok := err.(*ParseError); ok {
			pe.Reason = "member " + name + ": " + pe.Reason
		}
		c = append(c, m)
		return err
	})
	slices.SortFunc(c, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return c, err
}

func memberName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || c == '_') {
			return false
		}
	}
	return true
}

// appendCanonical renders a complete content as RFC 8785 canonical JSON:
// members in byte order of their names (ASCII, so also JCS's UTF-16
// order), strings with JCS's escapes, integers as digits. For every content
// the ledger writes, these are its bytes; decode checks that it is so.
func (c Content) appendCanonical(dst []byte) []byte {
	dst = append(dst, '{')
	for i := range c {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, c[i].Name...)
		dst = append(dst, '"', ':')
		switch {
		case c[i].IsInt:
			dst = strconv.AppendInt(dst, c[i].Int, 10)
		case c[i].IsRows:
			dst = ledger.AppendSummaryRows(dst, c[i].Rows)
		default:
			dst = jcsstr.Append(dst, c[i].Str.S)
		}
	}
	return append(dst, '}')
}

// maxSummaryRows bounds a summary's rows: one per month, event type,
// status and void flag, which years of history do not approach.
const maxSummaryRows = 1 << 16

// summaryRows reads a summary record's rows: objects with exactly the
// members ledger.AppendSummaryRows writes.
func (s *scanner) summaryRows(what string) ([]ledger.SummaryRow, error) {
	var rows []ledger.SummaryRow
	err := s.array(what, func(i int) error {
		if i == maxSummaryRows {
			return s.fail("%s: more than %d rows", what, maxSummaryRows)
		}
		var r ledger.SummaryRow
		seen := map[string]bool{}
		err := s.object(what, func(name string) error {
			if seen[name] {
				return s.fail("%s: member %s given twice", what, strconv.Quote(clip(name)))
			}
			seen[name] = true
			var err error
			var v string
			switch name {
			case "count":
				r.Count, err = s.integer(what)
			case "escrow_cents":
				r.EscrowCents, err = s.integer(what)
			case "month":
				r.Month, err = s.str(what)
			case "status":
				v, err = s.str(what)
				r.Status = ledger.Status(v)
			case "type":
				v, err = s.str(what)
				r.Type = ledger.Type(v)
			case "voided":
				switch {
				case s.peek() == 't' && s.literal("true"):
					r.Voided = true
				case s.peek() == 'f' && s.literal("false"):
				default:
					err = s.fail("%s: voided: want true or false, found %s", what, s.found())
				}
			default:
				err = s.fail("%s: unknown member %s", what, strconv.Quote(clip(name)))
			}
			return err
		})
		if err == nil && len(seen) != 6 {
			err = s.fail("%s: a row needs count, escrow_cents, month, status, type and voided", what)
		}
		rows = append(rows, r)
		return err
	})
	return rows, err
}

// Canonical returns the bytes the chain hashes for this content
// (ledger.Link(previous, bytes) is the record's hash) and true, or nil and
// false when a member is withheld and the bytes cannot be known. It does
// not check that the content is a record's: Verify does.
func (c Content) Canonical() ([]byte, bool) {
	if !c.complete() {
		return nil, false
	}
	return c.appendCanonical(nil), true
}

// placeholder stands for a withheld string while a record's structure is
// checked: a valid id and a valid reason, so that the checks of the
// disclosed members run unchanged, and the same for one value (a value has
// one commitment in a bundle) and different for two.
func placeholder(commitment string) string { return "withheld:" + commitment }

// decoded is a record's content read as what it records. Withheld strings
// are placeholder in Report and Correction; their Values are in Content.
type decoded struct {
	content    Content
	correction bool
	// erasure is true for an erasure's record (ledger.Erasure): no event;
	// erasureID names it, sealed and sealedCount are the commitment to its
	// digests it states.
	erasure     bool
	erasureID   string
	sealed      ledger.Hash
	sealedCount int64
	report      ledger.Record
	cor         ledger.Correction
	agent       Value // the chain's agent, as the content names it
	seq         int64
	// summary is a summary record's content (report and cor unset).
	summary *ledger.Summary
	// canonical is the hashed content, when complete.
	canonical []byte
}

// scratch are the buffers decode reuses from one record to the next.
type scratch struct {
	mine, back []byte
}

// decode reads a record's content as a report or a correction and checks
// that re-encoding it with the ledger's own code gives back exactly its
// canonical form, so that every member is known, none is missing and each
// has the one spelling the ledger hashes. A withheld member is checked the
// same way with a placeholder in its place, and must be of a category that
// may be withheld (audited is the agent whose id is never withheld). A
// sealed correction's id is not recomputed: it was derived from the
// request before an erasure renamed an agent it names, and the erasure's
// digest binds the content instead. d.canonical, when set, is valid until
// the next call with buf.
func decode(c Content, audited string, sealed bool, buf *scratch) (decoded, error) {
	d := decoded{content: c}
	for i := range c {
		if m := &c[i]; !m.IsInt && m.Str.Withheld && category(m.Name, m.Str, audited) == "" {
			return d, fmt.Errorf("member %s is withheld, but only buyer_id, operator, by, reason and other agents' ids may be", m.Name)
		}
	}
	subst := c
	complete := c.complete()
	if !complete {
		subst = slices.Clone(c)
		for i := range subst {
			if subst[i].Str.Withheld {
				subst[i].Str = Clear(placeholder(subst[i].Str.S))
			}
		}
	}
	buf.mine = subst.appendCanonical(buf.mine[:0])
	mine := buf.mine
	if c.str("type") == Clear(string(ledger.SummaryType)) {
		return decodeSummary(d, mine, complete, buf)
	}
	for i := range c {
		if c[i].IsRows {
			return d, fmt.Errorf("member %s is an array; only a summary record has one (rows)", c[i].Name)
		}
	}
	d.correction = c.isCorrection()
	d.agent = c.str("agent_id")
	if c.isErasure() {
		if err := decodeErasure(subst, &d); err != nil {
			return d, err
		}
		if complete {
			d.canonical = mine
		}
		return d, nil
	}
	if d.correction {
		cor, agent, seq, err := correctionOf(subst)
		if err != nil {
			return d, err
		}
		d.cor, d.seq = cor, seq
		buf.back = cor.AppendCanonical(buf.back[:0], agent, seq)
	} else {
		rec, err := reportOf(subst)
		if err == nil {
			buf.back = rec.AppendCanonical(buf.back[:0])
		}
		if err != nil || !bytes.Equal(buf.back, mine) {
			// A member this reader does not know, added to the ledger's
			// records since: the ledger's own reader knows every one.
			if rec, err = ledger.ParseCanonical(mine); err != nil {
				return d, err
			}
			buf.back = rec.AppendCanonical(buf.back[:0])
		}
		d.report, d.seq = rec, rec.Seq
	}
	if !bytes.Equal(buf.back, mine) {
		return d, fmt.Errorf("not the canonical content of a %s record (a member unknown, missing, of another type or spelt otherwise)", kind(d.correction))
	}
	if d.seq < 1 {
		return d, fmt.Errorf("seq %d is below 1", d.seq)
	}
	if d.correction {
		if err := checkCorrection(&d.cor); err != nil {
			return d, err
		}
		// The id is derived from what the correction asks; it can be
		// recomputed only when nothing it covers is withheld.
		covered := !c.str("reason").Withheld && !c.str("by").Withheld && !c.str("appeal_id").Withheld &&
			(d.cor.Action != ledger.ActionReattribute || !c.str("to_agent").Withheld)
		if covered && !sealed && d.cor.CorrectionRequest.ID() != d.cor.ID {
			return d, fmt.Errorf("correction id %s is not the id of what it asks (%s)", d.cor.ID, d.cor.CorrectionRequest.ID())
		}
	} else if err := d.report.Event.Validate(); err != nil {
		return d, fmt.Errorf("the event it records is invalid: %w", err)
	}
	if complete {
		d.canonical = mine
	}
	return d, nil
}

// decodeSummary decodes the content of a summary record, which stands for
// the records a prune removed before it: nothing in it may be withheld (it
// names no one but the audited chain's agent), and re-encoding it with the
// ledger's code gives back its canonical form.
func decodeSummary(d decoded, mine []byte, complete bool, buf *scratch) (decoded, error) {
	c := d.content
	if !complete {
		return d, fmt.Errorf("a summary record withholds a member; none may be")
	}
	at, err := ledger.ParseTime("at", c.str("at").S)
	if err != nil {
		return d, err
	}
	s := &ledger.Summary{AgentID: c.str("agent_id").S, Seq: c.integer("seq"), At: at, PrunedThrough: c.integer("pruned_through")}
	a, err := hex.DecodeString(c.str("anchor").S)
	if err != nil || len(a) != len(s.Anchor) {
		return d, fmt.Errorf("the summary's anchor is not a hex SHA-256 hash")
	}
	copy(s.Anchor[:], a)
	if m, ok := c.get("rows"); ok && m.IsRows {
		s.Rows = m.Rows
	}
	buf.back = s.AppendCanonical(buf.back[:0])
	if !bytes.Equal(buf.back, mine) {
		return d, fmt.Errorf("not the canonical content of a summary record (a member unknown, missing, of another type or spelt otherwise)")
	}
	switch {
	case s.Seq < 2 || s.PrunedThrough < 1 || s.PrunedThrough >= s.Seq:
		return d, fmt.Errorf("summary at seq %d says it follows pruning through seq %d", s.Seq, s.PrunedThrough)
	case !ledger.ValidID(s.AgentID):
		return d, fmt.Errorf("the summary names an invalid agent")
	}
	for i := range s.Rows {
		r := &s.Rows[i]
		if _, err := time.Parse("2006-01", r.Month); err != nil || !r.Status.ValidFor(r.Type) || !r.Status.Terminal() || r.Count < 1 || r.EscrowCents < 0 {
			return d, fmt.Errorf("summary row %d (%s %s %s) is not a count of final events in a month", i, clip(r.Month), clip(string(r.Type)), clip(string(r.Status)))
		}
	}
	d.summary, d.agent, d.seq, d.canonical = s, Clear(s.AgentID), s.Seq, mine
	return d, nil
}

// reportOf reads a report's content into a ledger.Record: the members
// ledger.Record.Canonical writes, by name.
func reportOf(c Content) (ledger.Record, error) {
	var r ledger.Record
	var started, ended string
	for i := range c {
		m := &c[i]
		switch m.Name {
		case "agent_id":
			r.Event.AgentID = m.Str.S
		case "buyer_id":
			r.Event.BuyerID = m.Str.S
		case "ended_at":
			ended = m.Str.S
		case "escrow_amount_cents":
			r.Event.EscrowAmountCents = m.Int
		case "id":
			r.Event.ID = m.Str.S
		case "operator":
			r.Operator = m.Str.S
		case "seq":
			r.Seq = m.Int
		case "started_at":
			started = m.Str.S
		case "status":
			r.Event.Status = ledger.Status(m.Str.S)
		case "type":
			r.Event.Type = ledger.Type(m.Str.S)
		}
	}
	var err error
	if r.Event.StartedAt, err = ledger.ParseTime("started_at", started); err != nil {
		return r, err
	}
	if ended != "" {
		r.Event.EndedAt, err = ledger.ParseTime("ended_at", ended)
	}
	return r, err
}

func kind(correction bool) string {
	if correction {
		return "correction"
	}
	return "report"
}

// correctionOf reads a correction's content into a ledger.Correction. Its
// request's Status and AgentID are not hashed; they are what the action
// implies (the new status, the agent moved to).
func correctionOf(c Content) (ledger.Correction, string, int64, error) {
	var cor ledger.Correction
	at, err := ledger.ParseTime("at", c.str("at").S)
	if err != nil {
		return cor, "", 0, err
	}
	cor = ledger.Correction{
		ID: c.str("correction").S,
		CorrectionRequest: ledger.CorrectionRequest{
			EventType: ledger.Type(c.str("type").S),
			EventID:   c.str("event_id").S,
			Action:    ledger.CorrectionAction(c.str("action").S),
			Reason:    c.str("reason").S,
			AppealID:  c.str("appeal_id").S,
			By:        c.str("by").S,
			At:        at,
		},
		FromAgent:  c.str("from_agent").S,
		FromStatus: ledger.Status(c.str("from_status").S),
		ToAgent:    c.str("to_agent").S,
		ToStatus:   ledger.Status(c.str("to_status").S),
	}
	switch cor.Action {
	case ledger.ActionStatus:
		cor.Status = cor.ToStatus
	case ledger.ActionReattribute:
		cor.AgentID = cor.ToAgent
	}
	return cor, c.str("agent_id").S, c.integer("seq"), nil
}

// checkCorrection checks a correction on its own: a valid request, and a
// before and after state its action can produce.
func checkCorrection(c *ledger.Correction) error {
	if err := c.CorrectionRequest.Validate(); err != nil {
		return fmt.Errorf("the correction is invalid: %w", err)
	}
	switch {
	case !ledger.ValidID(c.ID):
		return fmt.Errorf("correction id %s is invalid", strconv.Quote(clip(c.ID)))
	case !ledger.ValidID(c.FromAgent) || !ledger.ValidID(c.ToAgent):
		return fmt.Errorf("correction %s names an invalid agent", c.ID)
	case !c.FromStatus.ValidFor(c.EventType) || !c.FromStatus.Terminal():
		return fmt.Errorf("correction %s corrects a %s event in status %s, which is not final", c.ID, c.EventType, c.FromStatus)
	}
	same := c.FromAgent == c.ToAgent
	switch c.Action {
	case ledger.ActionStatus:
		if !same || c.ToStatus == c.FromStatus {
			return fmt.Errorf("status correction %s must keep the agent and change the status", c.ID)
		}
	case ledger.ActionReattribute:
		if same || c.ToStatus != c.FromStatus {
			return fmt.Errorf("re-attribution %s must change the agent and keep the status", c.ID)
		}
	case ledger.ActionVoid:
		if !same || c.ToStatus != c.FromStatus {
			return fmt.Errorf("void %s must keep the agent and the status", c.ID)
		}
	}
	return nil
}

// clip cuts untrusted text for a message.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// formatTime renders a time as the ledger does.
func formatTime(t time.Time) string { return ledger.FormatTime(t) }

// erasureMembers are the members of an erasure's record
// (ledger.Erasure.AppendCanonical), in canonical order, and whether each
// is an integer.
var erasureMembers = []struct {
	name  string
	isInt bool
}{{"agent_id", false}, {"at", false}, {"by", false}, {"erasure", false}, {"identity", false}, {"sealed", false}, {"sealed_count", true}, {"seq", true}}

// decodeErasure reads an erasure's record: exactly its members, each of
// its type, a valid time, ids, and hashes in lowercase hex. Its canonical
// form is the content's own (appendCanonical writes members in order), so
// no member can be spelt two ways.
func decodeErasure(c Content, d *decoded) error {
	if len(c) != len(erasureMembers) {
		return fmt.Errorf("not the canonical content of an erasure record: %d members, want %d", len(c), len(erasureMembers))
	}
	for i, m := range erasureMembers {
		if c[i].Name != m.name || c[i].IsInt != m.isInt {
			return fmt.Errorf("not the canonical content of an erasure record: member %s missing or of another type", m.name)
		}
	}
	d.erasure, d.erasureID, d.seq, d.sealedCount = true, c.str("erasure").S, c.integer("seq"), c.integer("sealed_count")
	if _, err := ledger.ParseTime("at", c.str("at").S); err != nil {
		return err
	}
	for _, name := range []string{"agent_id", "by", "erasure"} {
		if err := ledger.CheckID(name, c.str(name).S); err != nil {
			return err
		}
	}
	sealed := c.str("sealed").S
	switch {
	case !lowerHex(c.str("identity").S, 2*ledger.HashSize):
		return fmt.Errorf("erasure %s: identity is not a SHA-256 in lowercase hex", d.erasureID)
	case !lowerHex(sealed, 2*ledger.HashSize):
		return fmt.Errorf("erasure %s: sealed is not a SHA-256 in lowercase hex", d.erasureID)
	case d.sealedCount < 0:
		return fmt.Errorf("erasure %s: sealed_count %d is negative", d.erasureID, d.sealedCount)
	case d.seq < 1:
		return fmt.Errorf("seq %d is below 1", d.seq)
	}
	_, _ = hex.Decode(d.sealed[:], []byte(sealed)) // checked above
	return nil
}
