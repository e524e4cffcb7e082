package audit

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// Codes of the warnings Verify reports: what a bundle that verifies still
// does not show.
const (
	// WarnNoCheckpoint: the bundle has no checkpoint, so its heads are
	// the exporter's word: a consistently rewritten chain is not caught.
	WarnNoCheckpoint = "no_checkpoint"
	// WarnNotAnchored: records of a chain after the checkpoint's seq (or
	// a whole chain the checkpoint does not name, or whose agent is
	// withheld) are not anchored by it.
	WarnNotAnchored = "not_anchored"
	// WarnWithheld: records with withheld members, whose links were taken
	// as stated: their disclosed content is not bound by the chain.
	WarnWithheld = "withheld"
	// WarnPruned: a prune removed the chain's first records; a summary
	// record stands for them, and they are outside the window audited.
	WarnPruned = "pruned"
	// WarnNoPassport: no passport was in force at as_of.
	WarnNoPassport = "no_passport"
	// WarnSealed: records sealed by an erasure (GDPR Art. 17), whose
	// links were not recomputed: renaming the erased agent changed their
	// content. Each one's content is checked against the digests its
	// erasure's record commits to instead.
	WarnSealed = "sealed"
)

// Report is what Verify found: the first discrepancy, or none, with what
// was checked and the warnings.
type Report struct {
	// Valid is true when every check passed (Discrepancy is nil).
	Valid   bool      `json:"valid"`
	AgentID string    `json:"agent_id"`
	AsOf    time.Time `json:"as_of"`
	// Chains, Records and Linked count the chains and records read and
	// the records whose link was recomputed from their content.
	Chains  int `json:"chains"`
	Records int `json:"records"`
	Linked  int `json:"linked"`
	// Checkpoint is the checkpoint's number (0 without one) and Anchored
	// the audited chain's last record it anchors (0 for none).
	Checkpoint int64 `json:"checkpoint"`
	Anchored   int64 `json:"anchored"`
	// LogSize and LogIndex are the size of the log checkpoint note the
	// audited agent's head record was proved in and its leaf index (0 and
	// 0 when the bundle carries no log inclusion proof).
	LogSize  uint64 `json:"log_size"`
	LogIndex int64  `json:"log_index"`
	// Events counts the events by outcome as of AsOf.
	Events map[Outcome]int `json:"events"`
	// Counts and Score are what the records give as of AsOf.
	Counts score.Counts `json:"-"`
	Score  int          `json:"score"`
	// PassportID is the verified passport's agent_passport_id; "" when the
	// bundle has none or it was not reached.
	PassportID string `json:"passport_id,omitempty"`
	// Holds counts the escrow holds checked.
	Holds       int       `json:"holds"`
	Discrepancy *Finding  `json:"discrepancy"`
	Warnings    []Finding `json:"warnings"`
}

// MarshalJSON renders the report with its counts as the bundle names them.
func (r *Report) MarshalJSON() ([]byte, error) {
	type plain Report
	type counts struct {
		ConduitTotal   int64 `json:"conduit_total"`
		ConduitSuccess int64 `json:"conduit_success"`
		AP2Total       int64 `json:"ap2_total"`
		AP2Success     int64 `json:"ap2_success"`
	}
	c := r.Counts
	return json.Marshal(struct {
		*plain
		Counts counts `json:"counts"`
	}{(*plain)(r), counts{c.ConduitTotal, c.ConduitSuccess, c.AP2Total, c.AP2Success}})
}

// Verify checks a bundle with nothing but keys, in this order, and stops at
// the first discrepancy (the Code* constants):
//
//  1. chains: the audited agent's chain comes first and whole (from seq 1
//     after the zero hash); in every chain each record is at its seq, its
//     content is a report or correction as the ledger writes it (a valid
//     event, a consistent correction, the chain's agent), its link
//     SHA-256(previous ‖ content) is its hash, and the chain ends at its
//     stated head. A record with withheld members cannot be hashed: its
//     hash is taken as stated, and the next complete record's link checks
//     it.
//  2. checkpoint: its signature (Keys.Checkpoint), then for each chain
//     with a proof, that the leaf (agent, seq, hash at seq) is in its tree.
//  3. rules: replaying the audited chain, each report moves its event
//     forward without changing what may not change, and each correction
//     applies to the event as the chain has it (its agent's, final, not
//     voided, the status it had) and does what its action says; events
//     moved here take their end time from their report in another chain.
//  4. the bundle's account of every event (outcome, status, end time,
//     corrections, moves) against the replay as of as_of.
//  5. the counts as of as_of, and score.Compute of them.
//  6. the passport: passport.Verify at as_of (signature under
//     Keys.Passport, consistency, expiry), for this agent, computed no
//     later than as_of, with the counts the replay gives as of its
//     computed_at.
//  7. the escrow holds (checkHolds): each hold's chain of steps and head,
//     its money, its price against the passport that priced it, and the
//     audited chain's reports and corrections of its transaction.
//
// Verify never fails: every problem is in the Report.
func Verify(b *Bundle, keys Keys) *Report {
	r := &Report{AgentID: b.AgentID, AsOf: b.AsOf, Events: map[Outcome]int{}, Warnings: []Finding{}}
	r.Discrepancy = verify(b, keys, r)
	r.Valid = r.Discrepancy == nil
	return r
}

// VerifyDocument parses data (Parse) and verifies it (Verify); a bundle that
// cannot be read is a Report with a CodeMalformed discrepancy.
func VerifyDocument(data []byte, keys Keys) *Report {
	b, err := Parse(data)
	if err != nil {
		return &Report{Events: map[Outcome]int{}, Warnings: []Finding{}, Discrepancy: &Finding{Code: CodeMalformed, Message: err.Error()}}
	}
	return Verify(b, keys)
}

func verify(b *Bundle, keys Keys, r *Report) *Finding {
	dec, f := walkChains(b, r)
	if f != nil {
		return f
	}
	if f := checkCheckpoint(b, keys, r); f != nil {
		return f
	}
	if f := checkLogInclusion(b, keys, r); f != nil {
		return f
	}
	dv, f := derive(b, dec)
	if f != nil {
		return f
	}
	want := dv.account(b.AsOf)
	for _, e := range want {
		r.Events[e.Outcome]++
	}
	if f := compareEvents(b, want); f != nil {
		return f
	}
	r.Counts = dv.counts(b.AsOf)
	res, err := score.Compute(r.Counts)
	if err != nil {
		return &Finding{Code: CodeCounts, Message: err.Error()} // unreachable: a replay's counts are consistent
	}
	r.Score = res.Score
	if r.Counts != b.Counts {
		return &Finding{Code: CodeCounts, Message: fmt.Sprintf("the records give %s as of %s; the bundle says %s",
			countsText(r.Counts), formatTime(b.AsOf), countsText(b.Counts))}
	}
	if got := (Score{res.Score, res.Tier, res.Escrow}); got != b.Score {
		return &Finding{Code: CodeScore, Message: fmt.Sprintf("score.Compute gives %d, %s, escrow modifier %s; the bundle says %d, %s, %s",
			got.Value, got.Tier, got.Escrow, b.Score.Value, b.Score.Tier, b.Score.Escrow)}
	}
	if f := checkPassport(b, keys, dv, r); f != nil {
		return f
	}
	return checkHolds(b, keys, dec, r)
}

func countsText(c score.Counts) string {
	return fmt.Sprintf("conduit %d/%d and ap2 %d/%d (success/total)", c.ConduitSuccess, c.ConduitTotal, c.AP2Success, c.AP2Total)
}

// walkChains decodes every record and checks positions, contents, links
// and heads, chain by chain and record by record; r (nil for Build, which
// reads its own store and leaves links to Verify) is filled as it goes.
func walkChains(b *Bundle, r *Report) ([][]decoded, *Finding) {
	links := r != nil
	if len(b.Chains) == 0 {
		return nil, &Finding{Code: CodeMalformed, Message: "the bundle holds no chain"}
	}
	if first := &b.Chains[0]; first.AgentID != Clear(b.AgentID) || first.FromSeq < 1 || (first.FromSeq == 1) != (first.Prev == ledger.Hash{}) {
		return nil, &Finding{Code: CodeMalformed, Message: "the first chain must be the audited agent's, whole: from seq 1 after the zero hash, or from the anchor a prune left"}
	}
	dec := make([][]decoded, len(b.Chains))
	var buf scratch
	withheld, sealed, unsealed := 0, 0, 0
	for ci := range b.Chains {
		c := &b.Chains[ci]
		if c.AgentID.Withheld && !slices.Contains(b.Withheld, Agents) {
			return nil, findingf(CodeMalformed, c.AgentID, 0, "", "the chain's agent is withheld, but the bundle does not say it withholds agents")
		}
		if ci > 0 {
			switch {
			case c.AgentID == Clear(b.AgentID):
				return nil, findingf(CodeMalformed, c.AgentID, 0, "", "the audited agent's chain is given twice")
			case c.FromSeq < 1 || len(c.Records) == 0:
				return nil, findingf(CodeMalformed, c.AgentID, 0, "", "another agent's segment must hold records from a seq of 1 or more")
			case c.FromSeq == 1 && c.Prev != (ledger.Hash{}):
				return nil, findingf(CodeChainLink, c.AgentID, 1, "", "a chain's first record follows the zero hash")
			}
		}
		dec[ci] = make([]decoded, len(c.Records))
		prev := c.Prev
		for k := range c.Records {
			rec := &c.Records[k]
			seq := c.FromSeq + int64(k)
			d, err := decode(rec.Content, b.AgentID, rec.SealedBy != "", &buf)
			if err != nil {
				return nil, findingf(CodeChainContent, c.AgentID, seq, eventOf(rec.Content), "%v", err)
			}
			event := eventOf(rec.Content)
			if cat := unlisted(rec.Content, b); cat != "" {
				return nil, findingf(CodeChainContent, c.AgentID, seq, event, "the record withholds %s, which the bundle does not say it withholds", cat)
			}
			switch {
			case d.seq != seq:
				return nil, findingf(CodeChainSeq, c.AgentID, seq, event, "the record at seq %d says it is seq %d: a record was removed, added or moved", seq, d.seq)
			case d.agent != c.AgentID:
				return nil, findingf(CodeChainContent, c.AgentID, seq, event, "the record names agent %s, not the chain's", d.agent)
			}
			if links {
				r.Records++
				switch {
				case rec.SealedBy != "":
					g := b.sealing(rec.SealedBy)
					switch {
					case g == nil && len(b.Withheld) > 0:
						unsealed++ // Withhold dropped the digests
					case g == nil:
						return nil, findingf(CodeChainContent, c.AgentID, seq, event, "the record is sealed by erasure %s, whose digests the bundle does not hold", rec.SealedBy)
					case d.canonical == nil:
						withheld++
					case !slices.Contains(g.Digests, sha256.Sum256(d.canonical)):
						return nil, findingf(CodeChainLink, c.AgentID, seq, event,
							"the record is sealed by erasure %s, but its content is none of the digests that erasure sealed: the record was altered", rec.SealedBy)
					default:
						sealed++
					}
				case d.canonical != nil:
					if got := ledger.Link(prev, d.canonical); got != rec.Hash {
						return nil, findingf(CodeChainLink, c.AgentID, seq, event,
							"SHA-256(previous hash ‖ content) is %x…, the record says %x…: the record was altered, or one before it removed", got[:8], rec.Hash[:8])
					}
					r.Linked++
				default:
					withheld++
				}
			}
			d.canonical = nil // buf is reused
			dec[ci][k] = d
			prev = rec.Hash
		}
		if links {
			if last := c.FromSeq + int64(len(c.Records)) - 1; c.Head.Seq != last || c.Head.Hash != prev {
				return nil, findingf(CodeChainHead, c.AgentID, c.Head.Seq, "",
					"the chain ends at seq %d with hash %x…, but its head is seq %d with hash %x…: records removed, added or the head altered", last, prev[:8], c.Head.Seq, c.Head.Hash[:8])
			}
		}
	}
	if f := checkPruned(b, dec[0]); f != nil {
		return nil, f
	}
	if links {
		if f := checkSealings(b, dec); f != nil {
			return nil, f
		}
		if c := &b.Chains[0]; c.FromSeq > 1 {
			r.Warnings = append(r.Warnings, Finding{Code: WarnPruned, AgentID: c.AgentID.String(), Message: fmt.Sprintf(
				"records 1 to %d of the chain were pruned (retention, §11.4): a summary record in the chain counts them, and none lies in the window", c.FromSeq-1)})
		}
		r.Chains = len(b.Chains)
		if sealed > 0 {
			r.Warnings = append(r.Warnings, Finding{Code: WarnSealed, Message: fmt.Sprintf(
				"%d of %d records are sealed by an erasure (GDPR Art. 17): renaming the erased agent changed their content, so their links were not recomputed; each one's content is one of the digests its erasure's record commits to, and that record is linked in its chain",
				sealed, r.Records)})
		}
		if unsealed > 0 {
			r.Warnings = append(r.Warnings, Finding{Code: WarnSealed, Message: fmt.Sprintf(
				"%d of %d records are sealed by an erasure (GDPR Art. 17), and the bundle withholds identifiers, so it omits the erasures' digests (they would let a guess of a withheld value be checked): their hashes were taken as stated; the records after them still link to those hashes",
				unsealed, r.Records)})
		}
		if withheld > 0 {
			r.Warnings = append(r.Warnings, Finding{Code: WarnWithheld, Message: fmt.Sprintf(
				"%d of %d records withhold members (%s): their hashes were taken as stated, so what they disclose is not bound by the chain; the counts, the passport and the records around them still are",
				withheld, r.Records, categoriesText(b.Withheld))})
		}
	}
	return dec, nil
}

// checkPruned checks the audited chain against the prunes it records: a
// chain that starts after seq 1 does so at the anchor its latest summary
// record names, and no summarised event may have ended in the window
// audited (a summary counts events by month, so its month must have ended
// before the window starts).
func checkPruned(b *Bundle, dec []decoded) *Finding {
	c := &b.Chains[0]
	var last *ledger.Summary
	for k := range dec {
		if s := dec[k].summary; s != nil {
			last = s
		}
	}
	if c.FromSeq > 1 && (last == nil || last.PrunedThrough != c.FromSeq-1 || last.Anchor != c.Prev) {
		return findingf(CodePruned, c.AgentID, c.FromSeq, "",
			"the chain starts at seq %d after hash %x…, but no summary record says a prune removed the records before it there", c.FromSeq, c.Prev[:8])
	}
	return prunedInWindow(b.AsOf, last, c.AgentID)
}

// prunedInWindow is the finding when the summary s (nil for none) counts
// events of a month that may lie in the window ending asOf.
func prunedInWindow(asOf time.Time, s *ledger.Summary, agent Value) *Finding {
	if s == nil {
		return nil
	}
	start := ledger.WindowStart(asOf)
	for i := range s.Rows {
		m, err := time.Parse("2006-01", s.Rows[i].Month)
		if err != nil || m.AddDate(0, 1, 0).After(start) {
			return findingf(CodePruned, agent, s.Seq, "",
				"the window from %s reaches back to %s, whose events were pruned at %s: its counts cannot be re-derived", formatTime(start), clip(s.Rows[i].Month), formatTime(s.At))
		}
	}
	return nil
}

// checkSealings checks that every erasure's digests the bundle holds are
// those its record, in one of the chains, commits to.
func checkSealings(b *Bundle, dec [][]decoded) *Finding {
	for i := range b.Sealings {
		g := &b.Sealings[i]
		var rec *decoded
		var agent Value
		for ci := range dec {
			for k := range dec[ci] {
				if d := &dec[ci][k]; d.erasure && d.erasureID == g.ID {
					rec, agent = d, b.Chains[ci].AgentID
				}
			}
		}
		switch {
		case rec == nil:
			return &Finding{Code: CodeMalformed, Message: fmt.Sprintf("the bundle holds the digests of erasure %s but not its record", g.ID)}
		case rec.sealed != g.commitment() || rec.sealedCount != int64(len(g.Digests)):
			return findingf(CodeChainContent, agent, rec.seq, "", "the %d digests the bundle gives for erasure %s are not those its record commits to (%d)", len(g.Digests), g.ID, rec.sealedCount)
		}
	}
	return nil
}

// unlisted returns the category of a withheld member of c that b.Withheld
// does not list, or "": a bundle says what it withholds.
func unlisted(c Content, b *Bundle) Category {
	for i := range c {
		if m := &c[i]; !m.IsInt && m.Str.Withheld {
			if cat := category(m.Name, m.Str, b.AgentID); !slices.Contains(b.Withheld, cat) {
				return cat
			}
		}
	}
	return ""
}

func categoriesText(cs []Category) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// eventOf names the event a content records, for messages.
func eventOf(c Content) string {
	if v := c.str("event_id"); !v.IsZero() {
		return clip(v.S)
	}
	return clip(c.str("id").S)
}

// checkCheckpoint checks the checkpoint's signature and every chain's
// inclusion proof.
func checkCheckpoint(b *Bundle, keys Keys, r *Report) *Finding {
	if b.Checkpoint == nil {
		for i := range b.Chains {
			if b.Chains[i].Proof != nil {
				return findingf(CodeCheckpointProof, b.Chains[i].AgentID, 0, "", "a chain carries a checkpoint proof, but the bundle has no checkpoint")
			}
		}
		r.Warnings = append(r.Warnings, Finding{Code: WarnNoCheckpoint,
			Message: "the bundle has no checkpoint: the chain heads are the exporter's word, and a consistently rewritten chain would not be caught"})
		return nil
	}
	c, err := checkpoint.Parse(b.Checkpoint)
	if err != nil {
		return &Finding{Code: CodeCheckpoint, Message: err.Error()}
	}
	if keys.Checkpoint == nil {
		return &Finding{Code: CodeCheckpoint, Message: fmt.Sprintf("checkpoint %d is signed with %s key %s, and no key was given to check it", c.Number, c.Issuer.Alg, c.Issuer.KeyID)}
	}
	if err := c.Verify(keys.Checkpoint); err != nil {
		return &Finding{Code: CodeCheckpoint, Message: err.Error()}
	}
	if err := keys.SignedAt(c.Issuer.KeyID, c.Issuer.Alg, c.Time); err != nil {
		return &Finding{Code: CodeCheckpoint, Message: fmt.Sprintf("checkpoint %d: %v", c.Number, err)}
	}
	r.Checkpoint = c.Number
	for i := range b.Chains {
		ch := &b.Chains[i]
		p := ch.Proof
		if p == nil {
			r.Warnings = append(r.Warnings, Finding{Code: WarnNotAnchored, AgentID: ch.AgentID.String(),
				Message: fmt.Sprintf("checkpoint %d does not anchor this chain: it names no such agent, predates its records, or the agent is withheld", c.Number)})
			continue
		}
		if ch.AgentID.Withheld {
			return findingf(CodeCheckpointProof, ch.AgentID, p.Seq, "", "a withheld agent's leaf cannot be checked")
		}
		var h ledger.Hash
		switch last := ch.FromSeq + int64(len(ch.Records)) - 1; {
		case p.Seq > last:
			return findingf(CodeCheckpointProof, ch.AgentID, p.Seq, "",
				"checkpoint %d saw the chain at seq %d, but it ends at seq %d: records were removed since", c.Number, p.Seq, last)
		case p.Seq < ch.FromSeq-1:
			return findingf(CodeCheckpointProof, ch.AgentID, p.Seq, "", "the proof is for seq %d, before the records given", p.Seq)
		case p.Seq == ch.FromSeq-1:
			h = ch.Prev
		default:
			h = ch.Records[p.Seq-ch.FromSeq].Hash
		}
		if err := c.VerifyInclusion(checkpoint.Leaf{AgentID: ch.AgentID.S, Seq: p.Seq, Hash: h}, p.Proof); err != nil {
			return findingf(CodeCheckpointProof, ch.AgentID, p.Seq, "",
				"the chain's hash at seq %d is not the leaf checkpoint %d holds for it: the chain was rewritten since, or the proof is false (%v)", p.Seq, c.Number, err)
		}
		if i == 0 {
			r.Anchored = p.Seq
		}
		if head := ch.Head.Seq; p.Seq < head {
			r.Warnings = append(r.Warnings, Finding{Code: WarnNotAnchored, AgentID: ch.AgentID.String(), Seq: p.Seq + 1,
				Message: fmt.Sprintf("records %d to %d came after checkpoint %d and are not anchored by it", p.Seq+1, head, c.Number)})
		}
	}
	return nil
}

// compareEvents checks the bundle's account against the replay's.
func compareEvents(b *Bundle, want []Event) *Finding {
	chain := b.Chains[0].AgentID
	got := b.Events
	for i := range min(len(got), len(want)) {
		g, w := &got[i], &want[i]
		if g.Key() != w.Key() {
			return findingf(CodeEvents, chain, 0, w.ID, "event %d of the account is %s %s, but the chain's event %d is %s %s",
				i+1, g.Type, clip(g.ID), i+1, w.Type, w.ID)
		}
		var diff string
		switch {
		case g.Outcome != w.Outcome:
			diff = fmt.Sprintf("outcome %s, the records give %s", g.Outcome, w.Outcome)
		case g.Status != w.Status:
			diff = fmt.Sprintf("status %s, the records give %s", g.Status, w.Status)
		case !g.EndedAt.Equal(w.EndedAt):
			diff = fmt.Sprintf("ended_at %s, the records give %s", formatTime(g.EndedAt), formatTime(w.EndedAt))
		case !slices.Equal(g.Corrections, w.Corrections):
			diff = fmt.Sprintf("corrections %v, the chain records %v", g.Corrections, w.Corrections)
		case g.MovedFrom != w.MovedFrom:
			diff = fmt.Sprintf("moved_from %s, the records give %s", g.MovedFrom, w.MovedFrom)
		case g.MovedTo != w.MovedTo:
			diff = fmt.Sprintf("moved_to %s, the records give %s", g.MovedTo, w.MovedTo)
		}
		if diff != "" {
			return findingf(CodeEvents, chain, 0, w.ID, "the account says %s", diff)
		}
	}
	if len(got) != len(want) {
		return findingf(CodeEvents, chain, 0, "", "the account lists %d events; the chain records %d", len(got), len(want))
	}
	return nil
}

// checkPassport verifies the passport and its counts against the replay.
func checkPassport(b *Bundle, keys Keys, dv *derivation, r *Report) *Finding {
	if b.Passport == nil {
		r.Warnings = append(r.Warnings, Finding{Code: WarnNoPassport, Message: fmt.Sprintf("no passport was in force at %s", formatTime(b.AsOf))})
		return nil
	}
	v := passport.Verify(b.Passport, keys.Passport, b.AsOf)
	if !v.Valid {
		codes := make([]string, len(v.Errors))
		for i, p := range v.Errors {
			codes[i] = p.Error()
		}
		return &Finding{Code: CodePassport, Message: fmt.Sprintf("passport.Verify at %s: %s", formatTime(b.AsOf), strings.Join(codes, "; "))}
	}
	p := v.Passport
	computed := p.Issuer.ComputedAt
	switch {
	case p.AgentID != b.AgentID:
		return &Finding{Code: CodePassport, Message: fmt.Sprintf("the passport is for agent %q, not %q", clip(p.AgentID), b.AgentID)}
	case computed.After(b.AsOf):
		return &Finding{Code: CodePassport, Message: fmt.Sprintf("the passport was computed at %s, after as_of", formatTime(computed))}
	}
	if got := dv.counts(computed); got != p.Counts() {
		msg := fmt.Sprintf("the records give %s as of the passport's computed_at %s; the passport says %s",
			countsText(got), formatTime(computed), countsText(p.Counts()))
		if later := correctedAfter(dv, computed); later != "" {
			msg += "; " + later
		}
		return &Finding{Code: CodePassportCounts, Message: msg}
	}
	r.PassportID = p.AgentPassportID
	return nil
}

// correctedAfter names the first correction recorded after t, which may
// explain why a passport computed at t no longer matches the records: it
// was superseded. A late report (an end time before t, reported after it)
// has the same effect but carries no time to name.
func correctedAfter(dv *derivation, t time.Time) string {
	var first *history
	var at time.Time
	var id string
	for _, h := range dv.events {
		for i, c := range h.correctedAt {
			if c.After(t) && (first == nil || c.Before(at)) {
				first, at, id = h, c, h.Corrections[i]
			}
		}
	}
	if first == nil {
		return ""
	}
	return fmt.Sprintf("correction %s of %s %s was recorded at %s, after it: the passport was superseded", id, first.Type, first.ID, formatTime(at))
}
