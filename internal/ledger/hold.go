package ledger

import (
	"bytes"
	"fmt"
	"math/bits"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/jcsstr"
	"github.com/swarmscore/swarmscore/score"
)

// Escrow holds (spec §5, issue 24): the hold a marketplace places on a
// buyer's payment to a provider, priced by the provider's score when it is
// placed, and what became of it. The rules live here; the store loads the
// hold, runs DecideHold inside its write transaction and writes what it
// returns, so two concurrent transitions of one hold are decided one after
// the other and the second sees the first's state.
//
// Each change of a hold is a step, and the steps of one hold form a hash
// chain like an agent's records: step n's hash is SHA-256(hash of step
// n−1 ‖ canonical content), the content being the whole hold as the step
// left it (its parties, amount, the score, tier, modifier and passport that
// priced it, its state and money). Editing the price, the money or the
// state of a stored hold breaks its chain (VerifyHold). The final steps
// append the matching ap2_transaction event to the provider's own chain
// (HoldChange.Event), so the score has one source of truth.

// HoldState is a hold's state, named as on the wire.
type HoldState string

// The hold states. Held and Disputed are open: the money is still held.
const (
	HoldHeld      HoldState = "held"
	HoldReleased  HoldState = "released"
	HoldDisputed  HoldState = "disputed"
	HoldSettled   HoldState = "settled"
	HoldRefunded  HoldState = "refunded"
	HoldCancelled HoldState = "cancelled"
)

// HoldStates lists the states in a fixed order (the gauges' and the
// console's).
var HoldStates = []HoldState{HoldHeld, HoldDisputed, HoldReleased, HoldSettled, HoldRefunded, HoldCancelled}

// Valid reports whether s is one of HoldStates.
func (s HoldState) Valid() bool {
	for _, x := range HoldStates {
		if s == x {
			return true
		}
	}
	return false
}

// Open reports whether the money of a hold in state s is still held.
func (s HoldState) Open() bool { return s == HoldHeld || s == HoldDisputed }

// HoldAction is what a step did.
type HoldAction string

// The actions, as the routes and commands name them.
const (
	HoldCreate  HoldAction = "hold"
	HoldRelease HoldAction = "release"
	HoldDispute HoldAction = "dispute"
	HoldResolve HoldAction = "resolve"
	HoldCancel  HoldAction = "cancel"
	// HoldCorrect is the step a correction of the hold's ap2_transaction
	// appends (CorrectHold); no route or command asks for it.
	HoldCorrect HoldAction = "correct"
)

// HoldCurrency is the one currency a hold may be in: the ledger's amounts
// are US cents (§12.1 escrow_amount_usd).
const HoldCurrency = "USD"

// MaxHoldReason is the longest reason a dispute or a resolution may give,
// in bytes.
const MaxHoldReason = 1000

// MaxFeeBPS is the largest platform fee in basis points: the whole amount.
const MaxFeeBPS = 10000

// The codes of the refusals DecideHold makes (errkind.Code).
const (
	HoldConflictCode        = "hold_conflict"
	UnsupportedCurrencyCode = "unsupported_currency"
	InvalidTransitionCode   = "invalid_transition"
)

// Hold is one escrow hold as stored.
type Hold struct {
	TransactionID string
	ProviderID    string
	BuyerID       string
	// Operator is the operator that placed the hold (its token's).
	Operator    string
	AmountCents int64
	Currency    string
	// What priced the hold: the provider's score, tier and modifier when
	// it was placed, and the passport that stated them ("" for a provider
	// the ledger did not know: score 0, a full hold).
	Score      int
	Tier       score.Tier
	Modifier   score.Modifier
	PassportID string
	KID        string
	// HoldCents is AmountCents × Modifier rounded up (the buyer's favour),
	// ReleasedCents the rest, available to the provider at once (§5).
	HoldCents     int64
	ReleasedCents int64
	State         HoldState
	// What became of HoldCents: paid to the provider, kept as the
	// platform's fee, returned to the buyer. While the hold is open all
	// three are 0; after, they add up to HoldCents.
	PayoutCents int64
	FeeCents    int64
	RefundCents int64
	// Reason is the last dispute's, resolution's or correction's reason.
	Reason string
	// CorrectionID is the last correction of the hold's transaction that
	// reached it (CorrectHold), "" for none: the mark that the ledger's
	// record of the transaction was corrected after the hold priced it.
	CorrectionID string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// Seq is the number of steps and Hash the last one's hash: the head
	// of the hold's chain.
	Seq  int64
	Hash Hash
}

// OpenCents is what the hold still holds: HoldCents while open, 0 after.
func (h *Hold) OpenCents() int64 {
	if h.State.Open() {
		return h.HoldCents
	}
	return 0
}

// HoldStep is one change of a hold: the action, who did it and when, and
// the state and money it left.
type HoldStep struct {
	TransactionID string
	Seq           int64
	Action        HoldAction
	State         HoldState
	At            time.Time
	Actor         string
	PayoutCents   int64
	FeeCents      int64
	RefundCents   int64
	Reason        string
	// Correction is the id of the correction that made the step
	// (HoldCorrect), "" for every other action.
	Correction string
	Hash       Hash
}

// HoldPrice is what the provider's current passport says when a hold is
// placed.
type HoldPrice struct {
	Score      int
	Tier       score.Tier
	PassportID string
	KID        string
}

// HoldRequest is one action asked of a hold.
type HoldRequest struct {
	Action        HoldAction
	TransactionID string
	// Operator is who asks (an operator id) and At when (truncated to the
	// microsecond).
	Operator string
	At       time.Time
	// The new hold (HoldCreate).
	ProviderID  string
	BuyerID     string
	AmountCents int64
	Currency    string
	Price       HoldPrice
	// Fee (HoldRelease, HoldResolve to settled): FeeCents when HasFee,
	// else FeeBPS basis points of the amount, rounded down, never more
	// than the hold (the deployment's serve --platform-fee-bps).
	HasFee   bool
	FeeCents int64
	FeeBPS   int
	// Outcome is HoldSettled or HoldRefunded (HoldResolve).
	Outcome HoldState
	// Reason (HoldDispute, HoldResolve).
	Reason string
}

// HoldChange is what DecideHold decided: the hold as it is after, the step
// to append, and the ap2_transaction event to record in the provider's
// chain through the ingest pipeline (nil for none). Unchanged is true for
// a repeated creation: nothing is written, and Hold is the stored one.
type HoldChange struct {
	Hold      Hold
	Step      HoldStep
	Event     *Event
	Created   bool
	Unchanged bool
}

func holdErr(kind error, code, format string, args ...any) error {
	return errkind.WithCode(fmt.Errorf("%w: "+format, append([]any{kind}, args...)...), code)
}

// PlatformFee is the fee of the deployment's rate: amount × bps / 10,000
// rounded down, at most holdCents. bps must be in [0, MaxFeeBPS].
func PlatformFee(amountCents, holdCents int64, bps int) int64 {
	hi, lo := bits.Mul64(uint64(amountCents), uint64(bps))
	q, _ := bits.Div64(hi, lo, 10000) // hi < 10000: amount < 2^63, bps <= 10000
	return min(int64(q), holdCents)
}

// CheckFeeBPS refuses a platform fee rate outside [0, MaxFeeBPS]
// (ErrInvalid).
func CheckFeeBPS(bps int) error {
	if bps < 0 || bps > MaxFeeBPS {
		return fmt.Errorf("%w: the platform fee %d bps is not between 0 and %d", errkind.ErrInvalid, bps, MaxFeeBPS)
	}
	return nil
}

// checkHoldReason refuses a reason that is not UTF-8, is too long or
// holds a control character (optional, unlike a correction's).
func checkHoldReason(s string) error {
	if s == "" {
		return nil
	}
	if !utf8.ValidString(s) || len(s) > MaxHoldReason {
		return fieldErr("reason", "is not UTF-8 text of at most %d bytes", MaxHoldReason)
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return fieldErr("reason", "contains a control character")
		}
	}
	return nil
}

// DecideHold applies req to cur, the stored hold (nil when there is none),
// and returns the change to write. Errors: ErrInvalid (a malformed
// request; code unsupported_currency for a currency other than USD,
// invalid_id for a malformed id), ErrNotFound (no such hold), ErrConflict
// with code hold_conflict (a creation that differs from the stored hold in
// its amount, currency or parties) or invalid_transition (an action the
// hold's state does not allow).
func DecideHold(cur *Hold, req *HoldRequest) (HoldChange, error) {
	if err := CheckID("transaction_id", req.TransactionID); err != nil {
		return HoldChange{}, err
	}
	if err := CheckID("operator", req.Operator); err != nil {
		return HoldChange{}, err
	}
	at := req.At.UTC().Truncate(time.Microsecond)
	if req.Action == HoldCreate {
		return decideCreate(cur, req, at)
	}
	if cur == nil {
		return HoldChange{}, fmt.Errorf("%w: no hold with transaction_id %q", errkind.ErrNotFound, req.TransactionID)
	}
	if err := checkHoldReason(req.Reason); err != nil {
		return HoldChange{}, err
	}
	h := *cur
	h.UpdatedAt = at
	var status Status
	switch {
	case req.Action == HoldRelease && cur.State == HoldHeld:
		fee, err := holdFee(cur, req)
		if err != nil {
			return HoldChange{}, err
		}
		h.State, h.FeeCents, h.PayoutCents, status = HoldReleased, fee, cur.HoldCents-fee, Settled
	case req.Action == HoldDispute && cur.State == HoldHeld:
		h.State, h.Reason = HoldDisputed, req.Reason
	case req.Action == HoldResolve && cur.State == HoldDisputed:
		h.Reason = req.Reason
		switch req.Outcome {
		case HoldSettled:
			fee, err := holdFee(cur, req)
			if err != nil {
				return HoldChange{}, err
			}
			h.State, h.FeeCents, h.PayoutCents, status = HoldSettled, fee, cur.HoldCents-fee, Settled
		case HoldRefunded:
			h.State, h.RefundCents, status = HoldRefunded, cur.HoldCents, Refunded
		default:
			return HoldChange{}, fmt.Errorf("%w: outcome %q is not settled or refunded", errkind.ErrInvalid, req.Outcome)
		}
	case req.Action == HoldCancel && cur.State == HoldHeld:
		h.State, h.RefundCents, status = HoldCancelled, cur.HoldCents, Cancelled
	case req.Action == HoldRelease || req.Action == HoldDispute || req.Action == HoldResolve || req.Action == HoldCancel:
		return HoldChange{}, holdErr(errkind.ErrConflict, InvalidTransitionCode, "hold %s is %s: it cannot be %s", cur.TransactionID, cur.State, pastTense(req.Action))
	default:
		return HoldChange{}, fmt.Errorf("%w: unknown hold action %q", errkind.ErrInvalid, req.Action)
	}
	ch := HoldChange{Hold: h}
	if status != "" {
		ch.Event = &Event{Type: AP2Transaction, ID: h.TransactionID, AgentID: h.ProviderID, BuyerID: h.BuyerID, Status: status,
			EscrowAmountCents: h.AmountCents, StartedAt: h.CreatedAt, EndedAt: at}
	}
	ch.Step = h.step(req.Action, req.Operator, at)
	ch.Hold.Seq, ch.Hold.Hash = ch.Step.Seq, ch.Step.Hash
	return ch, nil
}

func pastTense(a HoldAction) string {
	switch a {
	case HoldRelease:
		return "released"
	case HoldDispute:
		return "disputed"
	case HoldResolve:
		return "resolved"
	case HoldCancel:
		return "cancelled"
	}
	return string(a)
}

// holdFee is the fee a release or a settlement keeps.
func holdFee(cur *Hold, req *HoldRequest) (int64, error) {
	if !req.HasFee {
		if err := CheckFeeBPS(req.FeeBPS); err != nil {
			return 0, err
		}
		return PlatformFee(cur.AmountCents, cur.HoldCents, req.FeeBPS), nil
	}
	if req.FeeCents < 0 || req.FeeCents > cur.HoldCents {
		return 0, fmt.Errorf("%w: fee_cents %d is not between 0 and the hold, %d", errkind.ErrInvalid, req.FeeCents, cur.HoldCents)
	}
	return req.FeeCents, nil
}

func decideCreate(cur *Hold, req *HoldRequest, at time.Time) (HoldChange, error) {
	if err := CheckID("provider_id", req.ProviderID); err != nil {
		return HoldChange{}, err
	}
	if err := CheckID("buyer_id", req.BuyerID); err != nil {
		return HoldChange{}, err
	}
	if req.Currency != HoldCurrency {
		return HoldChange{}, holdErr(errkind.ErrInvalid, UnsupportedCurrencyCode, "currency %q is not supported (only %s: the ledger's amounts are US cents)", req.Currency, HoldCurrency)
	}
	if req.AmountCents <= 0 || req.AmountCents > MaxEscrowCents {
		return HoldChange{}, fmt.Errorf("%w: amount_cents %d is not between 1 and %d", errkind.ErrInvalid, req.AmountCents, int64(MaxEscrowCents))
	}
	if req.ProviderID == req.BuyerID {
		return HoldChange{}, fmt.Errorf("%w: provider_id and buyer_id are both %q: an agent cannot pay itself", errkind.ErrInvalid, req.ProviderID)
	}
	if cur != nil {
		if cur.ProviderID != req.ProviderID || cur.BuyerID != req.BuyerID || cur.AmountCents != req.AmountCents || cur.Currency != req.Currency {
			return HoldChange{}, holdErr(errkind.ErrConflict, HoldConflictCode,
				"a hold for transaction %s exists with other terms (provider %s, buyer %s, %d %s)", cur.TransactionID, cur.ProviderID, cur.BuyerID, cur.AmountCents, cur.Currency)
		}
		return HoldChange{Hold: *cur, Unchanged: true}, nil
	}
	hold, released, err := score.HoldCents(req.AmountCents, req.Price.Score)
	if err != nil {
		return HoldChange{}, fmt.Errorf("%w: %v", errkind.ErrInvalid, err)
	}
	h := Hold{
		TransactionID: req.TransactionID, ProviderID: req.ProviderID, BuyerID: req.BuyerID, Operator: req.Operator,
		AmountCents: req.AmountCents, Currency: req.Currency,
		Score: req.Price.Score, Tier: req.Price.Tier, Modifier: score.EscrowModifier(req.Price.Score),
		PassportID: req.Price.PassportID, KID: req.Price.KID,
		HoldCents: hold, ReleasedCents: released, State: HoldHeld, CreatedAt: at, UpdatedAt: at,
	}
	ev := &Event{Type: AP2Transaction, ID: h.TransactionID, AgentID: h.ProviderID, BuyerID: h.BuyerID, Status: Held,
		EscrowAmountCents: h.AmountCents, StartedAt: at}
	if err := ev.Validate(); err != nil {
		return HoldChange{}, err
	}
	ch := HoldChange{Hold: h, Event: ev, Created: true}
	ch.Step = h.step(HoldCreate, req.Operator, at)
	ch.Hold.Seq, ch.Hold.Hash = ch.Step.Seq, ch.Step.Hash
	return ch, nil
}

// step returns the step that leaves h as it is, after h's last one.
func (h *Hold) step(a HoldAction, actor string, at time.Time) HoldStep {
	s := HoldStep{TransactionID: h.TransactionID, Seq: h.Seq + 1, Action: a, State: h.State, At: at, Actor: actor,
		PayoutCents: h.PayoutCents, FeeCents: h.FeeCents, RefundCents: h.RefundCents, Reason: h.Reason}
	s.Hash = Link(h.Hash, HoldContent(h, &s))
	return s
}

// HoldContent is the canonical content of step s of hold h: RFC 8785 JSON
// of the hold's terms and price (from h) and the state, money and reason
// the step left, with the step's action, actor, time and seq, and the
// correction that made it (a "correction" member, only when there is one). Its bytes
// never change for a stored step: changing them breaks every hold's chain.
func HoldContent(h *Hold, s *HoldStep) []byte {
	b := make([]byte, 0, 512)
	b = append(b, `{"action":`...)
	b = jcsstr.Append(b, string(s.Action))
	b = append(b, `,"actor":`...)
	b = jcsstr.Append(b, s.Actor)
	b = append(b, `,"amount_cents":`...)
	b = strconv.AppendInt(b, h.AmountCents, 10)
	b = append(b, `,"at":`...)
	b = appendJSONTime(b, s.At)
	b = append(b, `,"buyer_id":`...)
	b = jcsstr.Append(b, h.BuyerID)
	// Only a correction's step has the member, so that every step stored
	// before corrections reached holds hashes as it did.
	if s.Correction != "" {
		b = append(b, `,"correction":`...)
		b = jcsstr.Append(b, s.Correction)
	}
	b = append(b, `,"currency":`...)
	b = jcsstr.Append(b, h.Currency)
	b = append(b, `,"escrow_modifier_bp":`...)
	b = strconv.AppendInt(b, int64(h.Modifier.BasisPoints()), 10)
	b = append(b, `,"fee_cents":`...)
	b = strconv.AppendInt(b, s.FeeCents, 10)
	b = append(b, `,"hold_cents":`...)
	b = strconv.AppendInt(b, h.HoldCents, 10)
	b = append(b, `,"kid":`...)
	b = jcsstr.Append(b, h.KID)
	b = append(b, `,"passport_id":`...)
	b = jcsstr.Append(b, h.PassportID)
	b = append(b, `,"payout_cents":`...)
	b = strconv.AppendInt(b, s.PayoutCents, 10)
	b = append(b, `,"provider_id":`...)
	b = jcsstr.Append(b, h.ProviderID)
	b = append(b, `,"reason":`...)
	b = jcsstr.Append(b, s.Reason)
	b = append(b, `,"refund_cents":`...)
	b = strconv.AppendInt(b, s.RefundCents, 10)
	b = append(b, `,"released_cents":`...)
	b = strconv.AppendInt(b, h.ReleasedCents, 10)
	b = append(b, `,"score":`...)
	b = strconv.AppendInt(b, int64(h.Score), 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, s.Seq, 10)
	b = append(b, `,"state":`...)
	b = jcsstr.Append(b, string(s.State))
	b = append(b, `,"tier":`...)
	b = jcsstr.Append(b, h.Tier.String())
	b = append(b, `,"transaction_id":`...)
	b = jcsstr.Append(b, h.TransactionID)
	return append(b, '}')
}

// VerifyHold checks a stored hold against its steps, in seq order: every
// link recomputed from the hold's terms and the step, the steps numbered
// from 1 and following the transitions DecideHold allows, the hold's state,
// money, reason and head those of its last step, and its money adding up
// (HoldCents = OpenCents + PayoutCents + FeeCents + RefundCents, ReleasedCents
// = AmountCents − HoldCents). It returns nil or what is wrong first.
func VerifyHold(h *Hold, steps []HoldStep) error {
	if len(steps) == 0 {
		return fmt.Errorf("hold %s has no steps", h.TransactionID)
	}
	var prev Hash
	var state HoldState
	for i := range steps {
		s := &steps[i]
		if s.Seq != int64(i+1) {
			return fmt.Errorf("hold %s: step %d is missing (next present is %d)", h.TransactionID, i+1, s.Seq)
		}
		if (s.Action == HoldCorrect) != (s.Correction != "") {
			return fmt.Errorf("hold %s: step %d is %s and names correction %q: only a correction's step names one, and it must", h.TransactionID, s.Seq, s.Action, s.Correction)
		}
		if !HoldMoveAllowed(state, s.Action, s.State) {
			if state == "" {
				return fmt.Errorf("hold %s: step 1 is %s to %s, not hold to held", h.TransactionID, s.Action, s.State)
			}
			return fmt.Errorf("hold %s: step %d moves %s to %s by %s, which no action does", h.TransactionID, s.Seq, state, s.State, s.Action)
		}
		if Link(prev, HoldContent(h, s)) != s.Hash {
			return fmt.Errorf("hold %s: step %d does not hash to its stored hash (the hold or the step was altered)", h.TransactionID, s.Seq)
		}
		prev, state = s.Hash, s.State
	}
	last := &steps[len(steps)-1]
	switch {
	case h.Seq != last.Seq || !bytes.Equal(h.Hash[:], last.Hash[:]):
		return fmt.Errorf("hold %s: its head (step %d) is not its last step (%d)", h.TransactionID, h.Seq, last.Seq)
	case h.State != last.State || h.PayoutCents != last.PayoutCents || h.FeeCents != last.FeeCents || h.RefundCents != last.RefundCents || h.Reason != last.Reason:
		return fmt.Errorf("hold %s: its state or money differs from its last step's", h.TransactionID)
	case h.CorrectionID != lastCorrection(steps):
		return fmt.Errorf("hold %s: it says correction %q reached it last; its steps say %q", h.TransactionID, h.CorrectionID, lastCorrection(steps))
	}
	return CheckHoldMoney(h)
}

// lastCorrection is the correction the last correction's step names, "" for
// none.
func lastCorrection(steps []HoldStep) string {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Correction != "" {
			return steps[i].Correction
		}
	}
	return ""
}

// CheckHoldMoney checks that a hold's money adds up: ReleasedCents =
// AmountCents − HoldCents, and HoldCents = OpenCents + PayoutCents +
// FeeCents + RefundCents, none negative. It returns nil or what is wrong.
func CheckHoldMoney(h *Hold) error {
	switch {
	case h.ReleasedCents != h.AmountCents-h.HoldCents || h.HoldCents < 0 || h.HoldCents > h.AmountCents:
		return fmt.Errorf("hold %s: the hold %d and the release %d do not add up to the amount %d", h.TransactionID, h.HoldCents, h.ReleasedCents, h.AmountCents)
	case h.HoldCents != h.OpenCents()+h.PayoutCents+h.FeeCents+h.RefundCents || h.PayoutCents < 0 || h.FeeCents < 0 || h.RefundCents < 0:
		return fmt.Errorf("hold %s: held %d ≠ open %d + payout %d + fee %d + refund %d", h.TransactionID, h.HoldCents, h.OpenCents(), h.PayoutCents, h.FeeCents, h.RefundCents)
	}
	return nil
}

// HoldMoveAllowed reports whether action a may move a hold from state from
// ("" before its first step) to state to: DecideHold's transitions and
// CorrectHold's moves.
func HoldMoveAllowed(from HoldState, a HoldAction, to HoldState) bool {
	switch {
	case from == "":
		return a == HoldCreate && to == HoldHeld
	case a == HoldCorrect:
		return correctionMoveAllowed(from, to)
	case from == HoldHeld:
		return a == HoldRelease && to == HoldReleased || a == HoldDispute && to == HoldDisputed || a == HoldCancel && to == HoldCancelled
	case from == HoldDisputed:
		return a == HoldResolve && (to == HoldSettled || to == HoldRefunded)
	}
	return false
}

// HoldTotals are the money of a set of holds, as escrow reconcile adds
// it up.
type HoldTotals struct {
	Holds   int
	Held    int64 // every hold's HoldCents
	Open    int64
	Payouts int64
	Fees    int64
	Refunds int64
}

// Add counts h.
func (t *HoldTotals) Add(h *Hold) {
	t.Holds++
	t.Held += h.HoldCents
	t.Open += h.OpenCents()
	t.Payouts += h.PayoutCents
	t.Fees += h.FeeCents
	t.Refunds += h.RefundCents
}

// Balanced reports whether Held = Open + Payouts + Fees + Refunds.
func (t *HoldTotals) Balanced() bool { return t.Held == t.Open+t.Payouts+t.Fees+t.Refunds }

// HoldDecider decides a change of a hold from the stored one (nil when
// there is none): DecideHold with the request bound.
type HoldDecider func(cur *Hold) (HoldChange, error)

// HoldQuery filters a listing of holds: by state and by provider ("" for
// any).
type HoldQuery struct {
	State      HoldState
	ProviderID string
}

// HoldStats are the holds' figures for /metrics and the console.
type HoldStats struct {
	// ByState counts the holds in each state (every state present).
	ByState map[HoldState]int64
	// HeldCents is what the open holds hold.
	HeldCents int64
}
