package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/swarmscore/swarmscore/internal/service"
)

// LogService is what the transparency log's routes call (service.Log).
type LogService interface {
	// LatestCheckpoint returns the latest signed checkpoint note with its
	// witnesses' cosignatures (ErrNotFound when none was signed).
	LatestCheckpoint(ctx context.Context) (service.SignedCheckpoint, error)
	// Tile returns the tile a tlog-tiles path names (tile/<L>/<N>[.p/<W>])
	// and whether it is full.
	Tile(ctx context.Context, path string) ([]byte, bool, error)
}

// Cache lifetimes of the log's resources (C2SP tlog-tiles): a full tile
// never changes; a partial one never changes either but is soon replaced
// by a wider one; a checkpoint is replaced at every one signed.
const (
	cacheFullTile    = "public, max-age=31536000, immutable"
	cachePartialTile = "public, max-age=60"
	cacheCheckpoint  = "no-cache"
)

// logRoutes registers the log's public routes under /swarmscore/log/
// (C2SP tlog-tiles).
func (s *Server) logRoutes() {
	if s.svc.Log == nil {
		return
	}
	s.route("GET /swarmscore/log/checkpoint", crossOrigin, maxNoBody, s.logCheckpoint)
	// One mux pattern takes every tile path (C2SP tlog-tiles: the index
	// has as many segments as it has groups of three digits); the routes
	// documented and counted are the two shapes a path has below 1000
	// tiles: tile/L/NNN and tile/L/NNN.p/W (or tile/L/xNNN/NNN).
	full := s.guard("GET /swarmscore/log/tile/{level}/{index}", crossOrigin, maxNoBody, s.logTile)
	partial := s.guard("GET /swarmscore/log/tile/{level}/{partial}/{width}", crossOrigin, maxNoBody, s.logTile)
	const pattern = "GET /swarmscore/log/tile/{path...}"
	s.classify.HandleFunc(pattern, func(http.ResponseWriter, *http.Request) {})
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if strings.Count(r.PathValue("path"), "/") <= 1 {
			full(w, r)
			return
		}
		partial(w, r)
	})
}

// logCheckpoint serves the latest checkpoint note with its cosignatures,
// as text/plain (C2SP tlog-checkpoint and tlog-witness).
func (s *Server) logCheckpoint(w http.ResponseWriter, r *http.Request) {
	c, err := s.svc.Log.LatestCheckpoint(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeNote(w, c.Note())
}

func writeNote(w http.ResponseWriter, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("Cache-Control", cacheCheckpoint)
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// logTile serves a tile: its hashes, concatenated.
func (s *Server) logTile(w http.ResponseWriter, r *http.Request) {
	data, full, err := s.svc.Log.Tile(r.Context(), "tile/"+r.PathValue("path"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	if full {
		h.Set("Cache-Control", cacheFullTile)
	} else {
		h.Set("Cache-Control", cachePartialTile)
	}
	w.WriteHeader(http.StatusOK)
	w.Write(data)
}

// wantsJSON reports whether a request's Accept prefers application/json
// to text/plain: it names application/json, and names text/plain (or
// text/*) only after it, or not at all. Quality values are not weighed.
func wantsJSON(r *http.Request) bool {
	accept := strings.ToLower(r.Header.Get("Accept"))
	j := strings.Index(accept, "application/json")
	if j < 0 {
		return false
	}
	t := strings.Index(accept, "text/")
	return t < 0 || j < t
}
