package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/signal"
	"github.com/swarmscore/swarmscore/internal/wire"
)

// RightsService lists the use cases of agents' rights (spec §8.4, §11.1;
// service.Rights), with the errors of Services. The use cases decide who
// may do what (service.Caller); the handlers only say who is asking.
type RightsService interface {
	// Disclosure returns a version of the disclosure and disclaimer (the
	// current one for "").
	Disclosure(version string) (service.Disclosure, error)
	// Consent, SetVisibility and RecordConsent read and change an agent's
	// consent and visibility, for the agent itself or an operator.
	Consent(ctx context.Context, c service.Caller, agentID string) (service.ConsentStatus, error)
	SetVisibility(ctx context.Context, c service.Caller, agentID string, v ledger.Visibility) (service.ConsentStatus, error)
	RecordConsent(ctx context.Context, c service.Caller, agentID, version string) (service.ConsentStatus, error)
	// Records returns the events counting in the agent's score as of asOf
	// and its passports, buyer ids masked for the agent's own token.
	Records(ctx context.Context, c service.Caller, agentID string, asOf time.Time) (service.AgentRecords, error)
}

// SignalService lists the use cases of the gaming signals (§8.3, §15.2;
// service.Signals).
type SignalService interface {
	// Signals returns an agent's gaming signals; FlaggedAgents every
	// flagged agent's, set-based; SignalStats the counts of the latest
	// scheduled computation, without blocking.
	Signals(ctx context.Context, c service.Caller, agentID string, asOf time.Time) (service.AgentSignals, error)
	FlaggedAgents(ctx context.Context, asOf time.Time) (service.Flagged, error)
	SignalStats() (service.SignalStats, bool)
}

// rightsRoutes registers the routes of agents' rights and gaming signals.
// Who may call each is in the OpenAPI document (x-access).
func (s *Server) rightsRoutes() {
	s.metrics.reg.MustRegister(newSignalCollector(s.svc.Signals.SignalStats))
	s.route("GET /swarmscore/disclosure", crossOrigin, maxNoBody, s.disclosure)
	s.route("GET /swarmscore/{agent_id}/consent", self, maxNoBody, s.consent)
	s.route("PUT /swarmscore/{agent_id}/consent", self, maxSmallBody, s.recordConsent)
	s.route("PUT /swarmscore/{agent_id}/visibility", self, maxSmallBody, s.visibility)
	s.route("GET /swarmscore/{agent_id}/records", self, maxNoBody, s.records)
	s.route("GET /swarmscore/{agent_id}/signals", self, maxNoBody, s.signals)
	s.route("GET /swarmscore/signals", operator, maxNoBody, s.flagged)
}

type callerKey struct{}

func withCaller(ctx context.Context, c service.Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerFrom is the caller of a route of access self.
func callerFrom(r *http.Request) service.Caller {
	c, _ := r.Context().Value(callerKey{}).(service.Caller)
	return c
}

// caller resolves the request's bearer token, operator's or agent's, to
// whom it speaks for. Without an Authorization header the caller is
// anonymous, unless required; a header that is present must hold a valid
// token (a public route does not quietly ignore a bad one). The lookup is
// throttled as an operator's is (lookup). The token is never logged nor
// echoed.
func (s *Server) caller(r *http.Request, required bool) (service.Caller, error) {
	if !required && r.Header.Get("Authorization") == "" {
		return service.Caller{}, nil
	}
	token, err := bearerToken(r, "<the agent's token or an operator token>")
	if err != nil {
		return service.Caller{}, err
	}
	var c service.Caller
	// A required token is resolved by guard before the handler's
	// database slot is taken; an optional one by a handler, in its slot.
	err = s.lookup(r, required, func(ctx context.Context) (err error) {
		c, err = s.svc.Tokens.CallerFor(ctx, token)
		return err
	})
	return c, err
}

// disclosure serves the disclosure agents consent to and the liability
// disclaimer (§11.1, §11.2): the current version, or ?version=.
func (s *Server) disclosure(w http.ResponseWriter, r *http.Request) {
	v, err := singleParams(r, "version")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d, err := s.svc.Rights.Disclosure(v["version"])
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// A version's text never changes; which version is current may.
	w.Header().Set("Cache-Control", "public, max-age=300")
	writeJSON(w, http.StatusOK, marshal(api.Disclosure{Version: d.Version, Disclosure: d.Disclosure, Disclaimer: d.Disclaimer}))
}

func consentJSON(st *service.ConsentStatus) []byte { return marshal(wire.ConsentStatusOf(st)) }

// consent shows the agent's consent and visibility.
func (s *Server) consent(w http.ResponseWriter, r *http.Request) {
	id, err := agentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	st, err := s.svc.Rights.Consent(r.Context(), callerFrom(r), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, consentJSON(&st))
}

// consentBody and visibilityBody read api.ConsentRequest and
// api.VisibilityRequest, keeping each member's JSON kind.
type (
	consentBody struct {
		DisclosureVersion json.RawMessage `json:"disclosure_version"`
	}
	visibilityBody struct {
		Visibility json.RawMessage `json:"visibility"`
	}
)

// recordConsent records the agent's consent to {"disclosure_version"}
// (the current version when absent).
func (s *Server) recordConsent(w http.ResponseWriter, r *http.Request) {
	id, err := agentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req consentBody
	if err := decodeObject(r.Body, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	version, err := optionalString("disclosure_version", req.DisclosureVersion)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	st, err := s.svc.Rights.RecordConsent(r.Context(), callerFrom(r), id, version)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, consentJSON(&st))
}

// visibility sets the agent's {"visibility": "public" | "unlisted"}.
func (s *Server) visibility(w http.ResponseWriter, r *http.Request) {
	id, err := agentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req visibilityBody
	if err := decodeObject(r.Body, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := optionalString("visibility", req.Visibility)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if v == "" {
		s.fail(w, r, errorf(ptInvalid, `field visibility is required: "public" or "unlisted"`))
		return
	}
	st, err := s.svc.Rights.SetVisibility(r.Context(), callerFrom(r), id, ledger.Visibility(v))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, consentJSON(&st))
}

// optionalString reads a JSON string member; absent or null is "".
func optionalString(field string, raw json.RawMessage) (string, error) {
	switch k := jsonKind(raw); k {
	case "nothing", "null":
		return "", nil
	case "string":
		return jsonString(field, raw)
	default:
		return "", errorf(ptWrongType, "field %s must be a JSON string, not a JSON %s", field, k)
	}
}

// singleParams reads the query string, allowing only the names given, each
// at most once.
func singleParams(r *http.Request, names ...string) (map[string]string, error) {
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, errorf(ptInvalid, "the query string is not valid: %v", err)
	}
	out := make(map[string]string, len(values))
	for k, vals := range values {
		known := false
		for _, n := range names {
			known = known || n == k
		}
		switch {
		case !known && len(names) == 0:
			return nil, errorf(ptInvalid, "unknown query parameter %q (this route takes none)", k)
		case !known:
			return nil, errorf(ptInvalid, "unknown query parameter %q (known: %s)", k, strings.Join(names, ", "))
		case len(vals) > 1:
			return nil, errorf(ptInvalid, "query parameter %s is given %d times", k, len(vals))
		}
		out[k] = vals[0]
	}
	return out, nil
}

// asOfParam reads an optional as_of (RFC 3339); zero when absent.
func asOfParam(v map[string]string) (time.Time, error) {
	s, ok := v["as_of"]
	if !ok {
		return time.Time{}, nil
	}
	t, err := ledger.ParseTime("as_of", s)
	if err != nil {
		return time.Time{}, errorf(ptInvalid, "query parameter %v", err)
	}
	return t, nil
}

// records serves the agent's access to its data: the events counting in
// its score as of ?as_of= (now by default) and the passports issued.
func (s *Server) records(w http.ResponseWriter, r *http.Request) {
	id, err := agentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := singleParams(r, "as_of")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	asOf, err := asOfParam(v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rec, err := s.svc.Rights.Records(r.Context(), callerFrom(r), id, asOf)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(wire.RecordsOf(&rec)))
}

// signals serves one agent's gaming signals, each figure beside its
// threshold, over the window ending at ?as_of= (now by default).
func (s *Server) signals(w http.ResponseWriter, r *http.Request) {
	id, err := agentID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := singleParams(r, "as_of")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	asOf, err := asOfParam(v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	a, err := s.svc.Signals.Signals(r.Context(), callerFrom(r), id, asOf)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(wire.SignalsOf(&a)))
}

// flagged lists the agents with a flagged signal (?flagged=true, the
// default and the only listing: one agent's signals are at
// /swarmscore/{agent_id}/signals), computed set-based.
func (s *Server) flagged(w http.ResponseWriter, r *http.Request) {
	v, err := singleParams(r, "flagged", "as_of")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if f, ok := v["flagged"]; ok && f != "true" {
		s.fail(w, r, errorf(ptInvalid, "query parameter flagged: only true is supported (every agent's signals are at /swarmscore/{agent_id}/signals)"))
		return
	}
	asOf, err := asOfParam(v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, err := s.svc.Signals.FlaggedAgents(r.Context(), asOf)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(wire.FlaggedOf(&list)))
}

// signalCollector exports the counts of the latest scheduled computation
// of the gaming signals and of the latest chain walk (service.SignalStats),
// read at each scrape without touching the database.
type signalCollector struct {
	stats                           func() (service.SignalStats, bool)
	flagged, anyFlagged, agents, at *prometheus.Desc
	walkAt, broken                  *prometheus.Desc
}

func newSignalCollector(stats func() (service.SignalStats, bool)) *signalCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &signalCollector{
		stats:      stats,
		flagged:    d("swarmscore_gaming_flagged_agents", "Agents whose gaming signal is flagged, by signal, at the latest computation (serve --signals-every).", "signal"),
		anyFlagged: d("swarmscore_gaming_flagged_agents_any", "Agents with at least one gaming signal flagged at the latest computation."),
		agents:     d("swarmscore_gaming_evaluated_agents", "Agents with activity in the window at the latest computation of the gaming signals."),
		at:         d("swarmscore_gaming_signals_as_of_timestamp_seconds", "The instant the latest computation of the gaming signals was as of."),
		walkAt:     d("swarmscore_chain_walk_timestamp_seconds", "When this process's latest full walk of the hash chains started (ledger verify, serve --verify-every)."),
		broken:     d("swarmscore_chain_walk_broken_chains", "Chains the latest full walk found broken."),
	}
}

func (c *signalCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.flagged, c.anyFlagged, c.agents, c.at, c.walkAt, c.broken} {
		ch <- d
	}
}

func (c *signalCollector) Collect(ch chan<- prometheus.Metric) {
	st, ok := c.stats()
	if !ok {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if !st.At.IsZero() {
		for _, n := range signal.Names {
			gauge(c.flagged, float64(st.BySignal[n]), n)
		}
		gauge(c.anyFlagged, float64(st.Flagged))
		gauge(c.agents, float64(st.Agents))
		gauge(c.at, float64(st.At.Unix()))
	}
	if !st.WalkAt.IsZero() {
		gauge(c.walkAt, float64(st.WalkAt.Unix()))
		gauge(c.broken, float64(st.BrokenChains))
	}
}
