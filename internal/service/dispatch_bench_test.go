package service

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/webhook"
)

// BenchmarkOutboxDelivery: messages delivered per second from the outbox
// to a local receiver that answers 204 at once, one op a message; the
// messages are written before the timer starts (score.changed of b.N
// agents). Run with a fixed count, e.g. -benchtime=2000x
// (docs/BENCHMARKS.md).
func BenchmarkOutboxDelivery(b *testing.B) {
	for _, c := range []struct {
		name        string
		pg          bool
		workers     int
		dispatchers int
	}{
		{"sqlite/workers=1", false, 1, 1},
		{"sqlite/workers=8", false, 8, 1},
		{"postgres/workers=1", true, 1, 1},
		{"postgres/workers=8", true, 8, 1},
		{"postgres/2x8", true, 8, 2},
	} {
		b.Run(c.name, func(b *testing.B) {
			st, dsn := outboxStoreDSN(b, c.pg)
			rcv := newReceiver(b, func(int) (int, time.Duration) { return http.StatusNoContent, 0 }).URL
			ep := webhook.Endpoint{ID: webhook.NewEndpointID(), URL: rcv, Events: []webhook.EventType{webhook.ScoreChanged},
				Secret: webhook.NewSecret(), CreatedAt: time.Now().UTC(), CreatedBy: "op-1"}
			if err := st.CreateWebhook(b.Context(), ep); err != nil {
				b.Fatal(err)
			}
			now := time.Now().UTC().Truncate(time.Second)
			var evs []ledger.Event
			for i := range b.N {
				evs = append(evs, ledger.Event{Type: ledger.ConduitSession, ID: fmt.Sprintf("bench-%d", i), AgentID: fmt.Sprintf("bench-%06d", i),
					BuyerID: "buyer-1", Status: ledger.Verified, StartedAt: now.Add(-2 * time.Hour), EndedAt: now.Add(-time.Hour)})
				if len(evs) == 1000 || i == b.N-1 {
					if _, err := st.Ingest(b.Context(), ledger.Batch{Operator: "op-1", Events: evs}); err != nil {
						b.Fatal(err)
					}
					evs = evs[:0]
				}
			}
			for i := range b.N {
				if _, err := st.RefreshScore(b.Context(), fmt.Sprintf("bench-%06d", i), now, nil); err != nil {
					b.Fatal(err)
				}
			}
			stores := []WebhookOutbox{st}
			if c.dispatchers == 2 {
				st2, err := postgres.Open(b.Context(), dsn)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { st2.Close() })
				stores = append(stores, st2)
			}
			ds := make([]*Dispatcher, len(stores))
			for i, s := range stores {
				ds[i] = NewDispatcher(s, DispatchConfig{Policy: loopbackPolicy, Workers: c.workers, Timeout: 5 * time.Second})
			}
			b.ResetTimer()
			start := time.Now()
			done := make(chan error, len(ds))
			for _, d := range ds {
				go func() {
					for {
						n, err := d.DeliverDue(b.Context())
						if err != nil || n == 0 {
							done <- err
							return
						}
					}
				}()
			}
			for range ds {
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
			if n, _ := st.WebhookBacklog(b.Context()); n != 0 {
				b.Fatalf("%d messages left", n)
			}
		})
	}
}
