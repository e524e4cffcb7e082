package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/nodetest"
	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/internal/webhook"
)

// delivery is one request a receiver got.
type delivery struct {
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Secret  string            `json:"secret"`
}

// receiver is a real local HTTP receiver whose answers a test scripts:
// answer returns the status to send for the n-th request (1 first) and
// how long to wait before sending it.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []delivery
	answer func(n int) (status int, wait time.Duration)
}

func newReceiver(t testing.TB, answer func(n int) (int, time.Duration)) *receiver {
	r := &receiver{answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, delivery{Headers: map[string]string{"webhook-id": req.Header.Get("webhook-id"),
			"webhook-timestamp": req.Header.Get("webhook-timestamp"), "webhook-signature": req.Header.Get("webhook-signature")}, Body: string(body)})
		n := len(r.got)
		r.mu.Unlock()
		status, wait := r.answer(n)
		select {
		case <-time.After(wait):
		case <-req.Context().Done():
			return
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// outboxStore opens a migrated back end for the dispatcher tests.
func outboxStore(t *testing.T, pg bool) Backend {
	st, _ := outboxStoreDSN(t, pg)
	return st
}

// outboxStoreDSN is outboxStore with the DSN of its database.
func outboxStoreDSN(t testing.TB, pg bool) (Backend, string) {
	t.Helper()
	var st Backend
	var err error
	dsn := ""
	if pg {
		dsn = pgtest.NewDatabase(t)
		st, err = postgres.Open(t.Context(), dsn)
	} else {
		st, err = sqlite.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "outbox.db"))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return st, dsn
}

// announce registers an endpoint at url for score.changed and makes n
// agents' scores change, so that n messages wait for it.
func announce(t *testing.T, st Backend, url string, n int) webhook.Endpoint {
	t.Helper()
	ep := webhook.Endpoint{ID: webhook.NewEndpointID(), URL: url, Events: []webhook.EventType{webhook.ScoreChanged}, Secret: webhook.NewSecret(),
		CreatedAt: time.Now().UTC(), CreatedBy: "op-1"}
	if err := st.CreateWebhook(t.Context(), ep); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	end := now.Add(-time.Hour)
	for i := range n {
		agent := fmt.Sprintf("agent-%s-%03d", ep.ID[3:9], i)
		var evs []ledger.Event
		for j := range 3 {
			evs = append(evs, ledger.Event{Type: ledger.ConduitSession, ID: fmt.Sprintf("%s-c%d", agent, j), AgentID: agent, BuyerID: "buyer-1",
				Status: ledger.Verified, StartedAt: end.Add(-time.Minute), EndedAt: end})
		}
		if _, err := st.Ingest(t.Context(), ledger.Batch{Operator: "op-1", Events: evs, ReceivedAt: now}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RefreshScore(t.Context(), agent, now, nil); err != nil {
			t.Fatal(err)
		}
	}
	return ep
}

var loopbackPolicy = webhook.URLPolicy{AllowHTTPLoopback: true}

// deliverUntil runs d's rounds until done says so, or fails after limit.
func deliverUntil(t *testing.T, d *Dispatcher, limit time.Duration, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal("not delivered in time")
		}
		if _, err := d.DeliverDue(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func onlyMessage(t *testing.T, st Backend, ep string) webhook.Message {
	t.Helper()
	ms, err := st.WebhookDeliveries(t.Context(), ep, 10)
	if err != nil || len(ms) != 1 {
		t.Fatalf("deliveries %+v, %v", ms, err)
	}
	return ms[0]
}

// verifyWithNode checks every delivery's signature with the npm
// standardwebhooks reference implementation, and with webhook.Verify.
func verifyWithNode(t *testing.T, ds []delivery, secret webhook.Secret) {
	t.Helper()
	for i := range ds {
		ds[i].Secret = secret.Reveal()
		ts := ds[i].Headers["webhook-timestamp"]
		var at int64
		fmt.Sscan(ts, &at)
		if !webhook.Verify(secret, ds[i].Headers["webhook-id"], at, []byte(ds[i].Body), ds[i].Headers["webhook-signature"], time.Now(), 5*time.Minute) {
			t.Errorf("delivery %d does not verify in Go", i)
		}
	}
	// A tampered copy of the first must be refused by the library.
	bad := append([]delivery(nil), ds...)
	bad = append(bad, ds[0])
	bad[len(bad)-1].Body = strings.Replace(ds[0].Body, `"score"`, `"scorf"`, 1)
	in, _ := json.Marshal(bad)
	var res []struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(nodetest.Run(t, "webhook-verify.mjs", in), &res); err != nil || len(res) != len(bad) {
		t.Fatalf("node: %v %v", res, err)
	}
	for i, r := range res[:len(ds)] {
		if !r.OK {
			t.Errorf("standardwebhooks refuses delivery %d: %s", i, r.Error)
		}
	}
	if res[len(ds)].OK {
		t.Error("standardwebhooks accepts a tampered body")
	}
}

// TestDispatcherRecovers: a receiver that fails, then times out, then
// answers slowly but in time gets the message three times with the same
// id, each signed as Standard Webhooks' reference library verifies; the
// attempts are recorded and the message ends delivered.
func TestDispatcherRecovers(t *testing.T) {
	for _, pg := range []bool{false, true} {
		t.Run(map[bool]string{false: "sqlite", true: "postgres"}[pg], func(t *testing.T) {
			st := outboxStore(t, pg)
			const timeout = 300 * time.Millisecond
			rcv := newReceiver(t, func(n int) (int, time.Duration) {
				switch n {
				case 1:
					return http.StatusInternalServerError, 0
				case 2:
					return http.StatusOK, 3 * timeout // too late: a timeout
				case 3:
					return http.StatusAccepted, timeout / 2 // slow, in time
				}
				return http.StatusOK, 0
			})
			ep := announce(t, st, rcv.URL+"/hooks", 1)
			d := NewDispatcher(st, DispatchConfig{Policy: loopbackPolicy, Timeout: timeout,
				Retry: webhook.Retry{Base: 50 * time.Millisecond, Cap: 200 * time.Millisecond, MaxAge: time.Hour}})
			deliverUntil(t, d, 20*time.Second, func() bool { return onlyMessage(t, st, ep.ID).State == webhook.Delivered })
			m := onlyMessage(t, st, ep.ID)
			if m.Attempts != 3 || len(m.History) != 3 || m.History[0].Status != 500 || m.History[0].Error != "answered 500" ||
				m.History[1].Status != 0 || m.History[1].Error != "timed out" || m.History[2].Status != 202 || m.History[2].Error != "" ||
				m.LastStatus != 202 || m.DeliveredAt.IsZero() {
				t.Errorf("message %+v", m)
			}
			ds := rcv.deliveries()
			if len(ds) != 3 {
				t.Fatalf("%d deliveries", len(ds))
			}
			for _, dl := range ds {
				if dl.Headers["webhook-id"] != m.ID || dl.Body != string(m.Payload) {
					t.Errorf("delivery %+v, want id %s and the stored payload", dl.Headers, m.ID)
				}
			}
			verifyWithNode(t, ds, ep.Secret)
			if n, _ := d.DeliverDue(t.Context()); n != 0 {
				t.Errorf("a delivered message claimed again")
			}
		})
	}
}

// TestDispatcherFails: a receiver that never answers 2xx gets attempts
// until the schedule's end, then the message is failed and left alone.
func TestDispatcherFails(t *testing.T) {
	st := outboxStore(t, false)
	rcv := newReceiver(t, func(int) (int, time.Duration) { return http.StatusServiceUnavailable, 0 })
	ep := announce(t, st, rcv.URL, 1)
	// Messages are dated to the second of their change: the schedule is
	// longer than that second.
	const maxAge = 2 * time.Second
	d := NewDispatcher(st, DispatchConfig{Policy: loopbackPolicy, Timeout: time.Second,
		Retry: webhook.Retry{Base: 50 * time.Millisecond, Cap: 200 * time.Millisecond, MaxAge: maxAge}})
	deliverUntil(t, d, 20*time.Second, func() bool { return onlyMessage(t, st, ep.ID).State == webhook.Failed })
	m := onlyMessage(t, st, ep.ID)
	if m.Attempts < 3 || m.Attempts != len(m.History) || m.LastStatus != 503 || len(rcv.deliveries()) != m.Attempts {
		t.Errorf("failed message %+v after %d deliveries", m, len(rcv.deliveries()))
	}
	last := m.History[len(m.History)-1].At
	if last.After(m.CreatedAt.Add(maxAge + 200*time.Millisecond)) {
		t.Errorf("last attempt at %s, past the schedule's end %s", last, m.CreatedAt.Add(maxAge))
	}
	for i := 1; i < len(m.History); i++ {
		if m.History[i].At.Before(m.History[i-1].At.Add(10 * time.Millisecond)) {
			t.Errorf("attempt %d came %s after the one before: no backoff", i+1, m.History[i].At.Sub(m.History[i-1].At))
		}
	}
}

// TestDispatcherRefusesPrivate: without the loopback allowance the
// dispatcher refuses a loopback URL, and its dialer refuses a name that
// resolves to a loopback address (what a DNS rebinding would do after
// registration): nothing reaches the receiver.
func TestDispatcherRefusesPrivate(t *testing.T) {
	st := outboxStore(t, false)
	rcv := newReceiver(t, func(int) (int, time.Duration) { return http.StatusOK, 0 })
	ep := announce(t, st, rcv.URL, 1)
	d := NewDispatcher(st, DispatchConfig{Timeout: time.Second, Retry: webhook.Retry{Base: time.Hour, Cap: time.Hour, MaxAge: 24 * time.Hour}})
	if _, err := d.DeliverDue(t.Context()); err != nil {
		t.Fatal(err)
	}
	m := onlyMessage(t, st, ep.ID)
	if m.State != webhook.Pending || m.Attempts != 1 || !strings.Contains(m.LastError, "loopback") {
		t.Errorf("message %+v", m)
	}
	// The dial guard itself, past the URL check: "localhost" resolves at
	// dial time to a loopback address.
	port := rcv.Listener.Addr().(*net.TCPAddr).Port
	resp, err := d.client.Get(fmt.Sprintf("http://localhost:%d/", port))
	if err == nil {
		resp.Body.Close()
		t.Fatal("the dialer reached a loopback address")
	}
	if !strings.Contains(err.Error(), "loopback address") {
		t.Errorf("dial error %v", err)
	}
	if n := len(rcv.deliveries()); n != 0 {
		t.Errorf("the receiver got %d requests", n)
	}
}

// TestTwoDispatchersPostgres: two dispatchers on one PostgreSQL database,
// as two serve replicas run them, deliver every message once between
// them.
func TestTwoDispatchersPostgres(t *testing.T) {
	st, dsn := outboxStoreDSN(t, true)
	st2, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	rcv := newReceiver(t, func(int) (int, time.Duration) { return http.StatusNoContent, 5 * time.Millisecond })
	const n = 120
	ep := announce(t, st, rcv.URL, n)
	cfg := DispatchConfig{Policy: loopbackPolicy, Timeout: 5 * time.Second, Workers: 4, Batch: 10, Poll: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, s := range []WebhookOutbox{st, st2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			NewDispatcher(s, cfg).Run(ctx)
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if pending, err := st.WebhookBacklog(t.Context()); err == nil && pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not delivered in time")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	seen := map[string]int{}
	for _, d := range rcv.deliveries() {
		seen[d.Headers["webhook-id"]]++
	}
	if len(seen) != n {
		t.Errorf("%d distinct messages delivered, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("message %s delivered %d times", id, k)
		}
	}
	ms, _ := st.WebhookDeliveries(t.Context(), ep.ID, 200)
	for _, m := range ms {
		if m.State != webhook.Delivered || m.Attempts != 1 {
			t.Errorf("message %s: %s after %d attempts", m.ID, m.State, m.Attempts)
		}
	}
}

// TestAddWebhookRefuses: registration refuses what the policy refuses,
// including a host name resolving to a private address.
func TestAddWebhookRefuses(t *testing.T) {
	u, _ := newUseCases(t)
	u.Webhooks.Resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "internal.example":
			return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.1.2.3")}, nil
		case "hooks.example":
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}
		return nil, fmt.Errorf("no such host")
	}
	for _, c := range []struct{ url, code string }{
		{"http://hooks.example/x", webhook.CodeInvalidURL},
		{"https://internal.example/x", webhook.CodeInvalidURL},
		{"https://nowhere.example/x", webhook.CodeInvalidURL},
		{"https://127.0.0.1/x", webhook.CodeInvalidURL},
		{"https://[::1]/x", webhook.CodeInvalidURL},
		{"https://[::ffff:10.0.0.1]/x", webhook.CodeInvalidURL},
		{"https://169.254.169.254/latest", webhook.CodeInvalidURL},
		{"https://localhost./x", webhook.CodeInvalidURL},
		{"https://user:pw@hooks.example/x", webhook.CodeInvalidURL},
		{"ftp://hooks.example/x", webhook.CodeInvalidURL},
	} {
		if _, err := u.Webhooks.AddWebhook(t.Context(), "op-1", c.url, []string{"score.changed"}); errkindCode(err) != c.code {
			t.Errorf("%s: %v", c.url, err)
		}
	}
	if _, err := u.Webhooks.AddWebhook(t.Context(), "op-1", "https://hooks.example/x", []string{"score.changed", "nope"}); errkindCode(err) != webhook.CodeInvalidEvent {
		t.Errorf("unknown event: %v", err)
	}
	e, err := u.Webhooks.AddWebhook(t.Context(), "op-1", "https://hooks.example/x", []string{"tier.changed", "score.changed"})
	if err != nil || !strings.HasPrefix(e.Secret.Reveal(), "whsec_") || fmt.Sprint(e) == "" || strings.Contains(fmt.Sprintf("%v %+v", e, e), e.Secret.Reveal()) {
		t.Fatalf("add: %+v, %v", e, err)
	}
}

func errkindCode(err error) string { return errkind.Code(err) }
