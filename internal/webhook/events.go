package webhook

import (
	"encoding/base32"
	"encoding/json"
	"time"
)

var base32NoPad = base32.StdEncoding.WithPadding(base32.NoPadding)

// Event is one change to announce, before it is fanned out to the
// endpoints subscribed to its type: the stores write one Message per
// endpoint in the transaction of the change.
type Event struct {
	Type EventType
	// AgentID is the agent the event is about ("" for none): an erasure
	// renames it in the stored messages.
	AgentID string
	// At is when the change was committed; the payload's "timestamp".
	At time.Time
	// Data is the payload's "data" object.
	Data any
}

// payload is the body of every delivery (the Standard Webhooks
// convention: type, timestamp, data).
type payload struct {
	Type      EventType `json:"type"`
	Timestamp string    `json:"timestamp"`
	Data      any       `json:"data"`
}

// Payload is the JSON body delivered for e, the same bytes on every
// attempt. Errors: those of encoding Data.
func (e Event) Payload() ([]byte, error) {
	return json.Marshal(payload{Type: e.Type, Timestamp: e.At.UTC().Format(time.RFC3339Nano), Data: e.Data})
}

// ScoreData is the data of score.changed and tier.changed: the agent's
// score and tier as just computed, the ones announced before (score 0 and
// NONE for an agent never announced: what an agent without history
// scores), and the instant the score counts to.
type ScoreData struct {
	AgentID          string `json:"agent_id"`
	Score            int    `json:"score"`
	Tier             string `json:"tier"`
	PreviousScore    int    `json:"previous_score"`
	PreviousTier     string `json:"previous_tier"`
	ComputedAt       string `json:"computed_at"`
	EscrowModifierBP int    `json:"escrow_modifier_bp"`
}

// ScoreEvents are the events of an agent's newly computed score against
// the last announced: score.changed when the score differs, tier.changed
// when the tier does (both share the data); none when neither does.
func ScoreEvents(d ScoreData, at time.Time) []Event {
	var out []Event
	if d.Score != d.PreviousScore {
		out = append(out, Event{Type: ScoreChanged, AgentID: d.AgentID, At: at, Data: d})
	}
	if d.Tier != d.PreviousTier {
		out = append(out, Event{Type: TierChanged, AgentID: d.AgentID, At: at, Data: d})
	}
	return out
}

// PassportData is the data of passport.issued.
type PassportData struct {
	AgentID    string `json:"agent_id"`
	PassportID string `json:"passport_id"`
	KeyID      string `json:"kid,omitempty"`
	Score      int    `json:"score"`
	Tier       string `json:"tier"`
	ComputedAt string `json:"computed_at"`
	ExpiresAt  string `json:"expires_at"`
}

// PassportEvent is passport.issued for d.
func PassportEvent(d PassportData, at time.Time) Event {
	return Event{Type: PassportIssued, AgentID: d.AgentID, At: at, Data: d}
}

// AppealData is the data of appeal.updated: the appeal's state now and
// before ("" when it was just filed).
type AppealData struct {
	AppealID      string `json:"appeal_id"`
	AgentID       string `json:"agent_id"`
	PassportID    string `json:"passport_id"`
	State         string `json:"state"`
	PreviousState string `json:"previous_state,omitempty"`
}

// AppealEvent is appeal.updated for d.
func AppealEvent(d AppealData, at time.Time) Event {
	return Event{Type: AppealUpdated, AgentID: d.AgentID, At: at, Data: d}
}

// HoldData is the data of hold.updated: an escrow hold (issue 24, "Escrow
// holds") as it stands after the change, and its state before ("" when
// it was just created). The escrow code fills it from its hold record.
type HoldData struct {
	TransactionID  string `json:"transaction_id"`
	ProviderID     string `json:"provider_id"`
	BuyerID        string `json:"buyer_id"`
	State          string `json:"state"`
	PreviousState  string `json:"previous_state,omitempty"`
	AmountCents    int64  `json:"amount_cents"`
	Currency       string `json:"currency"`
	HoldCents      int64  `json:"hold_cents"`
	ReleasedCents  int64  `json:"released_cents"`
	Score          int    `json:"score"`
	Tier           string `json:"tier"`
	EscrowModifier string `json:"escrow_modifier"`
	// CorrectionID names the correction that made this change (ERRATA
	// E65), absent for every other change.
	CorrectionID string `json:"correction_id,omitempty"`
}

// HoldEvent is hold.updated for d, about the hold's provider.
func HoldEvent(d HoldData, at time.Time) Event {
	return Event{Type: HoldUpdated, AgentID: d.ProviderID, At: at, Data: d}
}
