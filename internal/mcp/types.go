package mcp

import (
	"encoding/json"
	"time"
)

// The tools' inputs and structured outputs. Their JSON schemas are
// inferred from these types; the outputs are filled from the HTTP API's
// own JSON shapes (package api, the passport), so that a tool answers
// member for member what the corresponding route answers.

// AgentInput names an agent.
type AgentInput struct {
	AgentID string `json:"agent_id" jsonschema:"the agent's id: 1-128 characters of [A-Za-z0-9._:-]"`
}

// EscrowInput is quote_escrow's input.
type EscrowInput struct {
	AgentID     string `json:"agent_id" jsonschema:"the agent (the provider) to be paid"`
	AmountCents int64  `json:"amount_cents" jsonschema:"the payment in integer cents, from 0"`
}

// VerifyInput is verify_passport's input.
type VerifyInput struct {
	Certificate RawObject `json:"certificate" jsonschema:"the Execution Passport as received (a JSON object)"`
	AgentID     string    `json:"agent_id,omitempty" jsonschema:"the agent the passport must belong to (optional)"`
}

// RawObject is a JSON object kept as received: a presented passport is
// judged on its exact bytes (a repeated member name, a number's form).
type RawObject = json.RawMessage

// Dimension is one scored dimension (score --json's conduit and ap2).
type Dimension struct {
	Total           int64   `json:"total"`
	Success         int64   `json:"success"`
	Rate            float64 `json:"rate"`
	VolumeFactor    float64 `json:"volume_factor"`
	Contribution    int     `json:"contribution"`
	MaxContribution int     `json:"max_contribution"`
}

// Gap is one unmet requirement of the next tier up.
type Gap struct {
	Tier        string `json:"tier"`
	Requirement string `json:"requirement"`
	Required    int64  `json:"required"`
	Actual      int64  `json:"actual"`
}

// Score is get_score's output: GET /swarmscore/{agent_id}.
type Score struct {
	AgentID           string    `json:"agent_id"`
	ComputedAt        time.Time `json:"computed_at"`
	ExpiresAt         time.Time `json:"expires_at"`
	FormulaVersion    string    `json:"formula_version"`
	Score             int       `json:"score" jsonschema:"0 to 1000"`
	Tier              string    `json:"tier" jsonschema:"NONE, STANDARD or ELITE"`
	EscrowModifier    float64   `json:"escrow_modifier" jsonschema:"the share of each payment held in escrow, 0.25 to 1"`
	Conduit           Dimension `json:"conduit"`
	AP2               Dimension `json:"ap2"`
	QualificationGaps []Gap     `json:"qualification_gaps" jsonschema:"what the next tier up requires that the agent lacks"`
}

// PassportDimension is a passport's dimension (spec §6.1).
type PassportDimension struct {
	Label                 string  `json:"label"`
	Sessions90d           int64   `json:"sessions_90d"`
	SuccessfulSessions90d int64   `json:"successful_sessions_90d"`
	SuccessRate           float64 `json:"success_rate"`
	VolumeFactor          float64 `json:"volume_factor"`
	MaxContribution       int     `json:"max_contribution"`
	ActualContribution    int     `json:"actual_contribution"`
}

// Passport is get_certificate's output: the signed Execution Passport
// (spec §6.1) the certificate route serves; the tool's text content holds
// its exact bytes.
type Passport struct {
	SwarmScoreVersion string `json:"swarmscore_version"`
	AgentPassportID   string `json:"agent_passport_id"`
	AgentID           string `json:"agent_id,omitempty"`
	Issuer            struct {
		Platform   string    `json:"platform"`
		ComputedAt time.Time `json:"computed_at"`
		Alg        string    `json:"alg,omitempty"`
		KID        string    `json:"kid,omitempty"`
		Signature  string    `json:"signature"`
	} `json:"issuer"`
	Score struct {
		Value               int    `json:"value"`
		Tier                string `json:"tier"`
		ConduitContribution int    `json:"conduit_contribution"`
		AP2Contribution     int    `json:"ap2_contribution"`
	} `json:"score"`
	Dimensions struct {
		TechnicalExecution    PassportDimension `json:"technical_execution"`
		CommercialReliability PassportDimension `json:"commercial_reliability"`
	} `json:"dimensions"`
	EscrowModifier    float64   `json:"escrow_modifier"`
	QualificationGaps []Gap     `json:"qualification_gaps"`
	FormulaVersion    string    `json:"formula_version"`
	ExpiresAt         time.Time `json:"expires_at"`
}

// Problem is one finding of a verification.
type Problem struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Verification is verify_passport's output: POST /swarmscore/verify.
type Verification struct {
	Valid             bool              `json:"valid"`
	SignatureValid    bool              `json:"signature_valid"`
	ScoreValid        bool              `json:"score_valid"`
	ExpiresAt         *time.Time        `json:"expires_at"`
	DetectedTampering bool              `json:"detected_tampering"`
	Errors            []Problem         `json:"errors"`
	Warnings          []Problem         `json:"warnings"`
	Checks            map[string]string `json:"checks" jsonschema:"each level of verification and what it found"`
	Current           *struct {
		Score      int       `json:"score"`
		Tier       string    `json:"tier"`
		ComputedAt time.Time `json:"computed_at"`
	} `json:"current,omitempty"`
	ChangedSinceIssue []struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	} `json:"changed_since_issue,omitempty"`
}

// Escrow is quote_escrow's output: POST /swarmscore/{agent_id}/escrow.
type Escrow struct {
	Score          int     `json:"score"`
	EscrowModifier float64 `json:"escrow_modifier"`
	HoldCents      int64   `json:"hold_cents"`
	ReleasedCents  int64   `json:"released_cents"`
}

// Explanation is explain_score's output.
type Explanation struct {
	AgentID  string `json:"agent_id"`
	Score    int    `json:"score"`
	Tier     string `json:"tier"`
	NextTier string `json:"next_tier,omitempty" jsonschema:"the tier above, absent for ELITE"`
	Gaps     []Gap  `json:"gaps" jsonschema:"what the next tier requires that the agent lacks"`
	// Explanation says, in words, where the score comes from, what the
	// next tier needs and what would lose the current one.
	Explanation string `json:"explanation"`
}
