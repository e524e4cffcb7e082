package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/swarmscore/swarmscore/api"
)

// HoldRequest places an escrow hold on a payment (api.HoldRequest).
type HoldRequest = api.HoldRequest

// HoldChange is the body of a change of a hold (api.HoldChange).
type HoldChange = api.HoldChange

// Hold is an escrow hold as the server stores it (api.Hold), and whether
// this call placed it.
type Hold struct {
	api.Hold
	// Created is false when the same hold had been placed before (the
	// server answered 200 with the stored one instead of 201).
	Created bool
}

// ProofCheck is a recorded check of a proof bundle (api.ProofCheck).
type ProofCheck = api.ProofCheck

// PlaceHold places an escrow hold (POST /swarmscore/escrow/holds) with the
// operator token: priced by the provider's current passport, recorded as
// the transaction's HELD report. The same request again returns the stored
// hold with Created false; other terms are a Problem of type
// ProblemConflict with code hold_conflict.
func (c *Client) PlaceHold(ctx context.Context, req HoldRequest) (*Hold, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	resp, b, err := c.do(ctx, http.MethodPost, "/swarmscore/escrow/holds", nil, bytes.NewReader(body), "application/json", true, nil)
	if err != nil {
		return nil, err
	}
	out := &Hold{Created: resp.StatusCode == http.StatusCreated}
	return out, decode(b, out)
}

// ChangeHold releases, disputes, resolves or cancels the hold of
// transactionID (action is "release", "dispute", "resolve" or "cancel";
// POST /swarmscore/escrow/holds/{id}/{action}). A move the hold's state
// does not allow is a Problem of type ProblemConflict with code
// invalid_transition.
func (c *Client) ChangeHold(ctx context.Context, transactionID, action string, change HoldChange) (*api.Hold, error) {
	body, err := json.Marshal(change)
	if err != nil {
		return nil, err
	}
	_, b, err := c.do(ctx, http.MethodPost, "/swarmscore/escrow/holds/"+url.PathEscape(transactionID)+"/"+url.PathEscape(action), nil,
		bytes.NewReader(body), "application/json", true, nil)
	if err != nil {
		return nil, err
	}
	out := &api.Hold{}
	return out, decode(b, out)
}

// GetHold reads the hold of transactionID (GET
// /swarmscore/escrow/holds/{id}).
func (c *Client) GetHold(ctx context.Context, transactionID string) (*api.Hold, error) {
	_, b, err := c.do(ctx, http.MethodGet, "/swarmscore/escrow/holds/"+url.PathEscape(transactionID), nil, nil, "", true, nil)
	if err != nil {
		return nil, err
	}
	out := &api.Hold{}
	return out, decode(b, out)
}

// CheckProof uploads a Conduit session's proof bundle (POST
// /swarmscore/events/conduit_session/{id}/proof) and returns the recorded
// check: proof_matched or proof_mismatch.
func (c *Client) CheckProof(ctx context.Context, sessionID string, bundle []byte) (*ProofCheck, error) {
	_, b, err := c.do(ctx, http.MethodPost, "/swarmscore/events/conduit_session/"+url.PathEscape(sessionID)+"/proof", nil,
		bytes.NewReader(bundle), "application/octet-stream", true, nil)
	if err != nil {
		return nil, err
	}
	out := &ProofCheck{}
	return out, decode(b, out)
}
