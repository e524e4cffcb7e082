package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// CorrectionRequest asks for a correction of one recorded event (spec
// §11.3): Action "status" with the new final Status (a chargeback:
// SETTLED → DISPUTED or REFUNDED), "reattribute" with the AgentID it moves
// to, or "void". Reason is required; AppealID names the appeal it answers.
type CorrectionRequest struct {
	EventType string `json:"event_type"`
	EventID   string `json:"event_id"`
	Action    string `json:"action"`
	Status    string `json:"status,omitempty"`
	AgentID   string `json:"agent_id,omitempty"`
	Reason    string `json:"reason,omitempty"`
	AppealID  string `json:"appeal_id,omitempty"`
}

// Correction is a stored correction.
type Correction struct {
	ID         string `json:"id"`
	EventType  string `json:"event_type"`
	EventID    string `json:"event_id"`
	Action     string `json:"action"`
	Status     string `json:"status"`
	AgentID    string `json:"agent_id"`
	Reason     string `json:"reason"`
	AppealID   string `json:"appeal_id"`
	By         string `json:"by"`
	At         string `json:"at"`
	FromAgent  string `json:"from_agent"`
	ToAgent    string `json:"to_agent"`
	FromStatus string `json:"from_status"`
	ToStatus   string `json:"to_status"`
	// ReissuedAt is when the affected passports were re-issued; nil if
	// they were not.
	ReissuedAt *string `json:"reissued_at"`
	// Created is false when the same correction had been recorded before
	// (the server answered 200 with the first one instead of 201).
	Created bool `json:"-"`
}

// Correct records a correction (POST /swarmscore/corrections) with the
// operator token, which the server records as its author. An unknown event
// is a Problem of type ProblemNotFound.
func (c *Client) Correct(ctx context.Context, req CorrectionRequest) (*Correction, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	resp, b, err := c.do(ctx, http.MethodPost, "/swarmscore/corrections", nil, bytes.NewReader(body), "application/json", true, nil)
	if err != nil {
		return nil, err
	}
	out := &Correction{Created: resp.StatusCode == http.StatusCreated}
	return out, decode(b, out)
}

// EventKey names an event.
type EventKey struct {
	EventType string `json:"event_type"`
	EventID   string `json:"event_id"`
}

// AppealFiling is an appeal as filed on an agent's behalf: the disputed
// passport's agent_passport_id, the grounds (incorrect_count,
// incorrect_status or identity_error), a statement and the disputed events.
type AppealFiling struct {
	PassportID string     `json:"agent_passport_id"`
	Grounds    string     `json:"grounds"`
	Statement  string     `json:"statement"`
	Events     []EventKey `json:"events"`
}

// Appeal is an appeal with its deadline and history.
type Appeal struct {
	ID                 string     `json:"id"`
	AgentID            string     `json:"agent_id"`
	PassportID         string     `json:"agent_passport_id"`
	PassportComputedAt string     `json:"passport_computed_at"`
	Grounds            string     `json:"grounds"`
	Statement          string     `json:"statement"`
	Events             []EventKey `json:"events"`
	State              string     `json:"state"`
	FiledBy            string     `json:"filed_by"`
	FiledAt            string     `json:"filed_at"`
	AcknowledgedAt     *string    `json:"acknowledged_at"`
	DecidedAt          *string    `json:"decided_at"`
	EscalatedAt        *string    `json:"escalated_at"`
	Decision           string     `json:"decision"`
	Corrections        []string   `json:"corrections"`
	ReissuedAt         *string    `json:"reissued_at"`
	NextDeadline       *struct {
		Duty string `json:"duty"`
		Due  string `json:"due"`
	} `json:"next_deadline"`
	Overdue bool `json:"overdue"`
	History []struct {
		Action string `json:"action"`
		By     string `json:"by"`
		At     string `json:"at"`
		Note   string `json:"note"`
	} `json:"history"`
}

// FileAppeal files an appeal (POST /swarmscore/appeals) with the client's
// token: an operator's, for any agent, or an agent's own, for its own
// passports only (another agent's passport is not found).
func (c *Client) FileAppeal(ctx context.Context, f AppealFiling) (*Appeal, error) {
	body, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	return c.appeal(ctx, http.MethodPost, "/swarmscore/appeals", body)
}

// Appeal fetches one appeal (GET /swarmscore/appeals/{id}); an agent's
// token finds only its own agent's.
func (c *Client) Appeal(ctx context.Context, id string) (*Appeal, error) {
	return c.appeal(ctx, http.MethodGet, "/swarmscore/appeals/"+id, nil)
}

// Appeals lists appeals (GET /swarmscore/appeals), overdue first: in state
// (every state when ""), only overdue ones when overdue is set. An agent's
// token lists only its own agent's.
func (c *Client) Appeals(ctx context.Context, state string, overdue bool) ([]Appeal, error) {
	v := url.Values{}
	if state != "" {
		v.Set("state", state)
	}
	if overdue {
		v.Set("overdue", strconv.FormatBool(overdue))
	}
	_, b, err := c.do(ctx, http.MethodGet, "/swarmscore/appeals", v, nil, "", true, nil)
	if err != nil {
		return nil, err
	}
	var out struct {
		Appeals []Appeal `json:"appeals"`
	}
	return out.Appeals, decode(b, &out)
}

// ActOnAppeal performs action ("ack", "uphold", "reject" or "escalate") on
// appeal id (POST /swarmscore/appeals/{id}/{action}) with reason (required
// to uphold or reject) and, for an uphold, the corrections to apply. It
// returns the appeal after the action. An agent's token may only escalate
// its own appeal; the other actions are the operator's (ProblemForbidden).
func (c *Client) ActOnAppeal(ctx context.Context, id, action, reason string, corrections []CorrectionRequest) (*Appeal, error) {
	req := struct {
		Reason      string              `json:"reason,omitempty"`
		Corrections []CorrectionRequest `json:"corrections,omitempty"`
	}{reason, corrections}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return c.appeal(ctx, http.MethodPost, "/swarmscore/appeals/"+id+"/"+action, body)
}

func (c *Client) appeal(ctx context.Context, method, path string, body []byte) (*Appeal, error) {
	var ct string
	var rd io.Reader // nil, not a nil *bytes.Reader, for no body
	if body != nil {
		ct, rd = "application/json", bytes.NewReader(body)
	}
	_, b, err := c.do(ctx, method, path, nil, rd, ct, true, nil)
	if err != nil {
		return nil, err
	}
	a := &Appeal{}
	return a, decode(b, a)
}

// Checkpoint fetches a signed checkpoint of the ledger, the bytes exactly as
// published, for archiving: number 0 is the latest (GET
// /swarmscore/checkpoints/latest), any other that number. None yet, or no
// such number, is a Problem of type ProblemNotFound.
func (c *Client) Checkpoint(ctx context.Context, number int64) ([]byte, error) {
	path := "/swarmscore/checkpoints/latest"
	if number != 0 {
		path = "/swarmscore/checkpoints/" + strconv.FormatInt(number, 10)
	}
	_, b, err := c.do(ctx, http.MethodGet, path, nil, nil, "", false, nil)
	return b, err
}
