package httpapi

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// ErasureService lists the use cases of erasure (GDPR Art. 17, spec
// §11.4), with the errors of Service. Both are an operator's.
type ErasureService interface {
	// EraseAgent erases an agent: its id replaced by a random pseudonym
	// everywhere, its tokens and passports revoked; the result carries the
	// opening of the commitment to the erased id, once.
	EraseAgent(ctx context.Context, c service.Caller, agentID, reason string) (service.ErasureResult, error)
	// Erasures lists every erasure, oldest first, without openings.
	Erasures(ctx context.Context, c service.Caller) ([]ledger.Erasure, error)
}

// maxEraseBody bounds an erasure's body: a reason of at most
// service.MaxErasureReasonLen bytes, up to six times that JSON-escaped.
const maxEraseBody = 8 << 10

// erasureRoutes registers the erasure routes.
func (s *Server) erasureRoutes() {
	s.route("POST /swarmscore/{agent_id}/erase", operator, maxEraseBody, s.erase)
	s.route("GET /swarmscore/erasures", operator, maxNoBody, s.erasures)
}

type openingJSON struct {
	Category audit.Category `json:"category"`
	Salt     string         `json:"salt"`
}

// erasureJSON is an erasure as the API shows it. It never names the erased
// id: the operator who asked knows it, and a response or log that paired
// it with the pseudonym would undo the erasure.
type erasureJSON struct {
	ID        string `json:"erasure_id"`
	Pseudonym string `json:"pseudonym"`
	ErasedAt  string `json:"erased_at"`
	ErasedBy  string `json:"erased_by"`
	Identity  string `json:"identity"`
	Sealed    int    `json:"sealed_records"`
	// Only in the response to the erasure itself.
	Opening *openingJSON `json:"opening,omitempty"`
	Reason  *string      `json:"reason,omitempty"`
}

func erasureOf(e *ledger.Erasure) erasureJSON {
	return erasureJSON{ID: e.ID, Pseudonym: e.Pseudonym, ErasedAt: ledger.FormatTime(e.At), ErasedBy: e.By,
		Identity: e.Identity, Sealed: len(e.Digests)}
}

// erase erases {agent_id}, with an optional body {"reason": "..."}, and
// answers 201 with the erasure and its opening (shown this once: the
// response must not be cached).
func (s *Server) erase(w http.ResponseWriter, r *http.Request) {
	id, err := agentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req struct {
		Reason json.RawMessage `json:"reason"`
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := decodeJSON(b, &req, 0); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	reason, err := optionalString("reason", req.Reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.svc.EraseAgent(r.Context(), service.OperatorCaller(operatorFrom(r)), id, reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := erasureOf(&res.Erasure)
	out.Opening = &openingJSON{Category: audit.Agents, Salt: hex.EncodeToString(res.Opening[:])}
	if res.Reason != "" {
		out.Reason = &res.Reason
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, marshal(out))
}

// erasures lists every erasure, oldest first.
func (s *Server) erasures(w http.ResponseWriter, r *http.Request) {
	if _, err := singleParams(r); err != nil {
		s.fail(w, r, err)
		return
	}
	es, err := s.svc.Erasures(r.Context(), service.OperatorCaller(operatorFrom(r)))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Erasures []erasureJSON `json:"erasures"`
	}{Erasures: make([]erasureJSON, 0, len(es))}
	for i := range es {
		out.Erasures = append(out.Erasures, erasureOf(&es[i]))
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(out))
}
