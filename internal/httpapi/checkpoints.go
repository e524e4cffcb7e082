package httpapi

import (
	"net/http"
	"strconv"
)

// checkpoint publishes a signed checkpoint, the bytes exactly as stored so
// that every archived copy is the same document: the latest log
// checkpoint note (text/plain), or with Accept: application/json the latest
// JSON checkpoint
// (GET /swarmscore/checkpoints/latest), which changes, or one by number
// (GET /swarmscore/checkpoints/{number}, through items), which never does.
func (s *Server) checkpoint(w http.ResponseWriter, r *http.Request) {
	var number int64
	cache := "no-cache"
	if item := r.PathValue("item"); item != "" {
		n, err := strconv.ParseInt(item, 10, 64)
		if err != nil || n < 1 || strconv.FormatInt(n, 10) != item {
			s.fail(w, r, errorf(ptInvalid, "path segment number: %q is not a checkpoint number (1, 2, …)", item))
			return
		}
		number, cache = n, "public, max-age=31536000, immutable"
	}
	if number == 0 && s.svc.Log != nil && !wantsJSON(r) {
		// The latest as a C2SP signed note, cosignatures included; the
		// JSON document stays at Accept: application/json.
		c, err := s.svc.Log.LatestCheckpoint(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Vary", "Accept")
		writeNote(w, c.Note())
		return
	}
	if number == 0 {
		w.Header().Set("Vary", "Accept")
	}
	doc, err := s.svc.Checkpoints.PublishedCheckpoint(r.Context(), number)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", cache)
	writeJSON(w, http.StatusOK, doc)
}
