package wire

import (
	"encoding/hex"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// optString is s, or nil (JSON null) when empty.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// HoldOf is h's shape.
func HoldOf(h *ledger.Hold) api.Hold {
	return api.Hold{TransactionID: h.TransactionID, ProviderID: h.ProviderID, BuyerID: h.BuyerID, AmountCents: h.AmountCents,
		Currency: h.Currency, Score: h.Score, Tier: h.Tier, EscrowModifier: h.Modifier, HoldCents: h.HoldCents,
		ReleasedCents: h.ReleasedCents, PassportID: optString(h.PassportID), KID: optString(h.KID), State: string(h.State),
		PayoutCents: h.PayoutCents, FeeCents: h.FeeCents, RefundCents: h.RefundCents, Reason: h.Reason, CorrectionID: h.CorrectionID,
		CreatedAt: ledgerTime(h.CreatedAt), UpdatedAt: ledgerTime(h.UpdatedAt), Seq: h.Seq, Hash: hex.EncodeToString(h.Hash[:])}
}

// HoldsOf is a listing's shape.
func HoldsOf(hs []ledger.Hold) api.HoldList {
	out := api.HoldList{Holds: make([]api.Hold, len(hs))}
	for i := range hs {
		out.Holds[i] = HoldOf(&hs[i])
	}
	return out
}

// ReconciliationOf is r's shape.
func ReconciliationOf(r *service.Reconciliation) api.Reconciliation {
	t := &r.Totals
	return api.Reconciliation{Holds: t.Holds, HeldCents: t.Held, OpenCents: t.Open, PayoutCents: t.Payouts, FeeCents: t.Fees,
		RefundCents: t.Refunds, Sealed: r.Sealed, Balanced: r.Broken == "", Broken: optString(r.Broken), Reason: r.Reason}
}

// ProofCheckOf is c's shape.
func ProofCheckOf(c *ledger.ProofCheck) api.ProofCheck {
	return api.ProofCheck{EventID: c.EventID, Seq: c.Seq, Outcome: string(c.Outcome), SHA256: c.SHA256, Expected: c.Expected,
		Size: c.Size, Actor: c.Actor, At: ledgerTime(c.At), Hash: hex.EncodeToString(c.Hash[:])}
}
