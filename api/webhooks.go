package api

import (
	"encoding/json"
	"time"
)

// WebhookRequest registers a webhook endpoint (POST /swarmscore/webhooks).
type WebhookRequest struct {
	// URL is where deliveries are posted: https, to a public address.
	URL string `json:"url"`
	// Events are the event types to deliver: score.changed, tier.changed,
	// passport.issued, appeal.updated, hold.updated.
	Events []string `json:"events"`
}

// Webhook is a registered endpoint. Secret is present only in the answer
// that registered it: it is never shown again.
type Webhook struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by"`
	// Secret is "whsec_" and the base64 of the signing key (Standard
	// Webhooks): verify each delivery's webhook-signature with it.
	Secret string `json:"secret,omitempty"`
}

// Webhooks lists the endpoints, oldest first (GET /swarmscore/webhooks).
type Webhooks struct {
	Webhooks []Webhook `json:"webhooks"`
}

// WebhookAttempt is one attempt to deliver a message.
type WebhookAttempt struct {
	N  int       `json:"n"`
	At time.Time `json:"at"`
	// Status is the HTTP status answered; 0 when no answer came.
	Status     int    `json:"status"`
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// WebhookDelivery is one message for an endpoint: what was (or will be)
// delivered and its attempts. ID is the webhook-id header of every
// attempt: receivers de-duplicate by it.
type WebhookDelivery struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	AgentID   string    `json:"agent_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// State is pending, delivered, failed (no attempt succeeded for 24 h)
	// or cancelled (the endpoint was deleted first).
	State         string           `json:"state"`
	Attempts      int              `json:"attempts"`
	NextAttemptAt *time.Time       `json:"next_attempt_at"`
	DeliveredAt   *time.Time       `json:"delivered_at"`
	LastStatus    int              `json:"last_status"`
	LastError     string           `json:"last_error,omitempty"`
	Payload       json.RawMessage  `json:"payload"`
	History       []WebhookAttempt `json:"history"`
}

// WebhookDeliveries is an endpoint's messages, newest first (GET
// /swarmscore/webhooks/{id}/deliveries).
type WebhookDeliveries struct {
	Deliveries []WebhookDelivery `json:"deliveries"`
}
