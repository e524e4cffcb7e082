package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/wire"
)

// ErasureService lists the use cases of erasure (GDPR Art. 17, spec
// §11.4; service.Rights), with the errors of Services. Both are an
// operator's.
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

// eraseBody reads api.EraseRequest, keeping its member's JSON kind.
type eraseBody struct {
	Reason json.RawMessage `json:"reason"`
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
	var req eraseBody
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
	res, err := s.svc.Erasure.EraseAgent(r.Context(), callerFrom(r), id, reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := wire.ErasureResultOf(&res)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, marshal(out))
}

// erasures lists every erasure, oldest first.
func (s *Server) erasures(w http.ResponseWriter, r *http.Request) {
	if _, err := singleParams(r); err != nil {
		s.fail(w, r, err)
		return
	}
	es, err := s.svc.Erasure.Erasures(r.Context(), callerFrom(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(wire.ErasuresOf(es)))
}
