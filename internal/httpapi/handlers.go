package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/score"
)

// agentID reads and checks the {agent_id} path segment.
func agentID(r *http.Request) (string, error) {
	id := r.PathValue("agent_id")
	if err := ledger.CheckID("agent_id", id); err != nil {
		return "", errorf(ptInvalid, "path segment %s", err)
	}
	return id, nil
}

// rfc3339 renders t as the wire format uses it everywhere: UTC, seconds.
func rfc3339(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// certificate serves the agent's current passport. The ETag is a digest of
// the exact bytes, so it changes exactly when a new passport is issued;
// caches may keep the document until its expires_at.
func (s *Server) certificate(w http.ResponseWriter, r *http.Request) {
	id, err := agentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, err := s.svc.Certificate(r.Context(), id)
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
	maxAge := int64(c.ExpiresAt.Sub(s.now()) / time.Second)
	if maxAge < 0 {
		maxAge = 0
	}
	// Canonical keys, assigned directly: Set would canonicalise them again.
	h["Etag"] = []string{etag}
	h["Cache-Control"] = []string{"public, max-age=" + itoa(maxAge)}
	h["Expires"] = []string{s.httpDate(c.ExpiresAt)}
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeJSON(w, http.StatusOK, c.Passport)
}

// httpDate formats t for an Expires header, remembering the last result:
// a hot certificate is served with the same expiry again and again.
func (s *Server) httpDate(t time.Time) string {
	if d := s.lastDate.Load(); d != nil && d.t.Equal(t) {
		return d.s
	}
	d := &formattedDate{t: t, s: t.UTC().Format(http.TimeFormat)}
	s.lastDate.Store(d)
	return d.s
}

type formattedDate struct {
	t time.Time
	s string
}

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

type verifyRequest struct {
	Certificate json.RawMessage `json:"certificate"`
	AgentID     json.RawMessage `json:"agent_id"`
}

// verifyResponse has exactly the §7.3 fields plus errors.
type verifyResponse struct {
	Valid             bool                  `json:"valid"`
	SignatureValid    bool                  `json:"signature_valid"`
	ScoreValid        bool                  `json:"score_valid"`
	ExpiresAt         *string               `json:"expires_at"`
	DetectedTampering bool                  `json:"detected_tampering"`
	Errors            []service.VerifyError `json:"errors"`
}

// verify checks a passport (spec §7.3). A document that is not a valid
// passport is still a 200 with valid false and the reasons; only a request
// that is not a verify request at all is a problem.
func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	var req verifyRequest
	if err := decodeObject(r.Body, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	switch k := jsonKind(req.Certificate); k {
	case "object":
	case "nothing", "null":
		s.fail(w, r, errorf(ptInvalid, "field certificate is required"))
		return
	default:
		s.fail(w, r, errorf(ptWrongType, "field certificate must be a JSON object, not a JSON %s", k))
		return
	}
	var agent string
	switch k := jsonKind(req.AgentID); k {
	case "string":
		if err := json.Unmarshal(req.AgentID, &agent); err != nil {
			s.fail(w, r, jsonError(err))
			return
		}
		if err := ledger.CheckID("agent_id", agent); err != nil {
			s.fail(w, r, errorf(ptInvalid, "field %s", err))
			return
		}
	case "nothing", "null":
		s.fail(w, r, errorf(ptInvalid, "field agent_id is required"))
		return
	default:
		s.fail(w, r, errorf(ptWrongType, "field agent_id must be a JSON string, not a JSON %s", k))
		return
	}
	v, err := s.svc.Verify(r.Context(), req.Certificate, agent)
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
	resp := verifyResponse{
		Valid:             v.Valid,
		SignatureValid:    v.SignatureValid,
		ScoreValid:        v.ScoreValid,
		DetectedTampering: v.DetectedTampering,
		Errors:            v.Errors,
	}
	if !v.ExpiresAt.IsZero() {
		e := rfc3339(v.ExpiresAt)
		resp.ExpiresAt = &e
	}
	if resp.Errors == nil {
		resp.Errors = []service.VerifyError{}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(resp))
}

// score serves the agent's current score: the CLI's --json shape with the
// agent and the entry's times in front.
func (s *Server) score(w http.ResponseWriter, r *http.Request) {
	id, err := agentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := s.svc.Score(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b := make([]byte, 0, 1024)
	b = append(b, `{"agent_id":`...)
	b = strconv.AppendQuote(b, id) // ids are [A-Za-z0-9._:-]: quoting is JSON-exact
	b = append(b, `,"computed_at":"`...)
	b = append(b, rfc3339(e.ComputedAt)...)
	b = append(b, `","expires_at":"`...)
	b = append(b, rfc3339(e.ExpiresAt)...)
	b = append(b, `",`...)
	b = e.Result.AppendJSONFields(b)
	b = append(b, "}\n"...)
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, b)
}

type rejection struct {
	Index  int    `json:"index"`
	Line   int    `json:"line,omitempty"`
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason"`
}

type ingestResponse struct {
	Accepted   int         `json:"accepted"`
	Duplicates int         `json:"duplicates"`
	Superseded int         `json:"superseded"`
	Rejected   []rejection `json:"rejected"`
}

// events ingests a JSON array or NDJSON stream of events for the calling
// operator as one batch (service.UseCases.IngestEvents, the pipeline
// `swarmscore ingest` uses): events that do not parse or that the ledger
// refuses are listed with their index (and line, for NDJSON). A body that
// is not JSON at all, holds too many events, or is too large stores
// nothing.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rep, err := s.svc.IngestEvents(r.Context(), operatorFrom(r), r.Body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := ingestResponse{Accepted: rep.Accepted, Duplicates: rep.Duplicates, Superseded: rep.Superseded,
		Rejected: make([]rejection, len(rep.Rejected))}
	for i, rj := range rep.Rejected {
		resp.Rejected[i] = rejection{Index: rj.Index, Line: rj.Line, ID: rj.ID, Reason: rj.Err.Error()}
	}
	s.metrics.eventsIn.Add(float64(resp.Accepted))
	s.metrics.eventsDup.Add(float64(resp.Duplicates))
	s.metrics.eventsSuperseded.Add(float64(resp.Superseded))
	s.metrics.eventsBad.Add(float64(len(resp.Rejected)))
	writeJSON(w, http.StatusOK, marshal(resp))
}

type escrowRequest struct {
	AmountCents json.RawMessage `json:"amount_cents"`
}

type escrowResponse struct {
	Score         int            `json:"score"`
	Modifier      score.Modifier `json:"escrow_modifier"`
	HoldCents     int64          `json:"hold_cents"`
	ReleasedCents int64          `json:"released_cents"`
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
	e, err := s.svc.Escrow(r.Context(), id, amount)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(escrowResponse{e.Score, e.Modifier, e.HoldCents, e.ReleasedCents}))
}

type rankedAgent struct {
	AgentID        string         `json:"agent_id"`
	Score          int            `json:"score"`
	Tier           score.Tier     `json:"tier"`
	EscrowModifier score.Modifier `json:"escrow_modifier"`
	ConduitTotal   int64          `json:"conduit_sessions_90d"`
	AP2Total       int64          `json:"ap2_sessions_90d"`
	ComputedAt     string         `json:"computed_at"`
	ExpiresAt      string         `json:"expires_at"`
}

type rankingResponse struct {
	Agents     []rankedAgent `json:"agents"`
	NextCursor *string       `json:"next_cursor"`
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
	page, err := s.svc.Ranking(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := rankingResponse{Agents: make([]rankedAgent, 0, len(page.Agents))}
	for _, e := range page.Agents {
		resp.Agents = append(resp.Agents, rankedAgent{
			AgentID:        e.AgentID,
			Score:          e.Result.Score,
			Tier:           e.Result.Tier,
			EscrowModifier: e.Result.Escrow,
			ConduitTotal:   e.Result.Counts.ConduitTotal,
			AP2Total:       e.Result.Counts.AP2Total,
			ComputedAt:     rfc3339(e.ComputedAt),
			ExpiresAt:      rfc3339(e.ExpiresAt),
		})
	}
	if page.Next != nil {
		c := encodeCursor(*page.Next)
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
		case "cursor":
			c, err := decodeCursor(val)
			if err != nil {
				return q, err
			}
			q.After = &c
		default:
			return q, errorf(ptInvalid, "unknown query parameter %q (known: tier, min_score, limit, cursor)", k)
		}
	}
	return q, nil
}

// Cursors are opaque to clients: base64url of "score:agent_id".
func encodeCursor(c ledger.Cursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(c.Score) + ":" + c.AgentID))
}

func decodeCursor(s string) (ledger.Cursor, error) {
	bad := errorf(ptInvalid, "query parameter cursor is not a next_cursor this server returned")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return ledger.Cursor{}, bad
	}
	sc, id, ok := strings.Cut(string(b), ":")
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

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.Ready(r.Context()); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, []byte(`{"status":"ready"}`+"\n"))
}
