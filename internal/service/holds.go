package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// Holds are the escrow holds of spec §5 (issue 24): a marketplace places a
// hold on a buyer's payment to a provider, priced by the provider's current
// passport, then releases, disputes, resolves or cancels it. Every change
// of a hold goes through apply, which records it with its ap2_transaction
// event in one transaction: the one place a change of a hold happens, and
// so the one place to announce it (the hold.updated webhook).
type Holds struct {
	store interface {
		HoldStore
		ErasureStore
	}
	certs   *Certificates
	memo    *certMemo
	clock   clock
	horizon horizon
	actions *actionLog
	feeBPS  int
}

// HoldInput is a new hold as a marketplace asks for it.
type HoldInput struct {
	TransactionID string
	ProviderID    string
	BuyerID       string
	AmountCents   int64
	Currency      string
}

// HoldAction is one change asked of an existing hold: Action is release,
// dispute, resolve or cancel; FeeCents (when HasFee) overrides the
// deployment's platform fee on a release or a settled resolution; Outcome
// is settled or refunded (resolve); Reason is free text (dispute, resolve).
type HoldAction struct {
	Action   ledger.HoldAction
	HasFee   bool
	FeeCents int64
	Outcome  ledger.HoldState
	Reason   string
}

// CreateHold places a hold on a payment (POST /swarmscore/escrow/holds),
// priced by the provider's current passport: an agent the ledger does not
// know has score 0 and a full hold. The same request again returns the
// stored hold with created false. The provider's chain records the
// transaction as HELD. Errors: ErrInvalid (malformed fields; code
// unsupported_currency, invalid_id), ErrConflict (code hold_conflict: the
// transaction has a hold with other terms; or the ledger holds the
// transaction with other terms), ErrUnavailable.
func (u *Holds) CreateHold(ctx context.Context, c Caller, in HoldInput) (ledger.Hold, bool, error) {
	req := ledger.HoldRequest{Action: ledger.HoldCreate, TransactionID: in.TransactionID, Operator: c.Operator,
		ProviderID: in.ProviderID, BuyerID: in.BuyerID, AmountCents: in.AmountCents, Currency: in.Currency}
	if err := ledger.CheckID("provider_id", in.ProviderID); err != nil {
		return ledger.Hold{}, false, err
	}
	price, err := u.price(ctx, in.ProviderID)
	if err != nil {
		return ledger.Hold{}, false, err
	}
	req.Price = price
	ch, err := u.apply(ctx, &req)
	return ch.Hold, ch.Created, err
}

// price reads what the provider's current passport says.
func (u *Holds) price(ctx context.Context, provider string) (ledger.HoldPrice, error) {
	cert, err := u.certs.Certificate(ctx, provider)
	if errors.Is(err, errkind.ErrNotFound) {
		// A new provider's first payment: no history is the lowest
		// score, and no passport priced it.
		return ledger.HoldPrice{Score: 0, Tier: score.TierNone}, nil
	}
	if err != nil {
		return ledger.HoldPrice{}, err
	}
	p, err := passport.Parse(cert.Passport)
	if err != nil {
		return ledger.HoldPrice{}, fmt.Errorf("the provider's stored passport cannot be read: %w", err)
	}
	return ledger.HoldPrice{Score: p.Score.Value, Tier: p.Score.Tier, PassportID: p.AgentPassportID, KID: p.Issuer.KID}, nil
}

// ChangeHold applies a release, dispute, resolution or cancellation to the
// hold of transaction id. A release (and a settled resolution) pays the
// hold less the fee to the provider and records the transaction SETTLED; a
// refunded resolution and a cancellation return the hold to the buyer and
// record it REFUNDED or CANCELLED; a dispute records nothing in the
// ledger (docs/ERRATA.md E56). Errors: ErrNotFound, ErrInvalid (a fee
// outside [0, hold], an unknown outcome, a reason too long), ErrConflict
// (code invalid_transition: the hold's state does not allow it; or the
// ledger refuses the transaction's new status), ErrUnavailable.
func (u *Holds) ChangeHold(ctx context.Context, c Caller, id string, a HoldAction) (ledger.Hold, error) {
	req := ledger.HoldRequest{Action: a.Action, TransactionID: id, Operator: c.Operator, HasFee: a.HasFee, FeeCents: a.FeeCents,
		FeeBPS: u.feeBPS, Outcome: a.Outcome, Reason: a.Reason}
	switch a.Action {
	case ledger.HoldRelease, ledger.HoldDispute, ledger.HoldResolve, ledger.HoldCancel:
	default:
		return ledger.Hold{}, fmt.Errorf("%w: unknown hold action %q", errkind.ErrInvalid, a.Action)
	}
	ch, err := u.apply(ctx, &req)
	return ch.Hold, err
}

// apply is the one function through which every hold changes: it decides
// req against the stored hold inside the store's transaction, records the
// change's ap2_transaction event like an ingest (so the certificate memo
// forgets the provider's passport), and logs the action. A change that
// returns without error here is committed: this is where hold.updated is
// to be emitted (for a change with Unchanged false).
func (u *Holds) apply(ctx context.Context, req *ledger.HoldRequest) (ledger.HoldChange, error) {
	req.At = u.clock.exact()
	b := ledger.Batch{Operator: req.Operator, ReceivedAt: req.At, MaxSkew: u.horizon.allowance()}
	ch, err := u.store.ApplyHold(ctx, req.TransactionID, b, func(cur *ledger.Hold) (ledger.HoldChange, error) {
		return ledger.DecideHold(cur, req)
	})
	if w := u.memo.startedWatch(); w != nil && (err != nil || ch.Event != nil) && ch.Hold.ProviderID != "" {
		w.Wrote([]string{ch.Hold.ProviderID})
	}
	if err == nil && ch.Unchanged {
		return ch, nil
	}
	detail := string(req.Action)
	switch {
	case err != nil:
	case req.Action == ledger.HoldCreate:
		detail = fmt.Sprintf("hold %d of %d cents at score %d", ch.Hold.HoldCents, ch.Hold.AmountCents, ch.Hold.Score)
	default:
		detail = fmt.Sprintf("%s: %s", req.Action, ch.Hold.State)
	}
	agent := ch.Hold.ProviderID
	if agent == "" {
		agent = req.ProviderID
	}
	u.actions.record(ctx, auth.ActEscrow, agent, req.TransactionID, detail, err)
	return ch, err
}

// Hold returns the hold of a transaction. Errors: ErrInvalid (a malformed
// id), ErrNotFound, ErrUnavailable.
func (u *Holds) Hold(ctx context.Context, id string) (ledger.Hold, error) {
	if err := ledger.CheckID("transaction_id", id); err != nil {
		return ledger.Hold{}, err
	}
	return u.store.Hold(ctx, id)
}

// Holds lists holds, oldest first, by state and provider. Errors:
// ErrInvalid (an unknown state, a malformed provider id), ErrUnavailable.
func (u *Holds) Holds(ctx context.Context, q HoldQuery) ([]ledger.Hold, error) {
	if q.State != "" && !q.State.Valid() {
		return nil, fmt.Errorf("%w: state %q is not one of held, disputed, released, settled, refunded, cancelled", errkind.ErrInvalid, q.State)
	}
	if q.ProviderID != "" {
		if err := ledger.CheckID("provider_id", q.ProviderID); err != nil {
			return nil, err
		}
	}
	return u.store.Holds(ctx, q)
}

// HoldStats counts the holds by state and adds up what they hold, for
// /metrics and the console. Errors: ErrUnavailable.
func (u *Holds) HoldStats(ctx context.Context) (HoldStats, error) { return u.store.HoldStats(ctx) }

// Reconciliation is escrow reconcile's account: the totals of every hold
// and, when something does not add up, the first hold that breaks it.
type Reconciliation struct {
	Totals ledger.HoldTotals
	// Sealed counts holds whose chain names an erased agent by its
	// pseudonym: their links cannot be recomputed (docs/ERRATA.md E58),
	// their money is still checked.
	Sealed int
	// Broken is the transaction id of the first hold (oldest first) whose
	// chain or money does not add up, "" when none; Reason says why.
	Broken string
	Reason string
}

// Reconcile checks every hold, oldest first: its chain (ledger.VerifyHold)
// and its money, and that the totals balance: held = open + payouts + fees
// + refunds, to the cent. Errors: ErrUnavailable.
func (u *Holds) Reconcile(ctx context.Context) (Reconciliation, error) {
	holds, err := u.store.Holds(ctx, HoldQuery{})
	if err != nil {
		return Reconciliation{}, err
	}
	es, err := u.store.Erasures(ctx)
	if err != nil {
		return Reconciliation{}, err
	}
	pseudonyms := make(map[string]bool, len(es))
	for _, e := range es {
		pseudonyms[e.Pseudonym] = true
	}
	var r Reconciliation
	for i := range holds {
		h := &holds[i]
		r.Totals.Add(h)
		steps, err := u.store.HoldSteps(ctx, h.TransactionID)
		if err != nil {
			return Reconciliation{}, err
		}
		err = ledger.VerifyHold(h, steps)
		if err != nil && (pseudonyms[h.ProviderID] || pseudonyms[h.BuyerID]) {
			if err = ledger.CheckHoldMoney(h); err == nil {
				r.Sealed++
			}
		}
		if err != nil && r.Broken == "" {
			r.Broken, r.Reason = h.TransactionID, err.Error()
		}
	}
	if r.Broken == "" && !r.Totals.Balanced() {
		r.Broken, r.Reason = "(totals)", fmt.Sprintf("held %d ≠ open %d + payouts %d + fees %d + refunds %d",
			r.Totals.Held, r.Totals.Open, r.Totals.Payouts, r.Totals.Fees, r.Totals.Refunds)
	}
	return r, nil
}
