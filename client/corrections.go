package client

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/swarmscore/swarmscore/api"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// CorrectionRequest asks for a correction of one recorded event (spec
// §11.3; api.CorrectionRequest).
type CorrectionRequest = api.CorrectionRequest

// Correction is a stored correction (api.Correction).
type Correction struct {
	api.Correction
	// Created is false when the same correction had been recorded before
	// (the server answered 200 with the first one instead of 201).
	Created bool
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
type EventKey = api.EventKey

// AppealFiling is an appeal as filed on an agent's behalf
// (api.AppealFiling).
type AppealFiling = api.AppealFiling

// Appeal is an appeal with its deadline and history (api.Appeal).
type Appeal = api.Appeal

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
	var out api.Appeals
	return out.Appeals, decode(b, &out)
}

// ActOnAppeal performs action ("ack", "uphold", "reject" or "escalate") on
// appeal id (POST /swarmscore/appeals/{id}/{action}) with reason (required
// to uphold or reject) and, for an uphold, the corrections to apply. It
// returns the appeal after the action. An agent's token may only escalate
// its own appeal; the other actions are the operator's (ProblemForbidden).
func (c *Client) ActOnAppeal(ctx context.Context, id, action, reason string, corrections []CorrectionRequest) (*Appeal, error) {
	body, err := json.Marshal(api.AppealAction{Reason: reason, Corrections: corrections})
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
