package audit

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// Escrow holds in a bundle (issue 24). A bundle of agent X holds every
// escrow hold whose provider is X and whose transaction the bundle's chain
// reports: each hold's steps as the canonical content its own hash chain
// hashes (ledger.HoldContent), with the stored hashes and head, and the
// passports that priced them, so that a buyer can prove which score and
// modifier priced a hold. Verify checks each hold's chain, its price
// against the signed passport, its money, and that X's chain reports the
// transaction as the hold says (checkHolds).

// Hold is one escrow hold: its steps from seq 1 to its head.
type Hold struct {
	TransactionID string
	// Head is the hold's head as the exporter stored it.
	Head ledger.Head
	// Steps are the hold's steps, each a Record whose content is
	// ledger.HoldContent of the hold and the step. SealedBy names the
	// erasure that renamed an agent the hold names: its links are then
	// taken as stated (docs/ERRATA.md E58).
	Steps []Record
}

// HoldRows are a stored hold and its steps (HoldStore.Hold, HoldSteps).
type HoldRows struct {
	Hold  ledger.Hold
	Steps []ledger.HoldStep
}

// ReportedHolds returns the holds of holds (the agent's, oldest first)
// whose transaction chain reports: a prune that removed every report of a
// hold's transaction leaves nothing to check the hold against.
func ReportedHolds(holds []HoldRows, chain []ledger.ChainRow) []HoldRows {
	reported := map[string]bool{}
	for i := range chain {
		if r := &chain[i].Record; chain[i].HasRecord && r.Type == ledger.AP2Transaction && r.CorrectionID == "" {
			reported[r.EventID] = true
		}
	}
	var out []HoldRows
	for _, h := range holds {
		if reported[h.Hold.TransactionID] {
			out = append(out, h)
		}
	}
	return out
}

// buildHolds adds src's holds and the passports that priced them. A
// passport src does not have is left out, so that Verify names it.
func (b *Bundle) buildHolds(src Source) error {
	seen := map[string]bool{}
	for _, hr := range ReportedHolds(src.Holds, src.Chain) {
		h := hr.Hold
		out := Hold{TransactionID: h.TransactionID, Head: ledger.Head{Seq: h.Seq, Hash: h.Hash}}
		sealer := ""
		for i := range src.Erasures {
			if e := &src.Erasures[i]; e.Pseudonym == h.BuyerID || e.Pseudonym == h.ProviderID {
				sealer = e.ID
			}
		}
		for k := range hr.Steps {
			s := &hr.Steps[k]
			content, err := contentOf(ledger.HoldContent(&h, s))
			if err != nil {
				return fmt.Errorf("hold %s step %d: %v", h.TransactionID, s.Seq, err)
			}
			out.Steps = append(out.Steps, Record{Hash: s.Hash, Content: content, SealedBy: sealer})
		}
		b.Holds = append(b.Holds, out)
		if id := h.PassportID; id != "" && !seen[id] {
			seen[id] = true
			if doc, ok := src.HoldPassports[id]; ok {
				b.HoldPassports = append(b.HoldPassports, doc)
			}
		}
	}
	return nil
}

// holdMembers are the members of a step's content (ledger.HoldContent), in
// canonical order, and whether each is an integer; "correction" is present
// only in a correction's step.
var holdMembers = []struct {
	name  string
	isInt bool
}{{"action", false}, {"actor", false}, {"amount_cents", true}, {"at", false}, {"buyer_id", false}, {"correction", false},
	{"currency", false}, {"escrow_modifier_bp", true}, {"fee_cents", true}, {"hold_cents", true}, {"kid", false},
	{"passport_id", false}, {"payout_cents", true}, {"provider_id", false}, {"reason", false}, {"refund_cents", true},
	{"released_cents", true}, {"score", true}, {"seq", true}, {"state", false}, {"tier", false}, {"transaction_id", false}}

// decodeHoldStep reads a step's content as the hold's terms and the step,
// withheld strings replaced by placeholders, and checks that
// ledger.HoldContent gives back exactly its canonical form. canonical is
// the hashed content when nothing is withheld, nil otherwise.
func decodeHoldStep(c Content) (h ledger.Hold, s ledger.HoldStep, canonical []byte, err error) {
	for i := range c {
		if m := &c[i]; !m.IsInt && m.Str.Withheld && m.Name != "buyer_id" && m.Name != "actor" && m.Name != "reason" {
			return h, s, nil, fmt.Errorf("member %s is withheld, but only buyer_id, actor and reason may be", m.Name)
		}
	}
	subst := c
	if !c.complete() {
		subst = slices.Clone(c)
		for i := range subst {
			if subst[i].Str.Withheld {
				subst[i].Str = Clear(placeholder(subst[i].Str.S))
			}
		}
	}
	k := 0
	for _, m := range holdMembers {
		if k < len(subst) && subst[k].Name == m.name && subst[k].IsInt == m.isInt && !subst[k].IsRows {
			k++
		} else if m.name != "correction" {
			return h, s, nil, fmt.Errorf("not the content of a hold step: member %s missing or of another type", m.name)
		}
	}
	if k != len(subst) {
		return h, s, nil, fmt.Errorf("not the content of a hold step: %d members, of which %d known", len(subst), k)
	}
	str := func(name string) string { return subst.str(name).S }
	num := subst.integer
	at, err := ledger.ParseTime("at", str("at"))
	if err != nil {
		return h, s, nil, err
	}
	tier, err := score.ParseTier(str("tier"))
	if err != nil {
		return h, s, nil, fmt.Errorf("tier %s is not NONE, STANDARD or ELITE", strconv.Quote(clip(str("tier"))))
	}
	sc := num("score")
	if sc < 0 || sc > score.MaxScore {
		return h, s, nil, fmt.Errorf("score %d is not between 0 and %d", sc, score.MaxScore)
	}
	bp := num("escrow_modifier_bp")
	if bp < 0 || bp > 10000 {
		return h, s, nil, fmt.Errorf("escrow_modifier_bp %d is not between 0 and 10000", bp)
	}
	h = ledger.Hold{TransactionID: str("transaction_id"), ProviderID: str("provider_id"), BuyerID: str("buyer_id"),
		AmountCents: num("amount_cents"), Currency: str("currency"), Score: int(sc), Tier: tier, Modifier: score.Modifier(bp),
		PassportID: str("passport_id"), KID: str("kid"), HoldCents: num("hold_cents"), ReleasedCents: num("released_cents")}
	s = ledger.HoldStep{TransactionID: h.TransactionID, Seq: num("seq"), Action: ledger.HoldAction(str("action")), State: ledger.HoldState(str("state")),
		At: at, Actor: str("actor"), PayoutCents: num("payout_cents"), FeeCents: num("fee_cents"), RefundCents: num("refund_cents"),
		Reason: str("reason"), Correction: str("correction")}
	mine := subst.appendCanonical(nil)
	if !bytes.Equal(ledger.HoldContent(&h, &s), mine) {
		return h, s, nil, fmt.Errorf("not the canonical content of a hold step (a member spelt otherwise)")
	}
	if c.complete() {
		canonical = mine
	}
	return h, s, canonical, nil
}

// sameTerms reports whether two steps state the same hold: every step's
// content repeats the hold's terms and price.
func sameTerms(a, b *ledger.Hold) bool {
	return a.TransactionID == b.TransactionID && a.ProviderID == b.ProviderID && a.BuyerID == b.BuyerID && a.AmountCents == b.AmountCents &&
		a.Currency == b.Currency && a.Score == b.Score && a.Tier == b.Tier && a.Modifier == b.Modifier && a.PassportID == b.PassportID &&
		a.KID == b.KID && a.HoldCents == b.HoldCents && a.ReleasedCents == b.ReleasedCents
}

// ledgerReports are the audited chain's reports of ap2 transactions and its
// corrections, as checkHolds reads them.
type ledgerReports struct {
	reports     map[string][]*decoded
	corrections map[string]*decoded
	// correctionsOf lists the corrections of each transaction.
	correctionsOf map[string][]*decoded
}

func readLedgerReports(dec []decoded) ledgerReports {
	lr := ledgerReports{reports: map[string][]*decoded{}, corrections: map[string]*decoded{}, correctionsOf: map[string][]*decoded{}}
	for k := range dec {
		d := &dec[k]
		switch {
		case d.erasure || d.summary != nil:
		case d.correction && d.cor.EventType == ledger.AP2Transaction:
			lr.corrections[d.cor.ID] = d
			lr.correctionsOf[d.cor.EventID] = append(lr.correctionsOf[d.cor.EventID], d)
		case !d.correction && d.report.Event.Type == ledger.AP2Transaction:
			lr.reports[d.report.Event.ID] = append(lr.reports[d.report.Event.ID], d)
		}
	}
	return lr
}

// reportedStatus is the status a step reports to the ledger (ERRATA E56),
// "" for none.
func reportedStatus(s *ledger.HoldStep) ledger.Status {
	switch {
	case s.Action == ledger.HoldRelease, s.Action == ledger.HoldResolve && s.State == ledger.HoldSettled:
		return ledger.Settled
	case s.Action == ledger.HoldResolve && s.State == ledger.HoldRefunded:
		return ledger.Refunded
	case s.Action == ledger.HoldCancel:
		return ledger.Cancelled
	}
	return ""
}

// checkHolds checks every hold of the bundle (see the package
// documentation): its chain, its price, its money and the audited chain's
// reports of its transaction. dec is the decoded chains (walkChains).
func checkHolds(b *Bundle, keys Keys, dec [][]decoded, r *Report) *Finding {
	if len(b.Holds) == 0 {
		if len(b.HoldPassports) > 0 {
			return &Finding{Code: CodeHoldPrice, Message: "the bundle holds passports that priced holds, but no hold"}
		}
		return nil
	}
	pricing := map[string][]byte{}
	used := map[string]bool{}
	for _, doc := range b.HoldPassports {
		p, err := passport.Parse(doc)
		if err != nil {
			return &Finding{Code: CodeHoldPrice, Message: fmt.Sprintf("a passport that priced holds cannot be read: %v", err)}
		}
		if _, dup := pricing[p.AgentPassportID]; dup {
			return &Finding{Code: CodeHoldPrice, Message: fmt.Sprintf("passport %s is given twice among those that priced holds", clip(p.AgentPassportID))}
		}
		pricing[p.AgentPassportID] = doc
	}
	lr := readLedgerReports(dec[0])
	agent := Clear(b.AgentID)
	held := map[string]bool{}
	withheld, sealed := 0, 0
	for i := range b.Holds {
		hd := &b.Holds[i]
		if held[hd.TransactionID] {
			return findingf(CodeHoldChain, agent, 0, hd.TransactionID, "the hold is given twice")
		}
		held[hd.TransactionID] = true
		terms, steps, f := walkHold(b, hd, dec, &withheld, &sealed)
		if f != nil {
			return f
		}
		if f := checkHoldPrice(b, keys, hd, &terms, steps[0].At, pricing); f != nil {
			return f
		}
		used[terms.PassportID] = true
		if f := checkHoldReports(hd, &terms, steps, lr); f != nil {
			return f
		}
		r.Holds++
	}
	for id := range pricing {
		if !used[id] {
			return &Finding{Code: CodeHoldPrice, Message: fmt.Sprintf("passport %s is given as having priced a hold, but prices none", clip(id))}
		}
	}
	if withheld > 0 {
		r.Warnings = append(r.Warnings, Finding{Code: WarnWithheld, Message: fmt.Sprintf(
			"%d hold steps withhold members (%s): their hashes were taken as stated; their price and money are still checked", withheld, categoriesText(b.Withheld))})
	}
	if sealed > 0 {
		r.Warnings = append(r.Warnings, Finding{Code: WarnSealed, Message: fmt.Sprintf(
			"%d hold steps name an erased agent by its pseudonym (GDPR Art. 17): their links cannot be recomputed and were taken as stated, and an erased provider's passports are revoked, so its holds' price is checked against their own score only (docs/ERRATA.md E58)", sealed)})
	}
	return nil
}

// walkHold decodes a hold's steps and checks their terms, order,
// transitions, links, head and money; it returns the hold's terms (with
// the state and money of its last step) and its steps.
func walkHold(b *Bundle, hd *Hold, dec [][]decoded, withheld, sealed *int) (ledger.Hold, []ledger.HoldStep, *Finding) {
	agent := Clear(b.AgentID)
	tx := clip(hd.TransactionID)
	fail := func(seq int64, format string, args ...any) (ledger.Hold, []ledger.HoldStep, *Finding) {
		return ledger.Hold{}, nil, findingf(CodeHoldChain, agent, seq, tx, "hold: "+format, args...)
	}
	if len(hd.Steps) == 0 {
		return fail(0, "it has no steps")
	}
	var terms ledger.Hold
	steps := make([]ledger.HoldStep, len(hd.Steps))
	var prev ledger.Hash
	var state ledger.HoldState
	for k := range hd.Steps {
		rec := &hd.Steps[k]
		seq := int64(k + 1)
		if cat := unlisted(rec.Content, b); cat != "" {
			return fail(seq, "the step withholds %s, which the bundle does not say it withholds", cat)
		}
		h, s, canonical, err := decodeHoldStep(rec.Content)
		if err != nil {
			return fail(seq, "%v", err)
		}
		switch {
		case k == 0:
			terms = h
		case !sameTerms(&h, &terms):
			return fail(seq, "the step states other terms or another price than step 1: the hold was altered")
		}
		switch {
		case h.TransactionID != hd.TransactionID:
			return fail(seq, "the step is of transaction %s", clip(h.TransactionID))
		case h.ProviderID != b.AgentID:
			return fail(seq, "the hold's provider is %s, not the audited agent", clip(h.ProviderID))
		case s.Seq != seq:
			return fail(seq, "the step at seq %d says it is seq %d: a step was removed, added or moved", seq, s.Seq)
		case (s.Action == ledger.HoldCorrect) != (s.Correction != ""):
			return fail(seq, "the step is %s and names correction %q: only a correction's step names one, and it must", s.Action, clip(s.Correction))
		case !ledger.HoldMoveAllowed(state, s.Action, s.State):
			return fail(seq, "the step moves %q to %q by %q, which no action does", state, s.State, s.Action)
		}
		money := h
		money.State, money.PayoutCents, money.FeeCents, money.RefundCents = s.State, s.PayoutCents, s.FeeCents, s.RefundCents
		if err := ledger.CheckHoldMoney(&money); err != nil {
			return fail(seq, "%v", err)
		}
		switch {
		case rec.SealedBy != "" && !holdsErasure(dec, rec.SealedBy):
			return fail(seq, "the step is marked sealed by erasure %s, whose record is in none of the bundle's chains", clip(rec.SealedBy))
		case rec.SealedBy != "":
			*sealed++
		case canonical == nil:
			*withheld++
		default:
			if got := ledger.Link(prev, canonical); got != rec.Hash {
				return fail(seq, "SHA-256(previous hash ‖ content) is %x…, the step says %x…: the hold was altered", got[:8], rec.Hash[:8])
			}
		}
		s.Hash = rec.Hash
		steps[k], prev, state = s, rec.Hash, s.State
	}
	if last := int64(len(hd.Steps)); hd.Head.Seq != last || hd.Head.Hash != prev {
		return ledger.Hold{}, nil, findingf(CodeHoldChain, agent, hd.Head.Seq, tx,
			"hold: its steps end at seq %d with hash %x…, but its head is seq %d with hash %x…: steps removed, added or the head altered", last, prev[:8], hd.Head.Seq, hd.Head.Hash[:8])
	}
	last := &steps[len(steps)-1]
	terms.State, terms.PayoutCents, terms.FeeCents, terms.RefundCents, terms.Reason = last.State, last.PayoutCents, last.FeeCents, last.RefundCents, last.Reason
	terms.CreatedAt, terms.Seq, terms.Hash = steps[0].At, last.Seq, last.Hash
	return terms, steps, nil
}

// holdsErasure reports whether the erasure id's record is in the decoded
// chains: a hold step may be marked sealed only by an erasure the bundle
// shows.
func holdsErasure(dec [][]decoded, id string) bool {
	for ci := range dec {
		for k := range dec[ci] {
			if d := &dec[ci][k]; d.erasure && d.erasureID == id {
				return true
			}
		}
	}
	return false
}

// checkHoldPrice checks what priced the hold: the passport in force at its
// creation, verified under keys, the provider's, stating the hold's score,
// tier, key and modifier; the modifier the score's, and the hold the
// amount × modifier rounded up (the buyer's favour). A hold without a
// passport was priced at score 0: a full hold.
func checkHoldPrice(b *Bundle, keys Keys, hd *Hold, h *ledger.Hold, created time.Time, pricing map[string][]byte) *Finding {
	agent := Clear(b.AgentID)
	tx := clip(hd.TransactionID)
	fail := func(format string, args ...any) *Finding {
		return findingf(CodeHoldPrice, agent, 0, tx, "hold: "+format, args...)
	}
	if m := score.EscrowModifier(h.Score); h.Modifier != m {
		return fail("the escrow modifier %s is not score %d's, %s", h.Modifier, h.Score, m)
	}
	hold, released, err := score.HoldCents(h.AmountCents, h.Score)
	switch {
	case err != nil:
		return fail("%v", err)
	case h.HoldCents != hold || h.ReleasedCents != released:
		return fail("%d of %d cents held and %d released; the modifier %s gives %d held (rounded up, in the buyer's favour) and %d released",
			h.HoldCents, h.AmountCents, h.ReleasedCents, h.Modifier, hold, released)
	}
	if h.PassportID == "" {
		if h.Score != 0 || h.Tier != score.TierNone || h.KID != "" {
			return fail("no passport priced it, yet it states score %d, tier %s, key %q: only an unknown provider's hold has no passport (score 0, a full hold)", h.Score, h.Tier, clip(h.KID))
		}
		return nil
	}
	doc, ok := pricing[h.PassportID]
	switch {
	case !ok && hd.Steps[0].SealedBy != "":
		// An erasure revoked the erased provider's passports and dropped
		// their documents (docs/ERRATA.md E39): the rest is checked.
		return nil
	case !ok:
		return fail("passport %s, which priced it, is not in the bundle", clip(h.PassportID))
	}
	v := passport.Verify(doc, keys.Passport, created)
	if !v.Valid {
		msgs := make([]string, len(v.Errors))
		for i, p := range v.Errors {
			msgs[i] = p.Error()
		}
		return fail("passport %s does not verify at the hold's creation, %s: %v", clip(h.PassportID), formatTime(created), msgs)
	}
	p := v.Passport
	switch {
	case p.AgentID != b.AgentID:
		return fail("passport %s is agent %q's, not the provider's", clip(h.PassportID), clip(p.AgentID))
	case p.Issuer.KID != h.KID:
		return fail("passport %s was signed with key %q; the hold says %q", clip(h.PassportID), clip(p.Issuer.KID), clip(h.KID))
	case p.Score.Value != h.Score || p.Score.Tier != h.Tier || p.EscrowModifier != h.Modifier:
		return fail("passport %s states score %d, %s, escrow modifier %s; the hold says %d, %s, %s",
			clip(h.PassportID), p.Score.Value, p.Score.Tier, p.EscrowModifier, h.Score, h.Tier, h.Modifier)
	}
	return nil
}

// checkHoldReports checks that the audited chain reports the hold's
// transaction with the hold's buyer and amount, reports each final step's
// status (ERRATA E56), records each correction a step names (and the step
// does what the correction does to a hold, ledger.CorrectedHold), and that
// every correction of the transaction made after the hold's creation is
// in the hold's chain (ERRATA E65).
func checkHoldReports(hd *Hold, h *ledger.Hold, steps []ledger.HoldStep, lr ledgerReports) *Finding {
	tx := clip(hd.TransactionID)
	fail := func(seq int64, format string, args ...any) *Finding {
		return &Finding{Code: CodeHoldReport, Message: fmt.Sprintf("hold: "+format, args...), AgentID: h.ProviderID, Seq: seq, EventID: tx}
	}
	reports := lr.reports[h.TransactionID]
	if len(reports) == 0 {
		return fail(0, "the chain has no report of its transaction")
	}
	for _, d := range reports {
		if e := &d.report.Event; e.BuyerID != h.BuyerID || e.EscrowAmountCents != h.AmountCents {
			return fail(0, "the chain's report at seq %d has buyer %s and %d cents; the hold, buyer %s and %d cents",
				d.seq, shown(e.BuyerID), e.EscrowAmountCents, shown(h.BuyerID), h.AmountCents)
		}
	}
	named := map[string]bool{}
	prev := ledger.HoldHeld
	for i := range steps {
		s := &steps[i]
		if st := reportedStatus(s); st != "" && !slices.ContainsFunc(reports, func(d *decoded) bool { return d.report.Event.Status == st }) {
			return fail(s.Seq, "step %d (%s) reports the transaction %s, but the chain has no such report", s.Seq, s.Action, st)
		}
		if s.Action == ledger.HoldCorrect {
			d, ok := lr.corrections[s.Correction]
			if !ok || d.cor.EventID != h.TransactionID {
				return fail(s.Seq, "step %d names correction %s, which the chain does not record for this transaction", s.Seq, clip(s.Correction))
			}
			named[s.Correction] = true
			if !s.At.Equal(d.cor.At) || s.Actor != d.cor.By {
				return fail(s.Seq, "step %d is not dated and made as correction %s is (%s by %s)", s.Seq, clip(s.Correction), formatTime(d.cor.At), shown(d.cor.By))
			}
			want := prev
			var payout, fee, refund int64
			if st, p, f, r, changed := ledger.CorrectedHold(prev, h.HoldCents, d.cor.Action, d.cor.ToStatus); changed {
				want, payout, fee, refund = st, p, f, r
			} else if i > 0 {
				p := &steps[i-1]
				payout, fee, refund = p.PayoutCents, p.FeeCents, p.RefundCents
			}
			if s.State != want || s.PayoutCents != payout || s.FeeCents != fee || s.RefundCents != refund {
				return fail(s.Seq, "step %d leaves the hold %s (payout %d, fee %d, refund %d); correction %s (%s %s) makes it %s (payout %d, fee %d, refund %d)",
					s.Seq, s.State, s.PayoutCents, s.FeeCents, s.RefundCents, clip(s.Correction), d.cor.Action, d.cor.ToStatus, want, payout, fee, refund)
			}
		}
		prev = s.State
	}
	for _, d := range lr.correctionsOf[h.TransactionID] {
		if !named[d.cor.ID] && !d.cor.At.Before(steps[0].At) {
			return fail(0, "correction %s of the transaction (at %s) is not in the hold's chain: the hold disagrees with the ledger", d.cor.ID, formatTime(d.cor.At))
		}
	}
	return nil
}

// shown names a value in a message, a placeholder by its prefix.
func shown(s string) string {
	if len(s) > 9 && s[:9] == "withheld:" {
		return "withheld:" + s[9:min(len(s), 21)]
	}
	return strconv.Quote(clip(s))
}
