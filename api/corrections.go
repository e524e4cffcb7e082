package api

import "time"

// CorrectionRequest asks for a correction of one recorded event (spec
// §11.3): the body of POST /swarmscore/corrections, an element of an
// uphold's corrections, and of `swarmscore appeal uphold --corrections`.
// Action "status" gives the new final Status (a chargeback: SETTLED →
// DISPUTED or REFUNDED), "reattribute" the AgentID it moves to, "void"
// neither. Reason is required (an uphold's default to its decision's);
// AppealID names the appeal it answers.
type CorrectionRequest struct {
	EventType string `json:"event_type"`
	EventID   string `json:"event_id"`
	Action    string `json:"action"`
	Status    string `json:"status,omitempty"`
	AgentID   string `json:"agent_id,omitempty"`
	Reason    string `json:"reason,omitempty"`
	AppealID  string `json:"appeal_id,omitempty"`
}

// Correction is a stored correction (POST /swarmscore/corrections,
// swarmscore correct --json): the request as recorded, who made it and
// when (microseconds), the agent and status the event had and has, and
// when the affected passports were re-issued (nil if they were not).
type Correction struct {
	ID         string     `json:"id"`
	EventType  string     `json:"event_type"`
	EventID    string     `json:"event_id"`
	Action     string     `json:"action"`
	Status     string     `json:"status,omitempty"`
	AgentID    string     `json:"agent_id,omitempty"`
	Reason     string     `json:"reason"`
	AppealID   string     `json:"appeal_id,omitempty"`
	By         string     `json:"by"`
	At         time.Time  `json:"at"`
	FromAgent  string     `json:"from_agent"`
	ToAgent    string     `json:"to_agent"`
	FromStatus string     `json:"from_status"`
	ToStatus   string     `json:"to_status"`
	ReissuedAt *time.Time `json:"reissued_at"`
}

// EventKey names an event in an appeal.
type EventKey struct {
	EventType string `json:"event_type"`
	EventID   string `json:"event_id"`
}

// AppealFiling is the body of POST /swarmscore/appeals: an appeal as filed
// on an agent's behalf, naming the disputed passport by its
// agent_passport_id, the grounds (incorrect_count, incorrect_status or
// identity_error), the agent's statement and the disputed events.
type AppealFiling struct {
	PassportID string     `json:"agent_passport_id"`
	Grounds    string     `json:"grounds"`
	Statement  string     `json:"statement"`
	Events     []EventKey `json:"events"`
}

// AppealAction is the body of POST /swarmscore/appeals/{id}/{action}: the
// reason (required to uphold or reject; a note for ack and escalate, which
// may also be sent with no body) and, for an uphold, the corrections it
// applies.
type AppealAction struct {
	Reason      string              `json:"reason,omitempty"`
	Corrections []CorrectionRequest `json:"corrections,omitempty"`
}

// Appeal is an appeal with its next deadline and history (the appeals
// routes, swarmscore appeal … --json). Times are microseconds; those of
// steps not taken yet are nil, and Decision is absent until one is made.
type Appeal struct {
	ID                 string     `json:"id"`
	AgentID            string     `json:"agent_id"`
	PassportID         string     `json:"agent_passport_id"`
	PassportComputedAt time.Time  `json:"passport_computed_at"`
	Grounds            string     `json:"grounds"`
	Statement          string     `json:"statement"`
	Events             []EventKey `json:"events"`
	State              string     `json:"state"`
	FiledBy            string     `json:"filed_by"`
	FiledAt            time.Time  `json:"filed_at"`
	AcknowledgedAt     *time.Time `json:"acknowledged_at"`
	DecidedAt          *time.Time `json:"decided_at"`
	EscalatedAt        *time.Time `json:"escalated_at"`
	Decision           string     `json:"decision,omitempty"`
	// Corrections are the ids of the corrections an uphold applied.
	Corrections []string   `json:"corrections"`
	ReissuedAt  *time.Time `json:"reissued_at"`
	// NextDeadline is the operator's next duty, nil when it owes none.
	NextDeadline *Deadline `json:"next_deadline"`
	Overdue      bool      `json:"overdue"`
	History      []History `json:"history"`
}

// Deadline is an appeal's next duty (acknowledge, decide, re-issue) and
// when it is due.
type Deadline struct {
	Duty string    `json:"duty"`
	Due  time.Time `json:"due"`
}

// History is one action on an appeal: who took it, when, and the note or
// reason given.
type History struct {
	Action string    `json:"action"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Note   string    `json:"note,omitempty"`
}

// Appeals is a list of appeals, overdue first (GET /swarmscore/appeals,
// swarmscore appeal list --json).
type Appeals struct {
	Appeals []Appeal `json:"appeals"`
}
