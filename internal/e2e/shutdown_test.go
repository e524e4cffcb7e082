package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/client"
)

// TestGracefulShutdown sends SIGTERM while clients are ingesting, restarts
// the server on the same database, and checks that every event whose
// request got a 2xx answer is recorded: re-sending each acknowledged batch
// must report only duplicates.
func TestGracefulShutdown(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "swarmscore.db")
	s := start(t, dsn, "SWARMSCORE_ADMIN_TOKEN="+adminToken, "SWARMSCORE_SIGNING_KEY="+signingKey)
	c := s.client(adminToken)

	var mu sync.Mutex
	var acked [][]client.Event
	var wg sync.WaitGroup
	stopAt := time.Now().Add(20 * time.Second) // a bound, in case SIGTERM is ignored
	started := make(chan struct{})
	var once sync.Once
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stopAt); i++ {
				batch := make([]client.Event, 50)
				for j := range batch {
					batch[j] = client.ConduitSession(fmt.Sprintf("w%d-b%d-e%d", w, i, j), fmt.Sprintf("agent-%d", j%5), "VERIFIED", t0, t0.Add(time.Minute))
				}
				res, err := c.IngestEvents(ctx, batch)
				if err != nil {
					return // the server is going away
				}
				if res.Accepted != len(batch) {
					t.Errorf("batch %d/%d: %+v", w, i, res)
					return
				}
				mu.Lock()
				acked = append(acked, batch)
				if len(acked) >= 8 {
					once.Do(func() { close(started) })
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("no batch was acknowledged")
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	wg.Wait()
	s.wait()

	s2 := start(t, dsn, "SWARMSCORE_ADMIN_TOKEN="+adminToken, "SWARMSCORE_SIGNING_KEY="+signingKey)
	c2 := s2.client(adminToken)
	for i, batch := range acked {
		res, err := c2.IngestEvents(ctx, batch)
		if err != nil || res.Duplicates != len(batch) || res.Accepted != 0 {
			t.Fatalf("acknowledged batch %d of %d was not kept: %+v %v", i, len(acked), res, err)
		}
	}
	t.Logf("%d acknowledged batches of 50 events all survived the restart", len(acked))
	s2.stop()
}
