package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/webhook"
	"github.com/swarmscore/swarmscore/internal/wire"
)

// WebhookService is what the webhook routes call (service.Webhooks).
type WebhookService interface {
	// AddWebhook registers an endpoint for the operator by and returns it
	// with its new secret.
	AddWebhook(ctx context.Context, by, url string, events []string) (webhook.Endpoint, error)
	// Webhook returns an endpoint (ErrNotFound).
	Webhook(ctx context.Context, id string) (webhook.Endpoint, error)
	// Webhooks lists the endpoints.
	Webhooks(ctx context.Context) ([]webhook.Endpoint, error)
	// RemoveWebhook deletes an endpoint (ErrNotFound).
	RemoveWebhook(ctx context.Context, id string) error
	// Deliveries returns an endpoint's messages, newest first.
	Deliveries(ctx context.Context, id string, limit int) ([]webhook.Message, error)
	// Backlog counts the outbox's pending messages.
	Backlog(ctx context.Context) (int64, error)
}

// defaultDeliveriesPage is the page of GET .../deliveries without ?limit=.
const defaultDeliveriesPage = 50

func (s *Server) webhookRoutes() {
	if s.svc.Webhooks == nil {
		return
	}
	s.metrics.reg.MustRegister(&backlogCollector{scrape: s.scrapeBacklog,
		desc: prometheus.NewDesc("swarmscore_webhook_backlog", "Webhook messages in the outbox still pending delivery.", nil, nil)})
	s.route("POST /swarmscore/webhooks", operator, maxSmallBody, s.addWebhook)
	s.route("GET /swarmscore/webhooks", operator, maxNoBody, s.listWebhooks)
	// GET /swarmscore/webhooks/{id} is served through items
	// (correctionRoutes), as GET /swarmscore/appeals/{id} is.
	s.route("DELETE /swarmscore/webhooks/{id}", operator, maxNoBody, s.deleteWebhook)
	s.route("GET /swarmscore/webhooks/{id}/deliveries", operator, maxNoBody, s.webhookDeliveries)
}

// scrapeBacklog reads the outbox's backlog for a scrape as a request would:
// in a database slot within --db-timeout, and not during a confirmed
// outage.
func (s *Server) scrapeBacklog(ctx context.Context) (int64, error) {
	if s.health.down() {
		return 0, errkind.ErrUnavailable
	}
	ctx, done, err := s.gate.enter(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	return s.svc.Webhooks.Backlog(ctx)
}

// backlogCollector is the outbox gauge, read at each scrape; a scrape the
// database cannot answer leaves it out rather than report 0.
type backlogCollector struct {
	scrape func(context.Context) (int64, error)
	desc   *prometheus.Desc
}

func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	n, err := c.scrape(context.Background())
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n))
}

// addWebhook registers {"url","events"} and answers 201 with the secret,
// shown this once.
func (s *Server) addWebhook(w http.ResponseWriter, r *http.Request) {
	var req api.WebhookRequest
	if err := decodeObject(r.Body, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := s.svc.Webhooks.AddWebhook(r.Context(), operatorFrom(r), req.URL, req.Events)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := wire.WebhookOf(e)
	out.Secret = e.Secret.Reveal()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", "/swarmscore/webhooks/"+e.ID)
	writeJSON(w, http.StatusCreated, marshal(out))
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) {
	if _, err := singleParams(r); err != nil {
		s.fail(w, r, err)
		return
	}
	list, err := s.svc.Webhooks.Webhooks(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := api.Webhooks{Webhooks: make([]api.Webhook, 0, len(list))}
	for _, e := range list {
		out.Webhooks = append(out.Webhooks, wire.WebhookOf(e))
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(out))
}

// webhookID reads {id}: an endpoint id is "ep_" and base32, never more
// than a few dozen characters.
func webhookID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if id == "" {
		id = r.PathValue("item") // through items
	}
	if len(id) == 0 || len(id) > 64 {
		return "", errorf(ptNotFound, "no webhook with id %q", id)
	}
	return id, nil
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) {
	id, err := webhookID(r)
	if err == nil {
		_, err = singleParams(r)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := s.svc.Webhooks.Webhook(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(wire.WebhookOf(e)))
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	id, err := webhookID(r)
	if err == nil {
		_, err = singleParams(r)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.svc.Webhooks.RemoveWebhook(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// webhookDeliveries serves an endpoint's messages, newest first, with
// ?limit= (1 to service.MaxDeliveriesPage, default 50).
func (s *Server) webhookDeliveries(w http.ResponseWriter, r *http.Request) {
	id, err := webhookID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := singleParams(r, "limit")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	limit := defaultDeliveriesPage
	if v, ok := p["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > service.MaxDeliveriesPage {
			s.fail(w, r, errorf(ptInvalid, "limit must be a whole number from 1 to %d", service.MaxDeliveriesPage))
			return
		}
		limit = n
	}
	ms, err := s.svc.Webhooks.Deliveries(r.Context(), id, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(wire.WebhookDeliveriesOf(ms)))
}
