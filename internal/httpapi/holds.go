package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"net/url"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/wire"
)

// HoldService is what the escrow hold routes and their gauges call
// (service.Holds).
type HoldService interface {
	// CreateHold places a hold priced by the provider's current passport;
	// created is false for a repeat of a stored hold's request.
	CreateHold(ctx context.Context, c service.Caller, in service.HoldInput) (h ledger.Hold, created bool, err error)
	// ChangeHold releases, disputes, resolves or cancels a hold.
	ChangeHold(ctx context.Context, c service.Caller, id string, a service.HoldAction) (ledger.Hold, error)
	// Hold returns one hold; Holds lists them, oldest first.
	Hold(ctx context.Context, id string) (ledger.Hold, error)
	Holds(ctx context.Context, q service.HoldQuery) ([]ledger.Hold, error)
	// HoldStats counts holds by state and what is held, for /metrics.
	HoldStats(ctx context.Context) (service.HoldStats, error)
}

// The members of a new hold and of a change of one.
var (
	holdFields       = []string{"transaction_id", "provider_id", "buyer_id", "amount_cents", "currency"}
	holdChangeFields = map[ledger.HoldAction][]string{
		ledger.HoldRelease: {"fee_cents"},
		ledger.HoldDispute: {"reason"},
		ledger.HoldResolve: {"outcome", "reason", "fee_cents"},
		ledger.HoldCancel:  {"reason"},
	}
)

// holdRoutes registers the escrow hold routes and their gauges; nothing
// when the deployment has no holds service.
func (s *Server) holdRoutes() {
	if s.svc.Holds == nil {
		return
	}
	s.metrics.reg.MustRegister(newHoldCollector(s.scrapeHolds))
	s.route("POST /swarmscore/escrow/holds", operator, maxSmallBody, s.createHold)
	s.route("GET /swarmscore/escrow/holds", operator, maxNoBody, s.listHolds)
	s.route("GET /swarmscore/escrow/holds/{transaction_id}", operator, maxNoBody, s.showHold)
	for _, a := range []ledger.HoldAction{ledger.HoldRelease, ledger.HoldDispute, ledger.HoldResolve, ledger.HoldCancel} {
		s.route("POST /swarmscore/escrow/holds/{transaction_id}/"+string(a), operator, maxSmallBody, s.changeHold(a))
	}
}

// scrapeHolds reads the hold figures for a scrape as a request would: in a
// database slot within --db-timeout, and not during a confirmed outage.
func (s *Server) scrapeHolds(ctx context.Context) (service.HoldStats, error) {
	if s.health.down() {
		return service.HoldStats{}, errkind.ErrUnavailable
	}
	ctx, done, err := s.gate.enter(ctx)
	if err != nil {
		return service.HoldStats{}, err
	}
	defer done()
	return s.svc.Holds.HoldStats(ctx)
}

// createHold places a hold: 201 with the hold, 200 with the stored one for
// a repeat of its request.
func (s *Server) createHold(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	m, err := readMembers(body, "", holdFields)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var in service.HoldInput
	for name, dst := range map[string]*string{"transaction_id": &in.TransactionID, "provider_id": &in.ProviderID, "buyer_id": &in.BuyerID, "currency": &in.Currency} {
		if *dst, err = stringMember(m, "", name); err != nil {
			s.fail(w, r, err)
			return
		}
		if *dst == "" {
			s.fail(w, r, errorf(ptInvalid, "field %s is required", name))
			return
		}
	}
	if in.AmountCents, err = parseCents("amount_cents", m["amount_cents"], ledger.MaxEscrowCents); err != nil {
		s.fail(w, r, err)
		return
	}
	h, created, err := s.svc.Holds.CreateHold(r.Context(), callerFrom(r), in)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	hd.Set("Location", "/swarmscore/escrow/holds/"+url.PathEscape(h.TransactionID))
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, marshal(wire.HoldOf(&h)))
}

// changeHold is the route of action a: 200 with the hold as it is after.
// An empty body is an empty object.
func (s *Server) changeHold(a ledger.HoldAction) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if len(bytes.TrimSpace(body)) == 0 {
			body = []byte("{}")
		}
		m, err := readMembers(body, "", holdChangeFields[a])
		if err != nil {
			s.fail(w, r, err)
			return
		}
		req := service.HoldAction{Action: a}
		if raw, ok := m["fee_cents"]; ok && jsonKind(raw) != "null" {
			if req.FeeCents, err = parseCents("fee_cents", raw, ledger.MaxEscrowCents); err != nil {
				s.fail(w, r, err)
				return
			}
			req.HasFee = true
		}
		if req.Reason, err = stringMember(m, "", "reason"); err != nil {
			s.fail(w, r, err)
			return
		}
		if a == ledger.HoldResolve {
			outcome, err := stringMember(m, "", "outcome")
			if err != nil {
				s.fail(w, r, err)
				return
			}
			if outcome != string(ledger.HoldSettled) && outcome != string(ledger.HoldRefunded) {
				s.fail(w, r, errorf(ptInvalid, "field outcome must be \"settled\" or \"refunded\""))
				return
			}
			req.Outcome = ledger.HoldState(outcome)
		}
		h, err := s.svc.Holds.ChangeHold(r.Context(), callerFrom(r), r.PathValue("transaction_id"), req)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, marshal(wire.HoldOf(&h)))
	}
}

// listHolds lists holds by state and provider_id, oldest first.
func (s *Server) listHolds(w http.ResponseWriter, r *http.Request) {
	p, err := singleParams(r, "state", "provider_id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := service.HoldQuery{State: ledger.HoldState(p["state"]), ProviderID: p["provider_id"]}
	list, err := s.svc.Holds.Holds(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(wire.HoldsOf(list)))
}

// showHold serves one hold.
func (s *Server) showHold(w http.ResponseWriter, r *http.Request) {
	h, err := s.svc.Holds.Hold(r.Context(), r.PathValue("transaction_id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(wire.HoldOf(&h)))
}

// holdCollector is the hold gauges, read at each scrape.
type holdCollector struct {
	stats         func(context.Context) (service.HoldStats, error)
	held, byState *prometheus.Desc
}

func newHoldCollector(stats func(context.Context) (service.HoldStats, error)) *holdCollector {
	return &holdCollector{
		stats: stats,
		held:  prometheus.NewDesc("swarmscore_escrow_held_cents", "Cents held in escrow by open holds (held and disputed).", nil, nil),
		byState: prometheus.NewDesc("swarmscore_escrow_holds", "Escrow holds (spec §5) by state.",
			[]string{"state"}, nil),
	}
}

func (c *holdCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.held
	ch <- c.byState
}

func (c *holdCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.stats(context.Background())
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(st.HeldCents))
	for state, n := range st.ByState {
		ch <- prometheus.MustNewConstMetric(c.byState, prometheus.GaugeValue, float64(n), string(state))
	}
}
