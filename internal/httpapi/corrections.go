package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/wire"
)

// CorrectionsService lists the use cases of corrections and appeals (spec
// §11.3; service.Corrections), with the errors of Services.
type CorrectionsService interface {
	// Correct records a correction made by req.By and re-issues the
	// affected passports in its transaction; created is false for a
	// repeat, which returns the first.
	Correct(ctx context.Context, req ledger.CorrectionRequest) (c ledger.Correction, created bool, err error)
	// FileAppeal files an appeal, by the agent's own token or an operator
	// on its behalf; another agent's passport is not found.
	FileAppeal(ctx context.Context, c service.Caller, f service.AppealFiling) (service.AppealStatus, error)
	// Appeal returns one appeal as of now; another agent's is not found.
	Appeal(ctx context.Context, c service.Caller, id string) (service.AppealStatus, error)
	// Appeals lists appeals as of now, overdue first: an agent's token
	// gets only its own.
	Appeals(ctx context.Context, c service.Caller, q service.AppealQuery) ([]service.AppealStatus, error)
	// ActOnAppeal acks, upholds (applying corrections), rejects or
	// escalates an appeal; an agent's token may only escalate its own.
	ActOnAppeal(ctx context.Context, id string, c service.Caller, d service.AppealDecision) (service.AppealStatus, []ledger.Correction, error)
	// AppealStats counts appeals by state and overdue duty, for /metrics.
	AppealStats(ctx context.Context) (service.AppealStats, error)
}

// CheckpointService publishes signed checkpoints (spec §8.3;
// service.Audit).
type CheckpointService interface {
	// PublishedCheckpoint returns a checkpoint's document as stored (the
	// latest for 0).
	PublishedCheckpoint(ctx context.Context, number int64) ([]byte, error)
}

// Body limits of these routes: a correction's reason is at most 1,000
// bytes and an appeal's statement or decision 4,000, each up to six times
// that once JSON-escaped; an uphold carries up to maxUpholdCorrections
// corrections.
const (
	maxCorrectionBody    = 16 << 10
	maxAppealBody        = 64 << 10
	maxUpholdCorrections = 100
)

// scrapeAppeals reads the appeal figures for a scrape as a request would,
// in a database slot within --db-timeout, and not at all during a
// confirmed outage: a scrape must not hang on a database that requests
// already know is gone, nor take a slot a request could not.
func (s *Server) scrapeAppeals(ctx context.Context) (service.AppealStats, error) {
	if s.health.down() {
		return service.AppealStats{}, errkind.ErrUnavailable
	}
	ctx, done, err := s.gate.enter(ctx)
	if err != nil {
		return service.AppealStats{}, err
	}
	defer done()
	return s.svc.Corrections.AppealStats(ctx)
}

// correctionRoutes registers the routes of corrections, appeals and
// checkpoints.
func (s *Server) correctionRoutes() {
	s.metrics.reg.MustRegister(newAppealCollector(s.scrapeAppeals))
	s.route("POST /swarmscore/corrections", operator, maxCorrectionBody, s.correct)
	s.route("POST /swarmscore/appeals", appellant, maxAppealBody, s.fileAppeal)
	s.route("GET /swarmscore/appeals", appellant, maxNoBody, s.listAppeals)
	s.route("POST /swarmscore/appeals/{id}/ack", operator, maxAppealBody, s.appealAction(appeal.Ack))
	s.route("POST /swarmscore/appeals/{id}/uphold", operator, maxAppealBody, s.appealAction(appeal.Uphold))
	s.route("POST /swarmscore/appeals/{id}/reject", operator, maxAppealBody, s.appealAction(appeal.Reject))
	s.route("POST /swarmscore/appeals/{id}/escalate", appellant, maxAppealBody, s.appealAction(appeal.Escalate))
	s.route("GET /swarmscore/checkpoints/latest", crossOrigin, maxNoBody, s.checkpoint)
	s.logRoutes()
	items := map[string]http.HandlerFunc{
		"appeals":     s.guard("GET /swarmscore/appeals/{id}", appellant, maxNoBody, s.showAppeal),
		"checkpoints": s.guard("GET /swarmscore/checkpoints/{number}", crossOrigin, maxNoBody, s.checkpoint),
	}
	if s.svc.Webhooks != nil {
		items["webhooks"] = s.guard("GET /swarmscore/webhooks/{id}", operator, maxNoBody, s.getWebhook)
	}
	s.items(items)
}

// items serves GET /swarmscore/{collection}/{item} for the collections in
// byCollection. ServeMux cannot hold GET /swarmscore/appeals/{id} beside
// GET /swarmscore/{agent_id}/certificate: both match
// /swarmscore/appeals/certificate and neither is more specific, so it
// refuses the second. This pattern is less specific than both, so the
// certificate route keeps every path it had (/swarmscore/appeals/certificate
// is the certificate of agent "appeals"), and these routes get the rest.
// Handlers read the segment as PathValue("item").
func (s *Server) items(byCollection map[string]http.HandlerFunc) {
	const pattern = "GET /swarmscore/{collection}/{item}"
	s.classify.HandleFunc(pattern, func(http.ResponseWriter, *http.Request) {})
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if h, ok := byCollection[r.PathValue("collection")]; ok {
			h(w, r)
			return
		}
		s.fail(w, r, errorf(ptNoRoute, "no route for %s %s; see /openapi.json", r.Method, r.URL.Path))
	})
}

// correctionFields are the members of a correction object.
var correctionFields = []string{"event_type", "event_id", "action", "status", "agent_id", "reason", "appeal_id"}

// correct records a correction (or a chargeback) for the calling operator:
// 201 with the stored correction, 200 with the first one for a repeat.
func (s *Server) correct(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	req, err := parseCorrection(body, "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	req.By = operatorFrom(r)
	c, created, err := s.svc.Corrections.Correct(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, marshal(wire.CorrectionOf(&c)))
}

// parseCorrection reads one correction object strictly; where prefixes
// field names in messages ("corrections[2].").
func parseCorrection(data []byte, where string) (ledger.CorrectionRequest, error) {
	m, err := readMembers(data, where, correctionFields)
	if err != nil {
		return ledger.CorrectionRequest{}, err
	}
	var f [7]string
	for i, name := range correctionFields {
		if f[i], err = stringMember(m, where, name); err != nil {
			return ledger.CorrectionRequest{}, err
		}
	}
	return ledger.CorrectionRequest{EventType: ledger.Type(f[0]), EventID: f[1], Action: ledger.CorrectionAction(f[2]),
		Status: ledger.Status(f[3]), AgentID: f[4], Reason: f[5], AppealID: f[6]}, nil
}

// readBody reads a whole request body, within the route's limit.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	var mb *http.MaxBytesError
	if err != nil && !errors.As(err, &mb) {
		return nil, fmt.Errorf("reading the request body: %w", err)
	}
	return b, err
}

// readMembers reads data as exactly one JSON object and returns its
// members, refusing (invalid-request, naming it) a member not in known or
// given twice: encoding/json keeps the last of duplicates silently, and
// the two readings of such a correction would differ. where prefixes
// member names in messages.
func readMembers(data []byte, where string, known []string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		what := "the request body"
		if where != "" {
			what = where[:len(where)-1]
		}
		return nil, errorf(ptWrongType, "%s must be a JSON object", what)
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonError(err)
		}
		name := tok.(string) // an object's keys are strings, or Token fails
		if !slices.Contains(known, name) {
			return nil, errorf(ptInvalid, "unknown field %q", where+name)
		}
		if _, dup := m[name]; dup {
			return nil, errorf(ptInvalid, "field %s%s is given twice", where, name)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, jsonError(err)
		}
		m[name] = raw
	}
	if _, err := dec.Token(); err != nil { // the '}'
		return nil, jsonError(err)
	}
	if where == "" {
		if _, err := dec.Token(); err != io.EOF {
			return nil, errorf(ptMalformedJSON, "unexpected data after the JSON object")
		}
	}
	return m, nil
}

// stringMember returns member name of m as a string: "" when absent or
// null, wrong-type for any other JSON value.
func stringMember(m map[string]json.RawMessage, where, name string) (string, error) {
	raw, ok := m[name]
	if !ok {
		return "", nil
	}
	switch k := jsonKind(raw); k {
	case "null":
		return "", nil
	case "string":
	default:
		return "", errorf(ptWrongType, "field %s%s must be a JSON string, not a JSON %s", where, name, k)
	}
	return jsonString(where+name, raw)
}

// jsonString decodes raw, a JSON string, for field. It refuses (400
// invalid-request) bytes that are not UTF-8 and an escaped UTF-16
// surrogate that is not half of a pair ("\ud800"): encoding/json would
// replace either with U+FFFD, and a reason or a statement would be stored
// other than as written.
func jsonString(field string, raw json.RawMessage) (string, error) {
	if !utf8.Valid(raw) {
		return "", errorf(ptInvalid, "field %s is not valid UTF-8", field)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", jsonError(err)
	}
	if strings.ContainsRune(s, utf8.RuneError) && hasLoneSurrogate(raw) {
		return "", errorf(ptInvalid, "field %s holds an escaped UTF-16 surrogate that is not half of a pair", field)
	}
	return s, nil
}

// hasLoneSurrogate reports whether the JSON string raw (valid, quotes
// included) has a \uXXXX escape of a surrogate that is not a high one
// followed by a low one.
func hasLoneSurrogate(raw []byte) bool {
	escaped := func(i int) (rune, bool) { // the \uXXXX at raw[i:], if any
		if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		r, ok := escaped(i)
		if !ok {
			i++ // a two-character escape such as \\ or \"
			continue
		}
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return true
		case r >= 0xd800 && r <= 0xdbff:
			if lo, ok := escaped(i + 6); !ok || lo < 0xdc00 || lo > 0xdfff {
				return true
			}
			i += 6
		}
		i += 5
	}
	return false
}
