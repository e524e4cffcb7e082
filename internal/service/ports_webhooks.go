package service

import (
	"context"
	"time"

	"github.com/swarmscore/swarmscore/internal/store"
	"github.com/swarmscore/swarmscore/internal/webhook"
)

// WebhookStore holds the webhook endpoints and reads their deliveries.
// The messages themselves are written by the back ends in the
// transactions of the changes they announce (score refreshes, passports,
// appeals, escrow holds), never through a port.
type WebhookStore interface {
	// CreateWebhook stores a new endpoint. Errors: ErrConflict for an id
	// in use; ErrInvalid for a malformed operator; ErrUnavailable.
	CreateWebhook(ctx context.Context, e webhook.Endpoint) error
	// Webhook returns an endpoint that was not deleted. Errors:
	// ErrNotFound; ErrUnavailable.
	Webhook(ctx context.Context, id string) (webhook.Endpoint, error)
	// Webhooks returns the endpoints not deleted, oldest first.
	Webhooks(ctx context.Context) ([]webhook.Endpoint, error)
	// DeleteWebhook marks the endpoint deleted as of at and cancels its
	// pending messages. Errors: ErrNotFound (unknown or already deleted);
	// ErrUnavailable.
	DeleteWebhook(ctx context.Context, id string, at time.Time) error
	// WebhookDeliveries returns the endpoint's messages (a deleted
	// endpoint's too), newest first, at most limit, each with its attempts.
	// Errors: ErrNotFound for an id never used; ErrUnavailable.
	WebhookDeliveries(ctx context.Context, endpointID string, limit int) ([]webhook.Message, error)
	// WebhookBacklog counts the pending messages. Errors: ErrUnavailable.
	WebhookBacklog(ctx context.Context) (int64, error)
}

// WebhookOutbox is what a dispatcher delivers from. Several dispatchers,
// in one process or in several sharing a database, may use it at once:
// a message is claimed by one of them at a time.
type WebhookOutbox interface {
	// ClaimWebhookMessages takes up to limit pending messages of
	// endpoints not deleted that are due at now, oldest first, and moves
	// their next attempt to leaseUntil, so that no other claim takes them
	// before then (a dispatcher that dies mid-attempt leaves its messages
	// to be claimed again when the lease ends: at least once).
	ClaimWebhookMessages(ctx context.Context, now, leaseUntil time.Time, limit int) ([]webhook.Claimed, error)
	// RecordWebhookAttempt records an attempt of a claimed message and
	// the state it leaves the message in; recorded is false, and nothing
	// is written, when the message is no longer pending with
	// r.Attempt.N-1 attempts (another dispatcher recorded one since the
	// claim). Errors: ErrInvalid for a state other than pending,
	// delivered or failed; ErrUnavailable.
	RecordWebhookAttempt(ctx context.Context, r webhook.Result) (recorded bool, err error)
	// WebhookBacklog counts the pending messages. Errors: ErrUnavailable.
	WebhookBacklog(ctx context.Context) (int64, error)
}

// MaxDeliveriesPage bounds one read of an endpoint's deliveries.
const MaxDeliveriesPage = store.MaxDeliveriesPage
