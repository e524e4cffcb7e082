package client

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/swarmscore/swarmscore/api"
	"io"
	"net/http"
)

// Erasure is an agent's erasure (GDPR Art. 17; api.Erasure): the
// pseudonym it now has, the commitment to its old id (Identity), and, in
// the answer to EraseAgent only, the opening of that commitment. No answer
// names the erased id.
type Erasure = api.Erasure

// Opening opens an erasure's identity commitment.
type Opening = api.Opening

// EraseAgent erases an agent (POST /swarmscore/{agent_id}/erase) with the
// operator token; reason may be "". It cannot be undone. The result holds
// the opening, which the server does not keep: hand it to the agent.
func (c *Client) EraseAgent(ctx context.Context, agentID, reason string) (*Erasure, error) {
	var body io.Reader
	ct := ""
	if reason != "" {
		b, err := json.Marshal(api.EraseRequest{Reason: reason})
		if err != nil {
			return nil, err
		}
		body, ct = bytes.NewReader(b), "application/json"
	}
	_, b, err := c.do(ctx, http.MethodPost, "/swarmscore/"+agentID+"/erase", nil, body, ct, true, nil)
	if err != nil {
		return nil, err
	}
	e := &Erasure{}
	return e, decode(b, e)
}

// Erasures lists every erasure, oldest first, without openings (GET
// /swarmscore/erasures) with the operator token.
func (c *Client) Erasures(ctx context.Context) ([]Erasure, error) {
	_, b, err := c.do(ctx, http.MethodGet, "/swarmscore/erasures", nil, nil, "", true, nil)
	if err != nil {
		return nil, err
	}
	var out api.Erasures
	return out.Erasures, decode(b, &out)
}
