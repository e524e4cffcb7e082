package httpapi

import (
	"context"
	"net/http"
	"net/url"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// AuditService is the use case of the audit route (service.Audit).
type AuditService interface {
	// AuditBundle assembles the agent's L3 audit bundle.
	AuditBundle(ctx context.Context, agentID string, q service.AuditQuery) (*audit.Bundle, audit.Openings, error)
}

// auditRoutes registers GET /swarmscore/{agent_id}/audit when the server
// has an AuditService.
func (s *Server) auditRoutes() {
	if s.svc.Audit == nil {
		return
	}
	s.route("GET /swarmscore/{agent_id}/audit", operator, maxNoBody, s.audit)
}

// audit serves the agent's audit bundle (spec §7.1 L3) to an operator:
// as_of (RFC 3339, default the current certificate's computed_at) ends the
// window, withhold (buyers,operators,agents,reasons) replaces those
// identifiers by commitments. The openings of withheld identifiers are not
// sent: an operator who needs the values exports without withholding.
func (s *Server) audit(w http.ResponseWriter, r *http.Request) {
	id, err := agentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q, err := auditQuery(r.URL.RawQuery)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b, _, err := s.svc.Audit.AuditBundle(r.Context(), id, q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, b.AppendJSON(nil))
}

func auditQuery(raw string) (service.AuditQuery, error) {
	var q service.AuditQuery
	values, err := url.ParseQuery(raw)
	if err != nil {
		return q, errorf(ptInvalid, "the query string is not valid: %v", err)
	}
	for k, vals := range values {
		if len(vals) > 1 {
			return q, errorf(ptInvalid, "query parameter %s is given %d times", k, len(vals))
		}
		switch k {
		case "as_of":
			t, err := ledger.ParseTime("as_of", vals[0])
			if err != nil {
				return q, errorf(ptInvalid, "query parameter %v", err)
			}
			q.AsOf = t
		case "withhold":
			cats, err := audit.ParseCategories(vals[0])
			if err != nil {
				return q, errorf(ptInvalid, "query parameter %v", err)
			}
			q.Withhold = cats
		default:
			return q, errorf(ptInvalid, "unknown query parameter %q (known: as_of, withhold)", k)
		}
	}
	return q, nil
}
