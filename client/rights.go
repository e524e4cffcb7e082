package client

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/swarmscore/swarmscore/api"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Agents' rights and gaming signals. The routes of one agent's data take
// the agent's own token (swarmscore token create --agent) or an operator
// token, given with WithToken.

// Disclosure is what agents consent to, and the liability disclaimer
// (api.Disclosure).
type Disclosure = api.Disclosure

// Disclosure fetches a version of the disclosure (GET
// /swarmscore/disclosure), the current one for "".
func (c *Client) Disclosure(ctx context.Context, version string) (*Disclosure, error) {
	var q url.Values
	if version != "" {
		q = url.Values{"version": {version}}
	}
	_, b, err := c.do(ctx, http.MethodGet, "/swarmscore/disclosure", q, nil, "", false, nil)
	if err != nil {
		return nil, err
	}
	d := &Disclosure{}
	return d, decode(b, d)
}

// Consent is an agent's consent and visibility, and whether the server
// publishes it (api.ConsentStatus). DisclosureVersion, ConsentedAt and
// ConsentedBy are nil until it consents.
type Consent = api.ConsentStatus

// Consent fetches the agent's consent and visibility (GET
// /swarmscore/{agent_id}/consent).
func (c *Client) Consent(ctx context.Context, agentID string) (*Consent, error) {
	return c.consent(ctx, http.MethodGet, "/swarmscore/"+agentID+"/consent", nil)
}

// RecordConsent records the agent's consent to a disclosure version, the
// current one for "" (PUT /swarmscore/{agent_id}/consent).
func (c *Client) RecordConsent(ctx context.Context, agentID, version string) (*Consent, error) {
	return c.consent(ctx, http.MethodPut, "/swarmscore/"+agentID+"/consent", api.ConsentRequest{DisclosureVersion: version})
}

// SetVisibility makes the agent "public" or "unlisted" (PUT
// /swarmscore/{agent_id}/visibility).
func (c *Client) SetVisibility(ctx context.Context, agentID, visibility string) (*Consent, error) {
	return c.consent(ctx, http.MethodPut, "/swarmscore/"+agentID+"/visibility", api.VisibilityRequest{Visibility: visibility})
}

func (c *Client) consent(ctx context.Context, method, path string, body any) (*Consent, error) {
	var r io.Reader
	ct := ""
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r, ct = bytes.NewReader(b), "application/json"
	}
	_, b, err := c.do(ctx, method, path, nil, r, ct, true, nil)
	if err != nil {
		return nil, err
	}
	out := &Consent{}
	return out, decode(b, out)
}

// Record is one event counting in an agent's score, in its current state
// (api.Record). BuyerID is a pseudonym when Records.BuyerIDsMasked.
type Record = api.Record

// IssuedPassport is a passport issued to an agent (api.IssuedPassport).
type IssuedPassport = api.IssuedPassport

// Records are the events counting in an agent's score as of AsOf and the
// passports issued to it by then (api.Records).
type Records = api.Records

func asOfQuery(asOf time.Time) url.Values {
	if asOf.IsZero() {
		return nil
	}
	return url.Values{"as_of": {asOf.UTC().Format(time.RFC3339Nano)}}
}

// Records fetches the records behind the agent's score as of asOf (now
// when zero): GET /swarmscore/{agent_id}/records.
func (c *Client) Records(ctx context.Context, agentID string, asOf time.Time) (*Records, error) {
	_, b, err := c.do(ctx, http.MethodGet, "/swarmscore/"+agentID+"/records", asOfQuery(asOf), nil, "", true, nil)
	if err != nil {
		return nil, err
	}
	r := &Records{}
	return r, decode(b, r)
}

// Signal is one gaming signal: its figure beside its threshold.
type Signal = api.Signal

// AgentSignals are an agent's gaming signals as of AsOf.
type AgentSignals = api.AgentSignals

// Signals fetches the agent's gaming signals over the window ending at
// asOf (now when zero): GET /swarmscore/{agent_id}/signals.
func (c *Client) Signals(ctx context.Context, agentID string, asOf time.Time) (*AgentSignals, error) {
	_, b, err := c.do(ctx, http.MethodGet, "/swarmscore/"+agentID+"/signals", asOfQuery(asOf), nil, "", true, nil)
	if err != nil {
		return nil, err
	}
	s := &AgentSignals{}
	return s, decode(b, s)
}

// FlaggedAgents are the agents with a flagged signal as of AsOf.
type FlaggedAgents = api.FlaggedAgents

// FlaggedAgents lists the agents with a flagged gaming signal as of asOf
// (now when zero), with the operator token: GET
// /swarmscore/signals?flagged=true.
func (c *Client) FlaggedAgents(ctx context.Context, asOf time.Time) (*FlaggedAgents, error) {
	q := asOfQuery(asOf)
	if q == nil {
		q = url.Values{}
	}
	q.Set("flagged", "true")
	_, b, err := c.do(ctx, http.MethodGet, "/swarmscore/signals", q, nil, "", true, nil)
	if err != nil {
		return nil, err
	}
	f := &FlaggedAgents{}
	return f, decode(b, f)
}

// PrivateCertificate is Certificate with the token sent: an unlisted (or
// unconsented) agent's passport, for the agent's own token or an operator
// token.
func (c *Client) PrivateCertificate(ctx context.Context, agentID string) (*Certificate, error) {
	resp, b, err := c.do(ctx, http.MethodGet, "/swarmscore/"+agentID+"/certificate", nil, nil, "", true, nil)
	if err != nil {
		return nil, err
	}
	return &Certificate{Raw: b, ETag: resp.Header.Get("ETag")}, nil
}

// PrivateScore is Score with the token sent, as PrivateCertificate.
func (c *Client) PrivateScore(ctx context.Context, agentID string) (*Score, error) {
	_, b, err := c.do(ctx, http.MethodGet, "/swarmscore/"+agentID, nil, nil, "", true, nil)
	if err != nil {
		return nil, err
	}
	s := &Score{}
	return s, decode(b, s)
}
