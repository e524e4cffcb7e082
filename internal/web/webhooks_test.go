package web

import (
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/httpapi"
	"github.com/swarmscore/swarmscore/internal/webhook"
)

// TestWebhooksPage: the console shows each endpoint and its messages
// with their attempts, and never the secret.
func TestWebhooksPage(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	s.u.Webhooks.Policy = webhook.URLPolicy{AllowHTTPLoopback: true}
	c := signIn(t, s, "192.0.2.1:1000")
	mustContain(t, s.get("/operator/webhooks", "Cookie", c.String()).page(t, 200), "No webhook endpoint is registered.")
	e, err := s.u.Webhooks.AddWebhook(t.Context(), "admin", "http://127.0.0.1:9/hooks", []string{"score.changed"})
	if err != nil {
		t.Fatal(err)
	}
	// A score that changes writes a message; one attempt fails.
	if _, err := s.u.Certificates.Score(t.Context(), "agent-7"); err != nil {
		t.Fatal(err)
	}
	at := testNow.Add(time.Minute)
	claimed, err := s.store.ClaimWebhookMessages(t.Context(), at, at.Add(time.Minute), 10)
	if err != nil || len(claimed) == 0 {
		t.Fatalf("claimed %d, %v", len(claimed), err)
	}
	if _, err := s.store.RecordWebhookAttempt(t.Context(), webhook.Result{MessageID: claimed[0].ID,
		Attempt: webhook.Attempt{N: 1, At: at, Status: 502, Error: "answered 502"}, State: webhook.Pending, NextAttemptAt: at.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	body := s.get("/operator/webhooks", "Cookie", c.String()).page(t, 200)
	mustContain(t, body, e.ID, "http://127.0.0.1:9/hooks", claimed[0].ID, "<code>score.changed</code>", `<span class="state webhook-pending">pending</span>`,
		"502 <span class=\"text\">(answered 502)</span>", `<a href="/operator/webhooks" aria-current="page"`)
	mustNotContain(t, body, e.Secret.Reveal()[6:])
}
