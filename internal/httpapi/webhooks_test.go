package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/api"
	authz "github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/webhook"
)

// TestWebhookRoutes: an admin registers an endpoint (201, the secret
// shown once), anyone with a read role lists it and reads its deliveries
// without the secret, an operator may not register or delete (403
// forbidden_role), bad URLs and events are 400 with their codes, and
// every change is in the action log.
func TestWebhookRoutes(t *testing.T) {
	h := newRightsHarness(t)
	h.u.Webhooks.Policy = webhook.URLPolicy{AllowHTTPLoopback: true}
	ctx := context.Background()
	op, err := h.u.Tokens.CreateToken(ctx, "op-plain", authz.Operator)
	if err != nil {
		t.Fatal(err)
	}
	post := func(tok, body string) response {
		return h.do("POST", "/swarmscore/webhooks", strings.NewReader(body), "Authorization", "Bearer "+tok, "Content-Type", "application/json")
	}
	body := `{"url":"http://127.0.0.1:9/hooks","events":["score.changed","appeal.updated"]}`
	if r := post(op.Secret, body); r.code != 403 || !strings.Contains(string(r.body), `"code":"forbidden_role"`) {
		t.Fatalf("an operator registers: %d %s", r.code, r.body)
	}
	r := post(h.opTok, body)
	if r.code != 201 {
		t.Fatalf("register: %d %s", r.code, r.body)
	}
	var created api.Webhook
	if err := json.Unmarshal(r.body, &created); err != nil || !strings.HasPrefix(created.Secret, "whsec_") || created.URL != "http://127.0.0.1:9/hooks" ||
		strings.Join(created.Events, ",") != "score.changed,appeal.updated" || created.CreatedBy != "acme" ||
		r.header.Get("Location") != "/swarmscore/webhooks/"+created.ID || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("created %s %v", r.body, r.header)
	}
	for _, target := range []string{"/swarmscore/webhooks", "/swarmscore/webhooks/" + created.ID, "/swarmscore/webhooks/" + created.ID + "/deliveries"} {
		r := h.do("GET", target, nil, bearer(op.Secret)...)
		if r.code != 200 || strings.Contains(string(r.body), created.Secret[6:]) || strings.Contains(string(r.body), `"secret"`) {
			t.Errorf("GET %s: %d %s", target, r.code, r.body)
		}
	}
	if r := h.do("GET", "/swarmscore/webhooks/"+created.ID, nil, bearer(op.Secret)...); !strings.Contains(string(r.body), created.ID) {
		t.Errorf("GET one: %s", r.body)
	}
	// The backlog gauge: nothing pending, then the score.changed of an
	// agent whose first certificate is computed after the registration.
	if m := string(h.do("GET", "/metrics", nil).body); !strings.Contains(m, "swarmscore_webhook_backlog 0\n") {
		t.Errorf("metrics before any message: no swarmscore_webhook_backlog 0")
	}
	var evs []ledger.Event
	for i := range 12 {
		evs = append(evs, ledger.Event{Type: ledger.AP2Transaction, ID: fmt.Sprintf("agent-9-t%d", i), AgentID: "agent-9",
			BuyerID: "buyer-x", Status: ledger.Settled, EscrowAmountCents: 1000, StartedAt: now.Add(-3 * time.Hour), EndedAt: now.Add(-2 * time.Hour)})
	}
	if _, err := h.u.Ingest.Ingest(ctx, "acme", evs); err != nil {
		t.Fatal(err)
	}
	if r := h.do("GET", "/swarmscore/agent-9/certificate", nil); r.code != 200 {
		t.Fatalf("certificate: %d %s", r.code, r.body)
	}
	if m := string(h.do("GET", "/metrics", nil).body); !strings.Contains(m, "swarmscore_webhook_backlog 1\n") {
		t.Errorf("metrics after a score change: no swarmscore_webhook_backlog 1")
	}
	for _, c := range []struct{ body, code string }{
		{`{"url":"http://hooks.example.com/x","events":["score.changed"]}`, webhook.CodeInvalidURL},
		{`{"url":"https://10.0.0.1/x","events":["score.changed"]}`, webhook.CodeInvalidURL},
		{`{"url":"https://93.184.216.34/x","events":["score.moved"]}`, webhook.CodeInvalidEvent},
		{`{"url":"https://93.184.216.34/x","events":[]}`, webhook.CodeInvalidEvent},
	} {
		if r := post(h.opTok, c.body); r.code != 400 || !strings.Contains(string(r.body), `"code":"`+c.code+`"`) {
			t.Errorf("%s: %d %s", c.body, r.code, r.body)
		}
	}
	if r := post(h.opTok, `{"url":"https://93.184.216.34/x","events":["score.changed"],"secret":"mine"}`); r.code != 400 {
		t.Errorf("an unknown member: %d", r.code)
	}
	if r := h.do("GET", "/swarmscore/webhooks/ep_nope/deliveries", nil, bearer(op.Secret)...); r.code != 404 {
		t.Errorf("unknown deliveries: %d", r.code)
	}
	if r := h.do("GET", "/swarmscore/webhooks/"+created.ID+"/deliveries?limit=0", nil, bearer(op.Secret)...); r.code != 400 {
		t.Errorf("limit 0: %d", r.code)
	}
	if r := h.do("DELETE", "/swarmscore/webhooks/"+created.ID, nil, bearer(op.Secret)...); r.code != 403 {
		t.Errorf("an operator deletes: %d", r.code)
	}
	if r := h.do("DELETE", "/swarmscore/webhooks/"+created.ID, nil, bearer(h.opTok)...); r.code != http.StatusNoContent {
		t.Errorf("delete: %d %s", r.code, r.body)
	}
	if r := h.do("GET", "/swarmscore/webhooks/"+created.ID, nil, bearer(h.opTok)...); r.code != 404 {
		t.Errorf("deleted: %d", r.code)
	}
	// The agent called "webhooks" keeps its certificate route.
	if r := h.do("GET", "/swarmscore/webhooks/certificate", nil); r.code != 404 || strings.Contains(string(r.body), "no webhook") {
		t.Errorf("/swarmscore/webhooks/certificate: %d %s", r.code, r.body)
	}
	acts, err := h.u.Console.Actions(ctx, authz.ActionQuery{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var log []string
	for _, a := range acts {
		if strings.HasPrefix(string(a.Kind), "webhook_") || a.Kind == authz.ActDenied {
			log = append(log, string(a.Kind)+" "+string(a.Outcome)+" "+a.Code)
			if strings.Contains(a.Detail+a.Target, created.Secret[6:]) {
				t.Error("the action log holds the secret")
			}
		}
	}
	want := "webhook_delete ok |denied denied forbidden_role|webhook_create failed invalid_webhook_event|webhook_create failed invalid_webhook_event|" +
		"webhook_create failed invalid_webhook_url|webhook_create failed invalid_webhook_url|webhook_create ok |denied denied forbidden_role"
	if got := strings.Join(log, "|"); got != want {
		t.Errorf("action log\n got %s\nwant %s", got, want)
	}
}
