package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// Erasure is an agent's erasure (GDPR Art. 17): the pseudonym it now has,
// the commitment to its old id (Identity), and, in the answer to
// EraseAgent only, the opening of that commitment. No answer names the
// erased id.
type Erasure struct {
	ID            string    `json:"erasure_id"`
	Pseudonym     string    `json:"pseudonym"`
	ErasedAt      time.Time `json:"erased_at"`
	ErasedBy      string    `json:"erased_by"`
	Identity      string    `json:"identity"`
	SealedRecords int       `json:"sealed_records"`
	// Opening is set only in EraseAgent's result: shown once, stored
	// nowhere by the server. Identity is hex SHA-256(
	// "swarmscore-audit-withheld/v1" 0x00 Category 0x00 salt id).
	Opening *Opening `json:"opening,omitempty"`
	// Reason is the reason sent, the erased id in it replaced by the
	// pseudonym (EraseAgent only; not stored).
	Reason string `json:"reason,omitempty"`
}

// Opening opens an erasure's identity commitment: its category ("agents")
// and salt (32 hex digits).
type Opening struct {
	Category string `json:"category"`
	Salt     string `json:"salt"`
}

// EraseAgent erases an agent (POST /swarmscore/{agent_id}/erase) with the
// operator token; reason may be "". It cannot be undone. The result holds
// the opening, which the server does not keep: hand it to the agent.
func (c *Client) EraseAgent(ctx context.Context, agentID, reason string) (*Erasure, error) {
	var body io.Reader
	ct := ""
	if reason != "" {
		b, err := json.Marshal(map[string]string{"reason": reason})
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
	var out struct {
		Erasures []Erasure `json:"erasures"`
	}
	return out.Erasures, decode(b, &out)
}
