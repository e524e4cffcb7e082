package api

import "time"

// The limits of one call to POST /swarmscore/events: a larger batch or
// body is refused whole with a 413 problem (ProblemBodyTooLarge), so split
// it; a longer NDJSON line is rejected on its own.
const (
	// MaxEvents is the most events one batch may hold.
	MaxEvents = 10000
	// MaxBodyBytes is the largest request body.
	MaxBodyBytes = 8 << 20
	// MaxLineBytes is the longest NDJSON line read as an event.
	MaxLineBytes = 64 << 10
)

// Event is one reported event in the format POST /swarmscore/events and
// `swarmscore ingest` read (a JSON array of them, or NDJSON): a Conduit
// session (type conduit_session: agent_id, completed_at once VERIFIED or
// FAILED), an AP2 transaction (ap2_transaction: provider_id, buyer_id,
// escrow_amount_cents, settled_at once SETTLED, DISPUTED or REFUNDED) or a
// task offer (task_offer: agent_id, buyer_id, decided_at once ACCEPTED or
// DECLINED). Times are RFC 3339 with at most microseconds: the ledger
// refuses finer ones rather than round them.
type Event struct {
	Type              string     `json:"type"`
	ID                string     `json:"id"`
	AgentID           string     `json:"agent_id,omitempty"`
	ProviderID        string     `json:"provider_id,omitempty"`
	BuyerID           string     `json:"buyer_id,omitempty"`
	Status            string     `json:"status"`
	EscrowAmountCents *int64     `json:"escrow_amount_cents,omitempty"`
	StartedAt         time.Time  `json:"started_at"`
	CompletedAt       *time.Time `json:"completed_at,omitempty"`
	SettledAt         *time.Time `json:"settled_at,omitempty"`
	DecidedAt         *time.Time `json:"decided_at,omitempty"`
	// ProofHash is a Conduit session's proof_hash: the SHA-256 of its
	// proof bundle, 64 lowercase hex (§12.1, §8.2).
	ProofHash string `json:"proof_hash,omitempty"`
}

// IngestResult says what the server did with a batch (POST
// /swarmscore/events, swarmscore ingest --json): every event is counted
// once.
type IngestResult struct {
	Accepted   int `json:"accepted"`   // new events and status transitions recorded
	Duplicates int `json:"duplicates"` // already recorded unchanged (no-ops)
	// Superseded counts reports of an earlier status than the one
	// recorded, agreeing with it otherwise (no-ops).
	Superseded int         `json:"superseded"`
	Rejected   []Rejection `json:"rejected"`
}

// Rejection is one refused event: its 0-based index in the batch, its
// NDJSON line (absent for a JSON array), its id when it parsed, and why:
// a message, and a stable code when the refusal has one (Problem.Code).
type Rejection struct {
	Index  int    `json:"index"`
	Line   int    `json:"line,omitempty"`
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason"`
	Code   string `json:"code,omitempty"`
}
