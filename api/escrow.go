package api

import (
	"time"

	"github.com/swarmscore/swarmscore/score"
)

// HoldRequest is the body of POST /swarmscore/escrow/holds: a payment of
// AmountCents (1 up to the ledger's largest escrow amount) from a buyer to
// a provider, for the AP2 transaction TransactionID, in Currency (only
// "USD").
type HoldRequest struct {
	TransactionID string `json:"transaction_id"`
	ProviderID    string `json:"provider_id"`
	BuyerID       string `json:"buyer_id"`
	AmountCents   int64  `json:"amount_cents"`
	Currency      string `json:"currency"`
}

// Hold is an escrow hold (spec §5) as the holds routes and swarmscore
// escrow --json show it: its terms, what priced it (the provider's score,
// tier, escrow modifier and the passport that stated them, null for a
// provider the ledger did not know), the hold (amount × modifier rounded up
// to the cent) and what was released at once, its state, and what became
// of the hold: payout, fee and refund add up to hold_cents once it is no
// longer open (held, disputed). Seq and Hash are the head of the hold's
// hash chain (lowercase hex SHA-256).
type Hold struct {
	TransactionID  string         `json:"transaction_id"`
	ProviderID     string         `json:"provider_id"`
	BuyerID        string         `json:"buyer_id"`
	AmountCents    int64          `json:"amount_cents"`
	Currency       string         `json:"currency"`
	Score          int            `json:"score"`
	Tier           score.Tier     `json:"tier"`
	EscrowModifier score.Modifier `json:"escrow_modifier"`
	HoldCents      int64          `json:"hold_cents"`
	ReleasedCents  int64          `json:"released_cents"`
	PassportID     *string        `json:"passport_id"`
	KID            *string        `json:"kid"`
	State          string         `json:"state"`
	PayoutCents    int64          `json:"payout_cents"`
	FeeCents       int64          `json:"fee_cents"`
	RefundCents    int64          `json:"refund_cents"`
	Reason         string         `json:"reason"`
	// CorrectionID is the last correction of the transaction that reached
	// the hold (absent for none; ERRATA E65–E66).
	CorrectionID string    `json:"correction_id,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	Seq          int64     `json:"seq"`
	Hash         string    `json:"hash"`
}

// HoldList is GET /swarmscore/escrow/holds: the holds, oldest first.
type HoldList struct {
	Holds []Hold `json:"holds"`
}

// HoldChange is the body of POST /swarmscore/escrow/holds/{id}/release,
// /dispute, /resolve and /cancel: FeeCents overrides the deployment's
// platform fee (release, resolve to settled), Outcome is settled or
// refunded (resolve), Reason is free text. Every member is optional but
// Outcome on resolve.
type HoldChange struct {
	FeeCents *int64 `json:"fee_cents,omitempty"`
	Outcome  string `json:"outcome,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Reconciliation is swarmscore escrow reconcile --json: the money of every
// hold, whether it balances (held = open + payouts + fees + refunds), and
// the first transaction that breaks it (null when none).
type Reconciliation struct {
	Holds       int     `json:"holds"`
	HeldCents   int64   `json:"held_cents"`
	OpenCents   int64   `json:"open_cents"`
	PayoutCents int64   `json:"payout_cents"`
	FeeCents    int64   `json:"fee_cents"`
	RefundCents int64   `json:"refund_cents"`
	Sealed      int     `json:"sealed"`
	Balanced    bool    `json:"balanced"`
	Broken      *string `json:"broken"`
	Reason      string  `json:"reason,omitempty"`
}

// ProofCheck is the answer of POST
// /swarmscore/events/conduit_session/{id}/proof and swarmscore proof check
// --json: the bundle's SHA-256 and size, the session's recorded proof_hash
// it was checked against (expected), the outcome (proof_matched or
// proof_mismatch), and the check's place in the session's proof chain
// (seq, hash).
type ProofCheck struct {
	EventID  string    `json:"event_id"`
	Seq      int64     `json:"seq"`
	Outcome  string    `json:"outcome"`
	SHA256   string    `json:"sha256"`
	Expected string    `json:"expected"`
	Size     int64     `json:"size"`
	Actor    string    `json:"actor"`
	At       time.Time `json:"at"`
	Hash     string    `json:"hash"`
}
