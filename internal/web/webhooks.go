package web

import (
	"context"
	"net/http"
	"time"

	"github.com/swarmscore/swarmscore/internal/webhook"
)

// WebhooksService is what the webhooks page reads (service.Webhooks).
type WebhooksService interface {
	// Webhooks lists the endpoints, oldest first.
	Webhooks(ctx context.Context) ([]webhook.Endpoint, error)
	// Deliveries returns an endpoint's messages, newest first, with their
	// attempts (ErrNotFound for an unknown endpoint).
	Deliveries(ctx context.Context, id string, limit int) ([]webhook.Message, error)
}

// webhookDeliveriesShown is how many of each endpoint's latest messages
// the page shows.
const webhookDeliveriesShown = 20

type webhooksView struct {
	Endpoints []endpointView
	AsOf      time.Time
}

type endpointView struct {
	webhook.Endpoint
	Deliveries []webhook.Message
	// Counts are the shown messages by state.
	Pending, Delivered, Failed int
}

// loadWebhooks is every endpoint with its latest deliveries and their
// attempts: what was sent, what the receiver answered, what waits for a
// retry and what failed for good.
func (p *Pages) loadWebhooks(r *http.Request, _ session) (any, error) {
	v := webhooksView{AsOf: p.now()}
	if p.svc.Webhooks == nil {
		return v, nil
	}
	eps, err := p.svc.Webhooks.Webhooks(r.Context())
	if err != nil {
		return nil, err
	}
	for _, e := range eps {
		ms, err := p.svc.Webhooks.Deliveries(r.Context(), e.ID, webhookDeliveriesShown)
		if err != nil {
			return nil, err
		}
		ev := endpointView{Endpoint: e, Deliveries: ms}
		for _, m := range ms {
			switch m.State {
			case webhook.Pending:
				ev.Pending++
			case webhook.Delivered:
				ev.Delivered++
			case webhook.Failed:
				ev.Failed++
			}
		}
		v.Endpoints = append(v.Endpoints, ev)
	}
	return v, nil
}
