package api

import (
	"encoding/json"
	"time"
)

// Agents' rights (spec §8.4, §11.1) and gaming signals (§8.3, §15.2). The
// routes of one agent's data take the agent's own token or an operator's.

// Disclosure is one version of what agents consent to, and the liability
// disclaimer shown beside every score (GET /swarmscore/disclosure).
type Disclosure struct {
	Version    string `json:"version"`
	Disclosure string `json:"disclosure"`
	Disclaimer string `json:"disclaimer"`
}

// Consent is an agent's consent and visibility (swarmscore agent consent
// --json); DisclosureVersion, ConsentedAt and ConsentedBy are nil until
// it consents.
type Consent struct {
	AgentID           string     `json:"agent_id"`
	Visibility        string     `json:"visibility"` // public or unlisted
	Consented         bool       `json:"consented"`
	DisclosureVersion *string    `json:"disclosure_version"`
	ConsentedAt       *time.Time `json:"consented_at"`
	ConsentedBy       *string    `json:"consented_by"`
}

// ConsentStatus is an agent's consent and what follows from it on this
// server (GET /swarmscore/{agent_id}/consent and the PUTs of consent and
// visibility): whether it requires consent before publishing, and whether
// the public routes show the agent.
type ConsentStatus struct {
	Consent
	RequireConsent bool `json:"require_consent"`
	Published      bool `json:"published"`
}

// ConsentRequest is the body of PUT /swarmscore/{agent_id}/consent: the
// disclosure version consented to (the current one when absent).
type ConsentRequest struct {
	DisclosureVersion string `json:"disclosure_version,omitempty"`
}

// VisibilityRequest is the body of PUT /swarmscore/{agent_id}/visibility.
type VisibilityRequest struct {
	Visibility string `json:"visibility"` // public or unlisted
}

// Records are an agent's access to its data (GET
// /swarmscore/{agent_id}/records, swarmscore agent records --json): the
// events counting in its score as of AsOf and the passports issued to it
// by then. Buyer ids are pseudonyms when BuyerIDsMasked (the agent's own
// token).
type Records struct {
	AgentID        string           `json:"agent_id"`
	AsOf           time.Time        `json:"as_of"`
	BuyerIDsMasked bool             `json:"buyer_ids_masked"`
	Events         []Record         `json:"events"`
	Passports      []IssuedPassport `json:"passports"`
}

// Record is one event counting in a score, in its current state (after
// corrections). ReportedStatus and ReportedAgentID are present when a
// correction changed the status or moved the event (the latter never for
// the agent's own token); an AP2 transaction has EscrowAmountCents and
// SettledAt, a Conduit session CompletedAt.
type Record struct {
	Type              string     `json:"type"`
	ID                string     `json:"id"`
	AgentID           string     `json:"agent_id"`
	BuyerID           *string    `json:"buyer_id"`
	Status            string     `json:"status"`
	ReportedStatus    string     `json:"reported_status,omitempty"`
	ReportedAgentID   string     `json:"reported_agent_id,omitempty"`
	EscrowAmountCents *int64     `json:"escrow_amount_cents,omitempty"`
	StartedAt         time.Time  `json:"started_at"`
	CompletedAt       *time.Time `json:"completed_at,omitempty"`
	SettledAt         *time.Time `json:"settled_at,omitempty"`
	Operator          string     `json:"operator"`
	Seq               int64      `json:"seq"`
	Corrected         bool       `json:"corrected"`
}

// IssuedPassport is a passport issued to an agent: its id, times (whole
// seconds), the key that signed it (nil when not recorded) and the
// document.
type IssuedPassport struct {
	ID         string          `json:"agent_passport_id"`
	ComputedAt time.Time       `json:"computed_at"`
	ExpiresAt  time.Time       `json:"expires_at"`
	KeyID      *string         `json:"key_id"`
	Passport   json.RawMessage `json:"passport"`
}

// Signal is one gaming signal: its figure beside its threshold.
type Signal struct {
	Name      string  `json:"name"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	Flagged   bool    `json:"flagged"`
	// Note says why the signal was not judged ("no task offers reported",
	// or too few events for a share); absent when it was.
	Note string `json:"note,omitempty"`
}

// AgentSignals are an agent's gaming signals over the window ending at
// AsOf (GET /swarmscore/{agent_id}/signals, swarmscore agent signals
// --json).
type AgentSignals struct {
	AgentID string    `json:"agent_id"`
	AsOf    time.Time `json:"as_of"`
	Signals []Signal  `json:"signals"`
}

// FlaggedAgents are the agents with a flagged signal as of AsOf (GET
// /swarmscore/signals?flagged=true, swarmscore agent signals --flagged
// --json), by agent id.
type FlaggedAgents struct {
	AsOf   time.Time      `json:"as_of"`
	Agents []FlaggedAgent `json:"agents"`
}

// FlaggedAgent is one agent of FlaggedAgents, with all of its signals.
type FlaggedAgent struct {
	AgentID string   `json:"agent_id"`
	Signals []Signal `json:"signals"`
}
