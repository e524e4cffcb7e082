package httpapi

import (
	_ "embed"
	"net/http"
)

// openapiJSON is the hand-written OpenAPI 3.1 description of every route,
// schema and problem type; a test keeps it in step with the routes.
//
//go:embed openapi.json
var openapiJSON []byte

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	writeJSON(w, http.StatusOK, openapiJSON)
}
