package httpapi

import (
	"context"
	"io"
	"mime"
	"net/http"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/wire"
)

// ProofService is what the proof route calls (service.Proofs).
type ProofService interface {
	// CheckProof checks a proof bundle against a session's proof_hash
	// and records the outcome.
	CheckProof(ctx context.Context, c service.Caller, eventID string, bundle io.Reader) (ledger.ProofCheck, error)
}

// maxProofBody is the proof route's body limit: the largest bundle.
const maxProofBody = service.MaxProofBytes

// proofMediaTypes is the one media type of a proof bundle.
var proofMediaTypes = []string{"application/octet-stream"}

// proofRoutes registers the proof route; nothing without a proof service.
func (s *Server) proofRoutes() {
	if s.svc.Proofs == nil {
		return
	}
	s.route("POST /swarmscore/events/conduit_session/{id}/proof", operator, maxProofBody, s.checkProof)
}

// checkProof checks the uploaded bundle: 201 with the recorded check,
// whatever its outcome.
func (s *Server) checkProof(w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != proofMediaTypes[0] {
		w.Header()["Accept"] = proofMediaTypes
		s.fail(w, r, errorf(ptMediaType, "send the proof bundle's bytes as application/octet-stream"))
		return
	}
	c, err := s.svc.Proofs.CheckProof(r.Context(), callerFrom(r), r.PathValue("id"), r.Body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, marshal(wire.ProofCheckOf(&c)))
}
