package audit

import (
	"fmt"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// Codes of the discrepancies Verify reports. They are stable: scripts may
// switch on them.
const (
	// CodeMalformed: the bundle cannot be read (Parse), or its chains are
	// not what a bundle holds (none, or the audited agent's not first and
	// whole).
	CodeMalformed = "malformed_bundle"
	// CodeChainSeq: a record is not at the position its seq names: a
	// record removed, added twice or out of order.
	CodeChainSeq = "chain_seq"
	// CodeChainContent: a record's content is not a report's or a
	// correction's as the ledger writes them, records an invalid event,
	// names another chain's agent, or withholds a member that may not be.
	CodeChainContent = "chain_content"
	// CodeChainLink: SHA-256(previous hash ‖ content) is not the record's
	// hash: the record was altered (or one before it removed).
	CodeChainLink = "chain_link"
	// CodeChainHead: the chain does not end at the head it states.
	CodeChainHead = "chain_head"
	// CodeCheckpoint: the checkpoint cannot be read, or its signature does
	// not verify under the keys given.
	CodeCheckpoint = "checkpoint_invalid"
	// CodeCheckpointProof: a chain's head at the checkpoint is not the
	// leaf the proof proves to be in the checkpoint's tree: the chain was
	// rewritten or truncated since, or the proof is false.
	CodeCheckpointProof = "checkpoint_proof"
	// CodeReportRule: reports of one event break the ledger's rules: a
	// status that does not move forward, a changed agent, buyer, amount,
	// start or operator, a report after a correction, an event reported in
	// two chains.
	CodeReportRule = "report_rule"
	// CodeCorrectionRule: a correction does not apply to the event as the
	// chain has it: another agent's event, not final, voided, another
	// status than it had, or an action its before and after states
	// contradict.
	CodeCorrectionRule = "correction_rule"
	// CodeOriginMissing: an event moved to the agent from another chain
	// has no final report in the bundle, so its end time is unknown.
	CodeOriginMissing = "origin_missing"
	// CodeEvents: the bundle's account of an event (counted or why not,
	// status, end time, corrections, moves) is not what the records give,
	// or it lists other events than the chain records.
	CodeEvents = "events_mismatch"
	// CodeCounts: the counts the records give as of as_of are not the
	// bundle's.
	CodeCounts = "counts_mismatch"
	// CodeScore: the score block is not score.Compute of the counts.
	CodeScore = "score_mismatch"
	// CodePassport: the passport does not verify (passport.Verify at
	// as_of: signature, consistency, expiry), names another agent, or was
	// computed after as_of.
	CodePassport = "passport_invalid"
	// CodePruned: the chain starts after seq 1 without the summary record
	// of the prune that removed its first records, or the window audited
	// reaches back to events a prune removed, so its counts cannot be
	// re-derived.
	CodePruned = "pruned"
	// CodePassportCounts: the counts the records give as of the passport's
	// computed_at are not the passport's.
	CodePassportCounts = "passport_counts"
	// CodeHoldChain: an escrow hold's steps are not its chain: a step's
	// content is not a hold step's, states other terms than step 1, is
	// out of seq, makes a move no action makes or money that does not
	// add up, does not hash to its stated hash, or the steps do not end
	// at the stated head.
	CodeHoldChain = "hold_chain"
	// CodeHoldPrice: what priced a hold is not what it says: the passport
	// is missing, does not verify at the hold's creation, is another
	// agent's or states another score, tier, key or modifier; or the
	// modifier is not the score's, or the hold not the amount × modifier
	// rounded up.
	CodeHoldPrice = "hold_price"
	// CodeHoldReport: the audited chain does not report a hold's
	// transaction as the hold says (buyer, amount, the status of each
	// final step), or a correction of it and the hold's chain disagree.
	CodeHoldReport = "hold_report"
)

// Finding is one result of a check: the discrepancy that failed a bundle,
// or a warning about what it cannot show. Where it applies to a record it
// names the chain's agent (a commitment's prefix when withheld), the seq
// and the event.
type Finding struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	AgentID string `json:"agent_id,omitempty"`
	Seq     int64  `json:"seq,omitempty"`
	EventID string `json:"event_id,omitempty"`
}

func (f *Finding) Error() string {
	var where []string
	if f.AgentID != "" {
		where = append(where, "agent "+f.AgentID)
	}
	if f.Seq != 0 {
		where = append(where, fmt.Sprintf("seq %d", f.Seq))
	}
	if f.EventID != "" {
		where = append(where, "event "+f.EventID)
	}
	if len(where) == 0 {
		return f.Code + ": " + f.Message
	}
	return f.Code + ": " + strings.Join(where, " ") + ": " + f.Message
}

func findingf(code string, agent Value, seq int64, event, format string, args ...any) *Finding {
	return &Finding{Code: code, Message: fmt.Sprintf(format, args...), AgentID: agent.String(), Seq: seq, EventID: event}
}

// history is one event as the audited agent's chain has it so far.
type history struct {
	Event
	mine   bool // it counts for the audited agent now
	voided bool
	// reported: its reports are in the audited chain; lastSeq, buyer,
	// operator, escrow and start are the latest one's.
	reported bool
	lastSeq  int64
	report   *decoded
	// needOrigin: it was moved here from a chain the bundle must hold its
	// report of.
	needOrigin bool
	corrected  bool
	// correctedAt are the times of Corrections.
	correctedAt []time.Time
}

// originReport is the latest report of an event in another chain.
type originReport struct {
	chain int
	rec   *decoded
}

// derivation is every event of the audited chain, in the order of its
// first record there.
type derivation struct {
	events []*history
	index  map[ledger.EventKey]int
}

// derive replays the audited chain (chains[0], decoded) record by record
// under the ledger's rules, taking the end times of events moved to the
// agent from the other chains' reports, and returns each event's state, or
// the first record that breaks a rule.
func derive(b *Bundle, dec [][]decoded) (*derivation, *Finding) {
	audited := b.AgentID
	origins := map[ledger.EventKey]originReport{}
	for ci := 1; ci < len(b.Chains); ci++ {
		last := map[ledger.EventKey]*decoded{}
		for k := range dec[ci] {
			d := &dec[ci][k]
			if d.correction || d.erasure || d.summary != nil {
				continue
			}
			key := ledger.EventKey{Type: d.report.Event.Type, ID: d.report.Event.ID}
			if f := checkReport(last[key], d, b.Chains[ci].AgentID); f != nil {
				return nil, f
			}
			last[key] = d
		}
		for key, d := range last {
			if o, ok := origins[key]; ok && o.chain != ci {
				return nil, findingf(CodeReportRule, b.Chains[ci].AgentID, d.seq, key.ID, "%s %s is reported in two chains", key.Type, key.ID)
			}
			origins[key] = originReport{ci, d}
		}
	}
	dv := &derivation{index: map[ledger.EventKey]int{}}
	chain := b.Chains[0].AgentID
	for k := range dec[0] {
		d := &dec[0][k]
		if d.erasure {
			continue // an erasure records no event
		}
		if d.summary != nil {
			continue // pruned events: outside every window an audit may ask for (walkChains)
		}
		var key ledger.EventKey
		if d.correction {
			key = ledger.EventKey{Type: d.cor.EventType, ID: d.cor.EventID}
		} else {
			key = ledger.EventKey{Type: d.report.Event.Type, ID: d.report.Event.ID}
		}
		i, ok := dv.index[key]
		if !ok {
			i = len(dv.events)
			dv.index[key] = i
			dv.events = append(dv.events, &history{Event: Event{Type: key.Type, ID: key.ID, Corrections: []string{}}})
		}
		h := dv.events[i]
		if !d.correction {
			if h.corrected {
				return nil, findingf(CodeReportRule, chain, d.seq, key.ID, "a report of %s follows a correction of it; corrections apply to final events only", key.Type)
			}
			var prev *decoded
			if h.reported {
				prev = h.report
			}
			if f := checkReport(prev, d, chain); f != nil {
				return nil, f
			}
			if _, ok := origins[key]; ok {
				return nil, findingf(CodeReportRule, chain, d.seq, key.ID, "%s %s is reported in two chains", key.Type, key.ID)
			}
			h.reported, h.report, h.lastSeq, h.mine = true, d, d.seq, true
			h.Status, h.EndedAt = d.report.Event.Status, d.report.Event.EndedAt
			continue
		}
		if f := h.apply(d, audited, chain); f != nil {
			return nil, f
		}
	}
	for _, h := range dv.events {
		if !h.needOrigin {
			continue
		}
		o, ok := origins[h.Key()]
		if !ok {
			return nil, findingf(CodeOriginMissing, chain, 0, h.ID, "%s %s was moved here from %s, but the bundle holds no report of it",
				h.Type, h.ID, h.MovedFrom)
		}
		if !o.rec.report.Event.Status.Terminal() {
			return nil, findingf(CodeReportRule, b.Chains[o.chain].AgentID, o.rec.seq, h.ID, "%s %s was moved, but its latest report is %s, not final",
				h.Type, h.ID, o.rec.report.Event.Status)
		}
		h.EndedAt = o.rec.report.Event.EndedAt
	}
	return dv, nil
}

// checkReport checks report d of an event against its previous report in
// the same chain (nil for the first): the status moves forward, the
// immutable members are unchanged (withheld ones by their commitments,
// which are equal for equal values within a bundle).
func checkReport(prev, d *decoded, chain Value) *Finding {
	e := &d.report.Event
	if prev == nil {
		return nil
	}
	p := &prev.report.Event
	switch {
	case p.EscrowAmountCents != e.EscrowAmountCents:
		return findingf(CodeReportRule, chain, d.seq, e.ID, "escrow_amount_cents changed from %d to %d", p.EscrowAmountCents, e.EscrowAmountCents)
	case !p.StartedAt.Equal(e.StartedAt):
		return findingf(CodeReportRule, chain, d.seq, e.ID, "started_at changed from %s to %s", formatTime(p.StartedAt), formatTime(e.StartedAt))
	case p.BuyerID != e.BuyerID:
		return findingf(CodeReportRule, chain, d.seq, e.ID, "buyer_id changed")
	case prev.report.Operator != d.report.Operator:
		return findingf(CodeReportRule, chain, d.seq, e.ID, "the operator changed; an event belongs to the operator that first reported it")
	}
	if err := ledger.CheckTransition(e.Type, p.Status, e.Status); err != nil {
		return findingf(CodeReportRule, chain, d.seq, e.ID, "%v", err)
	}
	return nil
}

// apply applies correction d, recorded in the audited chain, to h.
func (h *history) apply(d *decoded, audited string, chain Value) *Finding {
	c := &d.cor
	from, to := Clear(c.FromAgent), Clear(c.ToAgent)
	// A withheld agent is another agent: the audited agent's id is never
	// withheld, and decode put a placeholder in its place.
	fromHere, toHere := c.FromAgent == audited, c.ToAgent == audited
	fail := func(format string, args ...any) *Finding {
		return findingf(CodeCorrectionRule, chain, d.seq, c.EventID, "correction %s: "+format, append([]any{c.ID}, args...)...)
	}
	switch {
	case fromHere:
		switch {
		case !h.reported && !h.mine:
			return fail("corrects %s %s, which this chain never recorded", c.EventType, c.EventID)
		case !h.mine:
			return fail("corrects %s %s, which was moved to %s before", c.EventType, c.EventID, h.MovedTo)
		case h.voided:
			return fail("corrects %s %s, which was voided", c.EventType, c.EventID)
		case c.FromStatus != h.Status:
			return fail("finds %s %s in status %s, but the chain has it %s", c.EventType, c.EventID, c.FromStatus, h.Status)
		}
		switch c.Action {
		case ledger.ActionStatus:
			h.Status = c.ToStatus
		case ledger.ActionVoid:
			h.voided = true
		case ledger.ActionReattribute:
			h.mine = false
			h.MovedTo = withheldAs(d, "to_agent", to)
		}
	case toHere:
		if h.mine {
			return fail("moves %s %s here, but it is this agent's already", c.EventType, c.EventID)
		}
		h.mine, h.Status = true, c.ToStatus
		h.MovedFrom, h.MovedTo = withheldAs(d, "from_agent", from), Value{}
		h.needOrigin = !h.reported
	default:
		return fail("moves %s %s between two other agents, yet is in this agent's chain", c.EventType, c.EventID)
	}
	h.corrected = true
	h.Corrections = append(h.Corrections, c.ID)
	h.correctedAt = append(h.correctedAt, c.At)
	return nil
}

// withheldAs is the Value of member name of d's content: v, or the
// commitment when it is withheld.
func withheldAs(d *decoded, name string, v Value) Value {
	if m, ok := d.content.get(name); ok && m.Str.Withheld {
		return m.Str
	}
	return v
}

// outcome classifies h as of asOf.
func (h *history) outcome(asOf time.Time) Outcome {
	switch {
	case !h.mine:
		return MovedAway
	case h.voided:
		return Voided
	case !h.Status.Terminal():
		return NotFinal
	case !h.Status.CountsTotal():
		return StatusNotCounted
	case h.EndedAt.Before(ledger.WindowStart(asOf)):
		return BeforeWindow
	case h.EndedAt.After(asOf):
		return AfterAsOf
	}
	return Counted
}

// counts are the four counts as of asOf.
func (dv *derivation) counts(asOf time.Time) score.Counts {
	var c score.Counts
	for _, h := range dv.events {
		if h.outcome(asOf) != Counted {
			continue
		}
		ok := h.Status.CountsSuccess()
		if h.Type == ledger.ConduitSession {
			c.ConduitTotal++
			if ok {
				c.ConduitSuccess++
			}
		} else {
			c.AP2Total++
			if ok {
				c.AP2Success++
			}
		}
	}
	return c
}

// Account replays the bundle's records as Verify does (the ledger's rules,
// corrections, end times of events moved in from other chains) and returns
// what they say as of AsOf: every event's account and the four counts. It
// checks neither links, heads, the checkpoint nor the passport, and it
// ignores the bundle's own Events and Counts: it is what those should be.
// The error is a *Finding: records that cannot be read or break a rule.
func (b *Bundle) Account() ([]Event, score.Counts, error) {
	dec, f := walkChains(b, nil)
	if f != nil {
		return nil, score.Counts{}, f
	}
	dv, f := derive(b, dec)
	if f != nil {
		return nil, score.Counts{}, f
	}
	return dv.account(b.AsOf), dv.counts(b.AsOf), nil
}

// account is the events as the bundle lists them, as of asOf.
func (dv *derivation) account(asOf time.Time) []Event {
	out := make([]Event, len(dv.events))
	for i, h := range dv.events {
		e := h.Event
		e.Outcome = h.outcome(asOf)
		if !e.Status.Terminal() {
			e.EndedAt = time.Time{}
		}
		out[i] = e
	}
	return out
}
