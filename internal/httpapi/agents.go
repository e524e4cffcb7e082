package httpapi

import (
	"context"
	"math/big"
	"net/http"
	"strconv"

	"github.com/swarmscore/swarmscore/internal/erc8004"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/vc"
)

// The routes that meet agents where they are (issue 26): passports as W3C
// Verifiable Credentials with the DID document and status lists behind
// them, ERC-8004 feedback records, the service's A2A agent card, and the
// MCP server at /mcp. Each formats what a use case returns with its bridge
// package (internal/vc, internal/erc8004, internal/a2a); /mcp is
// internal/mcp's handler, given in Options.MCP.

// CredentialService is what the credential routes call
// (service.Credentials).
type CredentialService interface {
	// Credential returns what the agent's credential is made of, as c
	// may see the agent's certificate.
	Credential(ctx context.Context, c service.Caller, agentID string) (service.CredentialSource, error)
	// StatusList returns a Bitstring Status List's revoked entries.
	StatusList(ctx context.Context, list int64) (service.StatusList, error)
	// VerificationKeys returns the Ed25519 keys of the key history.
	VerificationKeys(ctx context.Context) []service.VerificationKey
}

func (s *Server) agentRoutes(opt Options) {
	if s.svc.Credentials != nil {
		s.route("GET /swarmscore/{agent_id}/credential", crossOrigin, maxNoBody, s.credential)
		s.route("GET /swarmscore/credentials/status/{list}", crossOrigin, maxNoBody, s.statusList)
		s.route("GET /.well-known/did.json", crossOrigin, maxNoBody, s.didDocument)
	}
	s.route("GET /swarmscore/{agent_id}/erc8004", crossOrigin, maxNoBody, s.erc8004)
	s.route("GET /.well-known/agent-card.json", crossOrigin, maxNoBody, s.agentCard)
	if opt.MCP != nil {
		// Streamable HTTP: POST carries the JSON-RPC messages. The server
		// is stateless, so it offers no stream of its own (GET) and no
		// session to end (DELETE): like every method a route does not
		// take, they are answered 405 with Allow: POST, as the transport
		// asks of such a server.
		s.route("POST /mcp", public, maxMCPBody, s.mcp(opt.MCP))
	}
}

// maxMCPBody bounds an MCP request: a tools/call of verify_passport holds
// a passport (passport.MaxSize) in a JSON-RPC envelope.
const maxMCPBody = maxVerifyBody

// credential serves the agent's current passport as a W3C Verifiable
// Credential: the certificate route's passport (and its visibility
// rules), signed again as a credential by the same key. The credential
// changes exactly when the certificate does; its ETag is derived from the
// certificate's.
func (s *Server) credential(w http.ResponseWriter, r *http.Request) {
	w.Header()["Vary"] = varyAuthorization
	id, err := agentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	caller, err := s.caller(r, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	src, err := s.svc.Credentials.Credential(r.Context(), caller, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	doc, err := vc.Credential(src.Certificate.Passport, src.Key, s.site, src.StatusList, src.StatusIndex)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	etag := `"vc-` + etagOf(&src.Certificate.Digest)[1:]
	h := w.Header()
	h["Etag"] = []string{etag}
	h["Cache-Control"] = noCache
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeTyped(w, vc.MediaType, append(doc, '\n'))
}

// statusList serves a Bitstring Status List credential, signed now: it
// must be fetched again to learn of a revocation, so caches may keep it a
// minute at most.
func (s *Server) statusList(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(r.PathValue("list"), 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != r.PathValue("list") {
		s.fail(w, r, errorf(ptInvalid, "path segment list: %q is not a status list number (1, 2, …)", clipped(r.PathValue("list"))))
		return
	}
	l, err := s.svc.Credentials.StatusList(r.Context(), n)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	doc, err := vc.StatusListCredential(s.site, l)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "max-age=60")
	writeTyped(w, vc.MediaType, append(doc, '\n'))
}

// didDocument serves the deployment's did:web document.
func (s *Server) didDocument(w http.ResponseWriter, r *http.Request) {
	doc, err := vc.DIDDocument(s.site, s.svc.Credentials.VerificationKeys(r.Context()))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "max-age=60")
	writeTyped(w, "application/did+json", append(doc, '\n'))
}

// erc8004 serves the agent's current passport as an ERC-8004 feedback
// record, the call encoded when ?erc8004_agent_id= gives its on-chain id.
func (s *Server) erc8004(w http.ResponseWriter, r *http.Request) {
	w.Header()["Vary"] = varyAuthorization
	id, err := agentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q, err := singleParams(r, "erc8004_agent_id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	onchain, err := onchainAgentID(q["erc8004_agent_id"])
	if err != nil {
		s.fail(w, r, err)
		return
	}
	caller, err := s.caller(r, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, err := s.svc.Certificates.CertificateFor(r.Context(), caller, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f, err := erc8004.Feedback(c.Passport, s.site.CertificateURL(id), onchain)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header()["Cache-Control"] = noCache
	writeJSON(w, http.StatusOK, marshal(f))
}

// agentCard serves the service's own A2A agent card.
func (s *Server) agentCard(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "max-age=300")
	writeJSON(w, http.StatusOK, s.card)
}

// mcp serves the MCP handler with the caller of the request's optional
// token in its context (CallerFrom), under the public routes' rate limit.
func (s *Server) mcp(h http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.caller(r, false)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(withCaller(r.Context(), c)))
	}
}

// CallerFrom is who an /mcp request speaks for: the caller of its bearer
// token, or the zero (public) Caller without one.
func CallerFrom(ctx context.Context) service.Caller {
	c, _ := ctx.Value(callerKey{}).(service.Caller)
	return c
}

// writeTyped answers 200 with b, a JSON document of the media type
// contentType.
func writeTyped(w http.ResponseWriter, contentType string, b []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// clipped shortens what a client sent for a message.
func clipped(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// onchainAgentID reads ?erc8004_agent_id= (nil when absent).
func onchainAgentID(v string) (*big.Int, error) {
	if v == "" {
		return nil, nil
	}
	n, err := erc8004.ParseAgentID("query parameter erc8004_agent_id", v)
	if err != nil {
		return nil, errorf(ptInvalid, "%w", err)
	}
	return n, nil
}
