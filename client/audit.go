package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/audit"
)

// AuditQuery selects an audit bundle: AsOf ends the audited window (zero:
// the current certificate's computed_at); Withhold names the kinds of
// other parties' identifiers to replace by commitments (buyers,
// operators, agents, reasons).
type AuditQuery struct {
	AsOf     time.Time
	Withhold []string
}

// AuditReport is what VerifyBundle found: valid, or the first
// discrepancy, with what was checked (the checkpoint, the log inclusion
// proof of the agent's head record) and the warnings.
type AuditReport = audit.Report

// Audit fetches an agent's audit bundle (GET /swarmscore/{agent_id}/audit,
// spec §7.1 L3; an operator token), the document as served: archive it,
// and check it offline with VerifyBundle.
func (c *Client) Audit(ctx context.Context, agentID string, q AuditQuery) ([]byte, error) {
	v := url.Values{}
	if !q.AsOf.IsZero() {
		v.Set("as_of", q.AsOf.UTC().Format(time.RFC3339Nano))
	}
	if len(q.Withhold) > 0 {
		v.Set("withhold", strings.Join(q.Withhold, ","))
	}
	if len(v) == 0 {
		v = nil
	}
	_, b, err := c.do(ctx, http.MethodGet, "/swarmscore/"+agentID+"/audit", v, nil, "", true, nil)
	return b, err
}

// VerifyBundle checks an audit bundle offline, with nothing but the bundle
// and keySet, a JWK set or key history (KeySetPath, KeyHistoryPath) whose
// Ed25519 keys check the passport, the checkpoint and the log checkpoint
// note: every chain link, the checkpoint's inclusion proofs, the head
// record's inclusion in the transparency log, the rules of every report
// and correction, the account of every event, the counts, the score, the
// passport, and the agent's escrow holds with the passports that priced
// them (docs/FORMATS.md, "Audit bundles"). Problems are in the
// report; only a key set that cannot be read is an error (matching
// passport.ErrInvalid's kind, errkind.ErrInvalid).
func VerifyBundle(bundle, keySet []byte) (*AuditReport, error) {
	keys, err := audit.NewKeys(nil, keySet)
	if err != nil {
		return nil, err
	}
	return audit.VerifyDocument(bundle, keys), nil
}
