package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/webhook"
)

// hookReceiver is a real local receiver. While held, it keeps every
// request open without answering (a delivery under way); once released,
// it answers 204.
type hookReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	got     []http.Header
	bodies  []string
	release chan struct{}
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{release: make(chan struct{})}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, req.Header.Clone())
		r.bodies = append(r.bodies, string(body))
		r.mu.Unlock()
		select {
		case <-r.release:
			w.WriteHeader(http.StatusNoContent)
		case <-req.Context().Done():
		}
	}))
	t.Cleanup(func() {
		r.Unhold()
		r.Close()
	})
	return r
}

func (r *hookReceiver) Unhold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.release:
	default:
		close(r.release)
	}
}

func (r *hookReceiver) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// TestWebhooksCrash: `swarmscore webhook add` registers an endpoint; a
// certificate request commits score.changed and passport.issued to the
// outbox; serve is killed with SIGKILL while the receiver holds the
// deliveries open (committed, not delivered); after a restart every
// message is delivered, none lost, and each one the receiver saw twice
// carries the same id, signed per Standard Webhooks.
func TestWebhooksCrash(t *testing.T) {
	backEnds(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		env := []string{"SWARMSCORE_ADMIN_TOKEN=" + adminToken, "SWARMSCORE_SIGNING_KEY=" + signingKey}
		flags := []string{"--webhook-allow-http-loopback", "--webhook-timeout", "2s", "--webhook-retry-base", "100ms"}
		s := startArgs(t, dsn, flags, env...)
		rcv := newHookReceiver(t)

		code, out, errOut := run(t, env, "", "webhook", "add", rcv.URL+"/hooks", "--event", "score.changed,passport.issued",
			"--webhook-allow-http-loopback", "--json", "--db", dsn, "--operator", "ops-team")
		var ep api.Webhook
		if code != 0 || json.Unmarshal([]byte(out), &ep) != nil || !strings.HasPrefix(ep.Secret, "whsec_") {
			t.Fatalf("webhook add: %d %s %s", code, out, errOut)
		}
		secret, err := webhook.ParseSecret(ep.Secret)
		if err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := run(t, env, "", "webhook", "add", "http://"+strings.TrimPrefix(rcv.URL, "http://"), "--event", "score.changed", "--db", dsn); code != 2 ||
			!strings.Contains(errOut, "https") {
			t.Errorf("an http URL without the allowance: %d %s", code, errOut)
		}

		op := s.client(adminToken)
		if res, err := op.IngestEvents(ctx, history("hooked")); err != nil || res.Accepted != 120 {
			t.Fatalf("ingest: %+v %v", res, err)
		}
		if _, err := op.Certificate(ctx, "hooked"); err != nil {
			t.Fatal(err)
		}
		// The dispatcher has the messages in flight; kill it there.
		for deadline := time.Now().Add(20 * time.Second); rcv.requests() < 2; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no delivery attempted: %d requests\n%s", rcv.requests(), s.logs)
			}
		}
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.done
		held := rcv.requests()
		rcv.Unhold()

		s = startArgs(t, dsn, flags, env...)
		var ds api.WebhookDeliveries
		for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			code, out, errOut := run(t, env, "", "webhook", "deliveries", ep.ID, "--json", "--db", dsn)
			if code != 0 || json.Unmarshal([]byte(out), &ds) != nil {
				t.Fatalf("webhook deliveries: %d %s %s", code, out, errOut)
			}
			done := len(ds.Deliveries) == 2
			for _, d := range ds.Deliveries {
				done = done && d.State == "delivered"
			}
			if done {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not delivered after the restart: %s\n%s", out, s.logs)
			}
		}
		types := map[string]bool{}
		stored := map[string]string{}
		for _, d := range ds.Deliveries {
			types[d.Type] = true
			stored[d.ID] = string(d.Payload)
		}
		if !types["score.changed"] || !types["passport.issued"] {
			t.Errorf("messages %+v", ds.Deliveries)
		}
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		seen := map[string]int{}
		for i, h := range rcv.got {
			id := h.Get("webhook-id")
			seen[id]++
			body, ok := stored[id]
			if !ok {
				t.Errorf("delivered %s, which is not in the outbox", id)
				continue
			}
			// The receiver stores the exact bytes; the stored payload is
			// the same JSON.
			var a, b any
			json.Unmarshal([]byte(rcv.bodies[i]), &a)
			json.Unmarshal([]byte(body), &b)
			if ja, _ := json.Marshal(a); string(ja) != func() string { jb, _ := json.Marshal(b); return string(jb) }() {
				t.Errorf("delivery %d of %s: body %s, stored %s", i, id, rcv.bodies[i], body)
			}
			ts, _ := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
			if !webhook.Verify(secret, id, ts, []byte(rcv.bodies[i]), h.Get("webhook-signature"), time.Now(), 5*time.Minute) {
				t.Errorf("delivery %d of %s does not verify", i, id)
			}
		}
		for id := range stored {
			if seen[id] == 0 {
				t.Errorf("message %s lost", id)
			}
		}
		if held < 2 || len(rcv.got) <= held {
			t.Errorf("%d requests held before the kill, %d in all: the held ones were not delivered again", held, len(rcv.got))
		}
		dup := 0
		for _, n := range seen {
			if n > 1 {
				dup++
			}
		}
		if dup == 0 {
			t.Errorf("no message was attempted both before and after the kill: %v", seen)
		}

		// The endpoint is listed (no secret), then removed.
		code, out, _ = run(t, env, "", "webhook", "list", "--json", "--db", dsn)
		if code != 0 || !strings.Contains(out, ep.ID) || strings.Contains(out, "whsec_") {
			t.Errorf("webhook list: %d %s", code, out)
		}
		if code, out, _ := run(t, env, "", "webhook", "remove", ep.ID, "--db", dsn); code != 0 || !strings.Contains(out, "removed "+ep.ID) {
			t.Errorf("webhook remove: %d %s", code, out)
		}
		if code, _, _ := run(t, env, "", "webhook", "remove", ep.ID, "--db", dsn); code != 3 {
			t.Errorf("removing twice: exit %d, want 3", code)
		}
		code, out, _ = run(t, env, "", "actions", "--json", "--db", dsn)
		if code != 0 || !strings.Contains(out, `"action":"webhook_create"`) || !strings.Contains(out, `"operator":"ops-team"`) || !strings.Contains(out, `"action":"webhook_delete"`) {
			t.Errorf("actions: %d %s", code, out)
		}
		s.stop()
	})
}
