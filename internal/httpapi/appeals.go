package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/wire"
)

// The members of an appeal's filing (api.AppealFiling), of a disputed
// event (api.EventKey) and of an action on an appeal (api.AppealAction:
// corrections only for an uphold).
var (
	filingFields       = []string{"agent_passport_id", "grounds", "statement", "events"}
	eventKeyFields     = []string{"event_type", "event_id"}
	appealActionFields = []string{"reason", "corrections"}
)

// fileAppeal files an appeal, by the agent's own token or an operator on
// its behalf: 201 with the appeal.
func (s *Server) fileAppeal(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	m, err := readMembers(body, "", filingFields)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var f service.AppealFiling
	var grounds string
	for name, dst := range map[string]*string{"agent_passport_id": &f.PassportID, "grounds": &grounds, "statement": &f.Statement} {
		if *dst, err = stringMember(m, "", name); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	f.Grounds = appeal.Grounds(grounds)
	if f.Events, err = eventKeys(m["events"]); err != nil {
		s.fail(w, r, err)
		return
	}
	a, err := s.svc.Corrections.FileAppeal(r.Context(), callerFrom(r), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Location", "/swarmscore/appeals/"+a.ID)
	writeJSON(w, http.StatusCreated, marshal(wire.AppealOf(&a)))
}

// eventKeys reads the events member: an array of {"event_type","event_id"}.
func eventKeys(raw json.RawMessage) ([]ledger.EventKey, error) {
	switch k := jsonKind(raw); k {
	case "array":
	case "nothing", "null":
		return nil, nil
	default:
		return nil, errorf(ptWrongType, "field events must be a JSON array, not a JSON %s", k)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, jsonError(err)
	}
	out := make([]ledger.EventKey, len(items))
	for i, it := range items {
		where := "events[" + itoa(int64(i)) + "]."
		m, err := readMembers(it, where, eventKeyFields)
		if err != nil {
			return nil, err
		}
		typ, err := stringMember(m, where, "event_type")
		if err != nil {
			return nil, err
		}
		id, err := stringMember(m, where, "event_id")
		if err != nil {
			return nil, err
		}
		out[i] = ledger.EventKey{Type: ledger.Type(typ), ID: id}
	}
	return out, nil
}

// listAppeals lists appeals: state filters by state, overdue=true keeps
// those past a deadline; overdue ones come first.
func (s *Server) listAppeals(w http.ResponseWriter, r *http.Request) {
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		s.fail(w, r, errorf(ptInvalid, "the query string is not valid: %v", err))
		return
	}
	var q service.AppealQuery
	for k, vals := range values {
		if len(vals) > 1 {
			s.fail(w, r, errorf(ptInvalid, "query parameter %s is given %d times", k, len(vals)))
			return
		}
		switch v := vals[0]; k {
		case "state":
			q.State = appeal.State(v)
		case "overdue":
			switch v {
			case "true":
				q.Overdue = true
			case "false", "":
			default:
				s.fail(w, r, errorf(ptInvalid, "query parameter overdue: %q is not true or false", v))
				return
			}
		default:
			s.fail(w, r, errorf(ptInvalid, "unknown query parameter %q (known: state, overdue)", k))
			return
		}
	}
	list, err := s.svc.Corrections.Appeals(r.Context(), callerFrom(r), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(wire.AppealsOf(list)))
}

// showAppeal serves one appeal (GET /swarmscore/appeals/{id}, through
// items).
func (s *Server) showAppeal(w http.ResponseWriter, r *http.Request) {
	a, err := s.svc.Corrections.Appeal(r.Context(), callerFrom(r), r.PathValue("item"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(wire.AppealOf(&a)))
}

// appealAction handles POST /swarmscore/appeals/{id}/<act>: a body with
// "reason" (required to uphold or reject; ack and escalate take it as a
// note, or no body at all) and, for an uphold, "corrections" in the shape
// of POST /swarmscore/corrections (reason defaults to the decision's,
// appeal_id to this appeal). It answers with the appeal after the action.
func (s *Server) appealAction(act appeal.Action) http.HandlerFunc {
	known := appealActionFields[:1]
	if act == appeal.Uphold {
		known = appealActionFields
	}
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		d := service.AppealDecision{Action: act}
		if len(body) > 0 || act == appeal.Uphold || act == appeal.Reject {
			m, err := readMembers(body, "", known)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			if d.Reason, err = stringMember(m, "", "reason"); err != nil {
				s.fail(w, r, err)
				return
			}
			if d.Corrections, err = corrections(m["corrections"]); err != nil {
				s.fail(w, r, err)
				return
			}
		}
		a, _, err := s.svc.Corrections.ActOnAppeal(r.Context(), r.PathValue("id"), appealCaller(r), d)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, marshal(wire.AppealOf(&a)))
	}
}

// appealCaller is who acts on an appeal: the caller of an appellant route
// (escalate), or the operator of an operator route (ack, uphold, reject).
func appealCaller(r *http.Request) service.Caller { return callerFrom(r) }

// corrections reads an uphold's corrections member.
func corrections(raw json.RawMessage) ([]ledger.CorrectionRequest, error) {
	switch k := jsonKind(raw); k {
	case "array":
	case "nothing", "null":
		return nil, nil
	default:
		return nil, errorf(ptWrongType, "field corrections must be a JSON array, not a JSON %s", k)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, jsonError(err)
	}
	if len(items) > maxUpholdCorrections {
		return nil, errorf(ptInvalid, "field corrections holds %d corrections; an uphold applies at most %d", len(items), maxUpholdCorrections)
	}
	out := make([]ledger.CorrectionRequest, len(items))
	for i, it := range items {
		c, err := parseCorrection(it, "corrections["+itoa(int64(i))+"].")
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// appealCollector exports the appeals by state and the overdue ones by
// duty, counted at each scrape (appeals are few: a scrape reads them all).
// When the database cannot answer (stats fails: a confirmed outage, no
// free slot, or --db-timeout passed) the series are left out of that
// scrape rather than reported as zero.
type appealCollector struct {
	stats            func(context.Context) (service.AppealStats, error)
	byState, overdue *prometheus.Desc
}

func newAppealCollector(stats func(context.Context) (service.AppealStats, error)) *appealCollector {
	return &appealCollector{
		stats:   stats,
		byState: prometheus.NewDesc("swarmscore_appeals", "Appeals (spec §11.3) by state.", []string{"state"}, nil),
		overdue: prometheus.NewDesc("swarmscore_appeals_overdue",
			"Appeals past the deadline of the duty they wait on: acknowledge (7 days), decide (21 days) or re-issue (7 days after an uphold).",
			[]string{"duty"}, nil),
	}
}

func (c *appealCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.byState
	ch <- c.overdue
}

func (c *appealCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.stats(context.Background())
	if err != nil {
		return
	}
	for state, n := range st.ByState {
		ch <- prometheus.MustNewConstMetric(c.byState, prometheus.GaugeValue, float64(n), string(state))
	}
	for duty, n := range st.Overdue {
		ch <- prometheus.MustNewConstMetric(c.overdue, prometheus.GaugeValue, float64(n), duty)
	}
}
