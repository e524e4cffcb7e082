package service

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/webhook"
)

// Webhooks are the use cases of webhook endpoints: registering, listing,
// deleting them and reading their deliveries. Who may call them is the
// edges' business (auth.ManageWebhooks for changes); every change is
// recorded in the action log under the actor in ctx.
type Webhooks struct {
	store   WebhookStore
	clock   clock
	actions *actionLog
	// Policy is where endpoints may point (serve
	// --webhook-allow-http-loopback); set it before use.
	Policy webhook.URLPolicy
	// Resolve looks a host name up at registration; nil means
	// net.DefaultResolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Backlog counts the outbox's messages still pending delivery (not yet
// delivered, failed for good or cancelled): what a dispatcher that keeps
// up holds near zero. Errors: ErrUnavailable.
func (u *Webhooks) Backlog(ctx context.Context) (int64, error) {
	return u.store.WebhookBacklog(ctx)
}

// AddWebhook registers an endpoint for url and events for the operator
// acting (by), with a new secret (to show once: Endpoint.Secret.Reveal),
// and records it in the action log. The
// URL must pass the policy (webhook.URLPolicy.CheckURL) and each address
// its host resolves to now must too (the dispatcher checks again at
// every dial). Errors: ErrInvalid with code invalid_webhook_url or
// invalid_webhook_event (a host that does not resolve is invalid_webhook_url);
// ErrUnavailable.
func (u *Webhooks) AddWebhook(ctx context.Context, by, rawURL string, events []string) (webhook.Endpoint, error) {
	e, err := u.newEndpoint(ctx, by, rawURL, events)
	if err == nil {
		err = u.store.CreateWebhook(ctx, e)
	}
	target := "webhook"
	if e.ID != "" {
		target += " " + e.ID
	}
	u.actions.record(ctx, auth.ActWebhookCreate, "", target, rawURL, err)
	if err != nil {
		return webhook.Endpoint{}, err
	}
	return e, nil
}

func (u *Webhooks) newEndpoint(ctx context.Context, by, rawURL string, events []string) (webhook.Endpoint, error) {
	if err := ledger.CheckID("operator", by); err != nil {
		return webhook.Endpoint{}, err
	}
	ts, err := webhook.ParseEvents(events)
	if err != nil {
		return webhook.Endpoint{}, err
	}
	url, err := u.Policy.CheckURL(rawURL)
	if err != nil {
		return webhook.Endpoint{}, err
	}
	if err := u.checkResolved(ctx, url.Hostname()); err != nil {
		return webhook.Endpoint{}, err
	}
	return webhook.Endpoint{ID: webhook.NewEndpointID(), URL: url.String(), Events: ts, Secret: webhook.NewSecret(),
		CreatedAt: u.clock.now(), CreatedBy: by}, nil
}

// checkResolved refuses a host name any of whose addresses the policy
// refuses. An IP literal was judged by CheckURL.
func (u *Webhooks) checkResolved(ctx context.Context, host string) error {
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	resolve := u.Resolve
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	addrs, err := resolve(ctx, host)
	if err != nil || len(addrs) == 0 {
		return errkind.WithCode(fmt.Errorf("%w: url: the host %q does not resolve", errkind.ErrInvalid, host), webhook.CodeInvalidURL)
	}
	for _, a := range addrs {
		if err := u.Policy.CheckAddr(a); err != nil {
			return errkind.WithCode(fmt.Errorf("%w (the host %q resolves to it)", err, host), webhook.CodeInvalidURL)
		}
	}
	return nil
}

// Webhook returns an endpoint (its secret redacted wherever printed).
// Errors: ErrNotFound; ErrUnavailable.
func (u *Webhooks) Webhook(ctx context.Context, id string) (webhook.Endpoint, error) {
	return u.store.Webhook(ctx, id)
}

// Webhooks lists the endpoints, oldest first. Errors: ErrUnavailable.
func (u *Webhooks) Webhooks(ctx context.Context) ([]webhook.Endpoint, error) {
	return u.store.Webhooks(ctx)
}

// RemoveWebhook deletes an endpoint, cancelling its pending messages, and
// records it in the action log. Errors: ErrNotFound; ErrUnavailable.
func (u *Webhooks) RemoveWebhook(ctx context.Context, id string) error {
	err := u.store.DeleteWebhook(ctx, id, u.clock.now())
	u.actions.record(ctx, auth.ActWebhookDelete, "", "webhook "+id, "", err)
	return err
}

// Deliveries returns an endpoint's messages, newest first, at most limit
// (1 to MaxDeliveriesPage), with their attempts. Errors: ErrInvalid for a
// limit out of range; ErrNotFound; ErrUnavailable.
func (u *Webhooks) Deliveries(ctx context.Context, id string, limit int) ([]webhook.Message, error) {
	if limit < 1 || limit > MaxDeliveriesPage {
		return nil, fmt.Errorf("%w: limit must be from 1 to %d", errkind.ErrInvalid, MaxDeliveriesPage)
	}
	return u.store.WebhookDeliveries(ctx, id, limit)
}
