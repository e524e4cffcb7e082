package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/wire"
	"github.com/swarmscore/swarmscore/score"
)

// agentID reads and checks the {agent_id} path segment.
func agentID(r *http.Request) (string, error) {
	id := r.PathValue("agent_id")
	if err := ledger.CheckID("agent_id", id); err != nil {
		return "", errorf(ptInvalid, "path segment %w", err)
	}
	return id, nil
}

// certificate serves the agent's current passport. The ETag is a digest of
// the exact bytes, so it changes exactly when a new passport is issued.
// Caches must revalidate every time (no-cache): a passport stays validly
// signed until its expires_at, but after a DISPUTED or FAILED event the
// agent has a new one, and a copy kept for up to 7 days would hide it
// (spec Pitfall 6). Revalidation is cheap: a 304 from the certificate this
// process keeps in memory. An unlisted agent's passport is served only to
// the agent's own token and operators': the answer varies with
// Authorization, and shared caches do not reuse an answer to an
// authenticated request (RFC 9111 §3.5).
func (s *Server) certificate(w http.ResponseWriter, r *http.Request) {
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
	c, err := s.svc.Certificates.CertificateFor(r.Context(), caller, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if c.Issued {
		s.metrics.passports.Inc()
	}
	if c.Digest == ([sha256.Size]byte{}) { // a Service that leaves it to us
		c.Digest = sha256.Sum256(c.Passport)
	}
	etag := etagOf(&c.Digest)
	h := w.Header()
	// Canonical keys, assigned directly: Set would canonicalise them again.
	h["Etag"] = []string{etag}
	h["Cache-Control"] = noCache
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeJSON(w, http.StatusOK, c.Passport)
}

var (
	noCache           = []string{"no-cache"}
	varyAuthorization = []string{"Authorization"}
)

// etagOf renders the first 128 bits of a passport's SHA-256 as a strong
// ETag, in one allocation.
func etagOf(sum *[sha256.Size]byte) string {
	var b [2 + 32]byte
	b[0], b[len(b)-1] = '"', '"'
	hex.Encode(b[1:len(b)-1], sum[:16])
	return string(b[:])
}

// etagMatch implements If-None-Match's weak comparison for one ETag.
func etagMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// verifyRequest reads api.VerifyRequest, keeping each member's JSON kind.
type verifyRequest struct {
	Certificate json.RawMessage `json:"certificate"`
	AgentID     json.RawMessage `json:"agent_id"`
}

// verifyExpected says what a verify request is, for the details of
// requests that are not one.
const verifyExpected = `a passport, or {"certificate": <passport>, "agent_id": "<optional agent id>"}`

// verify checks a passport (spec §7.3). The body is the wrapper
// {"certificate":…,"agent_id":…} (agent_id optional: the passport's own
// agent is used), or the bare passport. A document that is not a valid
// passport is still a 200 with valid false and the reasons; only a request
// that is neither form is a problem.
func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	doc, agent, err := readVerifyRequest(r.Body, r.ContentLength)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.svc.Verifier.Verify(r.Context(), doc, agent)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	switch {
	case v.DetectedTampering:
		s.metrics.verifications.WithLabelValues("tampered").Inc()
	case v.Valid:
		s.metrics.verifications.WithLabelValues("valid").Inc()
	default:
		s.metrics.verifications.WithLabelValues("invalid").Inc()
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(wire.VerificationOf(&v)))
}

// passportMembers are the top-level members of a passport (spec §6.1) that
// a verify wrapper does not have: one of them marks a bare passport.
var passportMembers = map[string]bool{
	"swarmscore_version": true, "agent_passport_id": true, "issuer": true, "score": true, "dimensions": true,
	"escrow_modifier": true, "qualification_gaps": true, "formula_version": true, "expires_at": true,
}

// readVerifyRequest reads a verify body of size bytes (-1 when unknown):
// the wrapper, whose certificate is returned as received with its agent_id
// ("" when absent), or a bare passport, returned whole with agent "". A
// UTF-8 byte-order mark before it is skipped. Its errors are problems
// naming what was expected.
func readVerifyRequest(body io.Reader, size int64) (doc []byte, agent string, err error) {
	var buf bytes.Buffer
	if size > 0 && size <= maxVerifyBody {
		buf.Grow(int(size) + bytes.MinRead) // one read past the end sees EOF
	}
	if _, err := buf.ReadFrom(body); err != nil {
		return nil, "", err // *http.MaxBytesError: body-too-large
	}
	b := buf.Bytes()
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	if doc, agent, ok := verifyWrapperFast(b); ok {
		return doc, agent, nil
	}
	return readVerifyGeneral(b)
}

// readVerifyGeneral is readVerifyRequest for any body b: the decoder
// judges it, and its errors become problems.
func readVerifyGeneral(b []byte) (doc []byte, agent string, err error) {
	var req verifyRequest
	// Repeated names are checked in the wrapper only: the passport is the
	// verifier's to judge (a repeated name in it is invalid_json, as in a
	// bare passport), and a 200 saying why beats a 400.
	if err := decodeJSON(b, &req, 1); err != nil {
		var he *httpError
		switch {
		case !errors.As(err, &he):
			return nil, "", err
		case he.pt == ptWrongType && strings.HasPrefix(he.detail, "the request body must be"):
			return nil, "", errorf(ptWrongType, "the request body must be a JSON object: %s; got a JSON %s", verifyExpected, jsonKind(b))
		case he.pt == ptMalformedJSON && strings.Contains(he.detail, "empty"):
			return nil, "", errorf(ptMalformedJSON, "the request body is empty; expected %s", verifyExpected)
		case he.pt != ptInvalid || !strings.HasPrefix(he.detail, "unknown field"):
			return nil, "", err
		}
		// Members a wrapper does not have: a bare passport, or a wrapper
		// with an extra member.
		names, serr := memberNames(b)
		if serr != nil {
			return nil, "", serr
		}
		if !slices.Contains(names, "certificate") && slices.ContainsFunc(names, func(n string) bool { return passportMembers[n] }) {
			return bytes.TrimSpace(b), "", nil
		}
		return nil, "", errorf(ptInvalid, "%s; expected %s", he.detail, verifyExpected)
	}
	switch k := jsonKind(req.Certificate); k {
	case "object":
	case "nothing", "null":
		return nil, "", errorf(ptInvalid, "field certificate is required: expected %s", verifyExpected)
	default:
		return nil, "", errorf(ptWrongType, "field certificate must be a JSON object (the passport), not a JSON %s", k)
	}
	switch k := jsonKind(req.AgentID); k {
	case "string":
		if err := json.Unmarshal(req.AgentID, &agent); err != nil {
			return nil, "", jsonError(err)
		}
		if err := ledger.CheckID("agent_id", agent); err != nil {
			return nil, "", errorf(ptInvalid, "field %s", err)
		}
	case "nothing", "null":
	default:
		return nil, "", errorf(ptWrongType, "field agent_id must be a JSON string, not a JSON %s", k)
	}
	return req.Certificate, agent, nil
}

// verifyWrapperFast reads the usual verify body, the wrapper
// {"certificate":{…},"agent_id":"…"} (agent_id optional, the members in
// either order, each once, their names and the agent id with no escape),
// with one validating scan (json.Valid) and a walk of its top level
// instead of the decoder's reflection and a second scan for repeated
// names. ok is false for every other body, which readVerifyGeneral then
// judges; for a body it accepts, readVerifyGeneral returns the same doc
// and agent (FuzzVerifyWrapperFast).
func verifyWrapperFast(b []byte) (doc []byte, agent string, ok bool) {
	if !json.Valid(b) {
		return nil, "", false
	}
	// b is valid JSON from here on: every index below stays in range.
	i := skipSpace(b, 0)
	if b[i] != '{' {
		return nil, "", false
	}
	var haveCert, haveAgent bool
	for i = skipSpace(b, i+1); b[i] == '"'; {
		name, end, plain := plainString(b, i)
		if !plain {
			return nil, "", false
		}
		i = skipSpace(b, skipSpace(b, end)+1) // past the colon
		switch {
		case name == "certificate" && !haveCert && b[i] == '{':
			end = objectEnd(b, i)
			doc, haveCert = b[i:end], true
		case name == "agent_id" && !haveAgent && b[i] == '"':
			agent, end, plain = plainString(b, i)
			if !plain || !ledger.ValidID(agent) {
				return nil, "", false
			}
			haveAgent = true
		default:
			return nil, "", false
		}
		if i = skipSpace(b, end); b[i] == '}' {
			return doc, agent, haveCert
		}
		i = skipSpace(b, i+1) // past the comma
	}
	return nil, "", false // {}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads the JSON string starting at b[i]: its content and the
// index after its closing quote; plain is false when it holds an escape.
func plainString(b []byte, i int) (s string, end int, plain bool) {
	j := bytes.IndexByte(b[i+1:], '"') + i + 1
	s = string(b[i+1 : j])
	return s, j + 1, !strings.Contains(s, "\\")
}

// objectEnd is the index after the valid JSON object or array starting at
// b[i].
func objectEnd(b []byte, i int) int {
	depth := 0
	for ; ; i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		}
	}
}

// memberNames lists the member names of the JSON object b, in order.
func memberNames(b []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return nil, jsonError(err)
	}
	var names []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, jsonError(err)
		}
		name, _ := t.(string)
		names = append(names, name)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, jsonError(err)
		}
	}
	return names, nil
}

// score serves the agent's current score: the CLI's --json shape with the
// agent and the entry's times in front; an unlisted agent's only as the
// certificate route serves its passport.
func (s *Server) score(w http.ResponseWriter, r *http.Request) {
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
	e, err := s.svc.Certificates.ScoreFor(r.Context(), caller, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// ids are [A-Za-z0-9._:-]: AppendJSON's quoting is JSON-exact.
	sc := api.Score{AgentID: id, ComputedAt: e.ComputedAt, ExpiresAt: e.ExpiresAt, Result: e.Result}
	b := append(sc.AppendJSON(make([]byte, 0, 1024)), '\n')
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, b)
}

// events ingests a JSON array or NDJSON stream of events for the calling
// operator as one batch (service.Ingestion.IngestEvents, the pipeline
// `swarmscore ingest` uses): events that do not parse or that the ledger
// refuses are listed with their index (and line, for NDJSON). A body that
// is not JSON at all, holds too many events, or is too large stores
// nothing.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if err := eventsMediaType(r.Header.Get("Content-Type")); err != nil {
		w.Header()["Accept"] = eventsMediaTypes // RFC 9110 §15.5.16
		s.fail(w, r, err)
		return
	}
	rep, err := s.svc.Ingest.IngestEvents(r.Context(), operatorFrom(r), r.Body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := wire.IngestResultOf(&rep)
	s.metrics.eventsIn.Add(float64(resp.Accepted))
	s.metrics.eventsDup.Add(float64(resp.Duplicates))
	s.metrics.eventsSuperseded.Add(float64(resp.Superseded))
	s.metrics.eventsBad.Add(float64(len(resp.Rejected)))
	writeJSON(w, http.StatusOK, marshal(resp))
}

// eventsMediaTypes are the media types of POST /swarmscore/events. The
// body's first byte tells an array from NDJSON, as in `swarmscore ingest`.
var eventsMediaTypes = []string{"application/json, application/x-ndjson"}

// eventsMediaType checks the Content-Type of a batch of events: one of
// eventsMediaTypes, with no parameter but a charset of UTF-8 (RFC 8259
// §8.1). Anything else, an absent header included, is refused before the
// body is read: a form or an XML document posted by mistake is not a batch
// whose every line is rejected.
func eventsMediaType(header string) error {
	const want = "send application/json (an array of events) or application/x-ndjson (one event per line)"
	if header == "" {
		return errorf(ptMediaType, "Content-Type is required: %s", want)
	}
	mt, params, err := mime.ParseMediaType(header)
	if err != nil {
		return errorf(ptMediaType, "Content-Type %q is not a media type: %s", header, want)
	}
	if mt != "application/json" && mt != "application/x-ndjson" {
		return errorf(ptMediaType, "Content-Type %s is not accepted: %s", mt, want)
	}
	for k, v := range params {
		if k != "charset" {
			return errorf(ptMediaType, "Content-Type %s has a parameter %s; only charset=utf-8 is accepted", mt, k)
		}
		if !strings.EqualFold(v, "utf-8") {
			return errorf(ptMediaType, "Content-Type %s with charset %s: events are UTF-8 (charset=utf-8, or none)", mt, v)
		}
	}
	return nil
}

// escrowRequest reads api.EscrowRequest, keeping its member's JSON kind.
type escrowRequest struct {
	AmountCents json.RawMessage `json:"amount_cents"`
}

// escrow computes the hold for a payment to the agent (spec §5).
func (s *Server) escrow(w http.ResponseWriter, r *http.Request) {
	id, err := agentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req escrowRequest
	if err := decodeObject(r.Body, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	amount, err := parseCents("amount_cents", req.AmountCents, ledger.MaxEscrowCents)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := s.svc.Certificates.Escrow(r.Context(), id, amount)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(api.Escrow{Score: e.Score, EscrowModifier: e.Modifier, HoldCents: e.HoldCents, ReleasedCents: e.ReleasedCents}))
}

// agents ranks agents for marketplace search: tier is the lowest tier
// wanted, min_score the lowest score, limit the page size (1..1000, default
// 50) and cursor the next_cursor of the previous page.
func (s *Server) agents(w http.ResponseWriter, r *http.Request) {
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		s.fail(w, r, errorf(ptInvalid, "the query string is not valid: %v", err))
		return
	}
	q, err := rankingQuery(values)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.svc.Certificates.Ranking(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := api.AgentsPage{Agents: make([]api.RankedAgent, 0, len(page.Agents))}
	for _, e := range page.Agents {
		resp.Agents = append(resp.Agents, api.RankedAgent{
			AgentID:             e.AgentID,
			Score:               e.Result.Score,
			Tier:                e.Result.Tier,
			EscrowModifier:      e.Result.Escrow,
			ConduitTotal:        e.Result.Counts.ConduitTotal,
			AP2Total:            e.Result.Counts.AP2Total,
			ConduitContribution: e.Result.ConduitContribution,
			AP2Contribution:     e.Result.AP2Contribution,
			ComputedAt:          wire.Seconds(e.ComputedAt),
			ExpiresAt:           wire.Seconds(e.ExpiresAt),
		})
	}
	if page.Next != nil {
		c := encodeCursor(*page.Next, q.By)
		resp.NextCursor = &c
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(resp))
}

func rankingQuery(v url.Values) (service.RankingQuery, error) {
	q := service.RankingQuery{Limit: defaultRankSize}
	for k, vals := range v {
		if len(vals) > 1 {
			return q, errorf(ptInvalid, "query parameter %s is given %d times", k, len(vals))
		}
		val := vals[0]
		switch k {
		case "tier":
			t, err := score.ParseTier(val)
			if err != nil {
				return q, errorf(ptInvalid, "query parameter tier: %q is not NONE, STANDARD or ELITE", val)
			}
			q.MinTier = t
		case "min_score":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 || n > score.MaxScore {
				return q, errorf(ptInvalid, "query parameter min_score: %q is not an integer in 0..%d", val, score.MaxScore)
			}
			q.MinScore = n
		case "limit":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 || n > 1000 {
				return q, errorf(ptInvalid, "query parameter limit: %q is not an integer in 1..1000", val)
			}
			q.Limit = n
		case "sort":
			by, ok := rankSorts[val]
			if !ok {
				return q, errorf(ptInvalid, "query parameter sort: %q is not score, conduit, ap2 or escrow", val)
			}
			q.By = by
		case "cursor":
			// Decoded below, once sort is known: a cursor names its order.
		default:
			return q, errorf(ptInvalid, "unknown query parameter %q (known: tier, min_score, sort, limit, cursor)", k)
		}
	}
	if c := v.Get("cursor"); c != "" {
		after, err := decodeCursor(c, q.By)
		if err != nil {
			return q, err
		}
		q.After = &after
	}
	return q, nil
}

// rankSorts are the ranking's orders, ?sort=: the score, or one
// dimension's contribution to it (§3.4), highest first. escrow is the
// score's order, lowest hold first: the share held falls as the score
// rises (§3.6; docs/ERRATA.md E71, as the leaderboard page does).
var rankSorts = map[string]ledger.RankBy{"score": ledger.RankScore, "escrow": ledger.RankScore,
	"conduit": ledger.RankConduit, "ap2": ledger.RankAP2}

// cursorPrefix marks a cursor of an order other than the score's, so that
// a cursor is never read under another order than the one that made it;
// a score cursor has none, as before sort existed.
var cursorPrefix = map[ledger.RankBy]string{ledger.RankConduit: "conduit:", ledger.RankAP2: "ap2:"}

// Cursors are opaque to clients: base64url of "[order:]key:agent_id".
func encodeCursor(c ledger.Cursor, by ledger.RankBy) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix[by] + strconv.Itoa(c.Score) + ":" + c.AgentID))
}

func decodeCursor(s string, by ledger.RankBy) (ledger.Cursor, error) {
	bad := errorf(ptInvalid, "query parameter cursor is not a next_cursor this server returned for this sort")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return ledger.Cursor{}, bad
	}
	rest, ok := strings.CutPrefix(string(b), cursorPrefix[by])
	if !ok {
		return ledger.Cursor{}, bad
	}
	sc, id, ok := strings.Cut(rest, ":")
	n, err := strconv.Atoi(sc)
	if !ok || err != nil || n < 0 || n > score.MaxScore || !ledger.ValidID(id) {
		return ledger.Cursor{}, bad
	}
	return ledger.Cursor{Score: n, AgentID: id}, nil
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`+"\n"))
}

// readyz answers within 2 s (or Options.DBTimeout if shorter), whatever
// the database does: a probe that hangs is worse than one that fails.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), min(readyTimeout, s.gate.timeout))
	defer cancel()
	if err := s.svc.Schema.Ready(ctx); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, []byte(`{"status":"ready"}`+"\n"))
}
