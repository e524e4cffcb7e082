package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/storetest"
)

// notifyDelay is how long the tests allow a notification to arrive.
const notifyDelay = 2 * time.Second

func TestCacheWatch(t *testing.T) {
	storetest.RunWatch(t, storetest.WatchHarness{
		Open: func(t *testing.T) service.Backend { return openTest(t) },
		Reopen: func(t *testing.T, s service.Backend) service.Backend {
			o, err := Open(t.Context(), s.(*Store).pool.Config().ConnString())
			if err != nil {
				t.Fatal(err)
			}
			return o
		},
		Delay:    notifyDelay,
		PerAgent: true,
	})
}

// waitLive waits for the watch to vouch again.
func waitLive(t *testing.T, w *pgWatch, within time.Duration) uint64 {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if m, ok := w.Mark(); ok {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener is not back after %s", within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// terminateListeners ends the listener backends of s's database, as a
// failover or an administrator would, and returns how many there were.
func terminateListeners(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	err := s.pool.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, ListenerApplicationName).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCacheWatchListenerDown: while the listener is disconnected the watch
// vouches for nothing (a commit made meanwhile is never notified to it),
// and once it is back no mark from before the outage holds.
func TestCacheWatchListenerDown(t *testing.T) {
	s := openTest(t)
	var logs syncBuffer
	s.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	w := s.CacheWatch().(*pgWatch)
	before := waitLive(t, w, 5*time.Second)
	if !w.Unchanged("a", before) {
		t.Fatal("control: a fresh mark does not hold")
	}

	down := errors.New("test: listener kept down")
	w.dialErr.Store(&down)
	if n := terminateListeners(t, s); n != 1 {
		t.Fatalf("%d listener backends, want 1", n)
	}
	deadline := time.Now().Add(liveness + time.Second)
	for {
		if _, ok := w.Mark(); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch still vouches after its listener was terminated")
		}
		time.Sleep(time.Millisecond)
	}
	for range 3 {
		if _, ok := w.Mark(); ok || w.Unchanged("a", before) {
			t.Fatal("the watch vouches while its listener cannot reconnect")
		}
		time.Sleep(heartbeat)
	}

	w.dialErr.Store(nil)
	after := waitLive(t, w, maxBackoff+time.Second)
	if w.Unchanged("a", before) {
		t.Fatal("a mark from before the outage holds after it")
	}
	if !w.Unchanged("a", after) {
		t.Fatal("a mark from after the outage does not hold")
	}
	// The outage is counted and logged once each way, however many
	// reconnection attempts failed meanwhile.
	if st := w.Stats(); !st.Live || st.Connects != 2 || st.Disconnects != 1 {
		t.Errorf("stats %+v, want live, 2 connects, 1 disconnect", st)
	}
	out := logs.String()
	for msg, n := range map[string]int{"cache listener subscribed": 1, "lost its connection": 1, "cannot connect": 1, "cache listener reconnected": 1} {
		if got := strings.Count(out, msg); got != n {
			t.Errorf("%q logged %d times, want %d:\n%s", msg, got, n, out)
		}
	}
}

// syncBuffer is a bytes.Buffer a logger may write from another goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCacheWatchSilentConnection: a listener whose connection goes silent
// (no error, no data: a partition, a stalled server) stops vouching within
// liveness of its last heartbeat, and vouches again once it has
// reconnected, without trusting marks from before.
func TestCacheWatchSilentConnection(t *testing.T) {
	s := openTest(t)
	p := newFreezer(t, s.pool.Config().ConnConfig.Host, s.pool.Config().ConnConfig.Port)
	cfg := s.pool.Config().ConnConfig.Config.Copy()
	cfg.Host, cfg.Port = "127.0.0.1", p.port
	cfg.Fallbacks = nil
	w := startWatch(cfg, pgconn.ConnectConfig, nil, nil)
	defer w.stop()
	before := waitLive(t, w, 5*time.Second)

	p.freeze()
	frozen := time.Now()
	for {
		if _, ok := w.Mark(); !ok {
			break
		}
		if d := time.Since(frozen); d > liveness+heartbeat+200*time.Millisecond {
			t.Fatalf("still vouching %s after the connection went silent", d)
		}
		time.Sleep(time.Millisecond)
	}
	if w.Unchanged("a", before) {
		t.Fatal("a mark holds while the connection is silent")
	}
	p.thaw()
	after := waitLive(t, w, maxBackoff+liveness+time.Second)
	if w.Unchanged("a", before) || !w.Unchanged("a", after) {
		t.Fatal("after reconnecting: the old mark holds or the new one does not")
	}
	if st := w.Stats(); st.Disconnects+st.MissedHeartbeats < 1 {
		t.Errorf("stats %+v: the silent connection was not counted", st)
	}
}

// freezer is a TCP proxy to PostgreSQL whose connections can be made to
// stop passing bytes without closing.
type freezer struct {
	port   uint16
	mu     sync.Mutex
	frozen bool
	conns  []net.Conn
}

func newFreezer(t *testing.T, host string, port uint16) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{port: uint16(ln.Addr().(*net.TCPAddr).Port)}
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range f.conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			frozen := f.frozen
			f.mu.Unlock()
			if frozen {
				c.Close() // refuse while frozen: a partition
				continue
			}
			up, err := net.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(int(port))))
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, up)
			f.mu.Unlock()
			go f.pipe(c, up)
			go f.pipe(up, c)
		}
	}()
	return f
}

func (f *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for {
			f.mu.Lock()
			frozen := f.frozen
			f.mu.Unlock()
			if !frozen {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

func (f *freezer) freeze() { f.mu.Lock(); f.frozen = true; f.mu.Unlock() }
func (f *freezer) thaw()   { f.mu.Lock(); f.frozen = false; f.mu.Unlock() }

// TestNotifyPayloads checks what the triggers send: every agent whose
// terminal_seq a batch moved, in payloads within NOTIFY's limit, or "*"
// for more than 1000 agents; nothing for a non-terminal batch or a rolled
// back one.
func TestNotifyPayloads(t *testing.T) {
	s := openTest(t)
	cfg := s.pool.Config().ConnConfig.Config.Copy()
	var got []string
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) {
		if n.Channel == NotifyChannel {
			got = append(got, n.Payload)
		}
	}
	conn, err := pgconn.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.Exec(t.Context(), "LISTEN "+NotifyChannel).Close(); err != nil {
		t.Fatal(err)
	}
	drain := func() []string {
		t.Helper()
		// A round trip after the commit: notifications sent before it are
		// handled by the time it returns, or arrive within the wait.
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		for conn.WaitForNotification(ctx) == nil {
		}
		if err := conn.Exec(t.Context(), "SELECT 1").Close(); err != nil {
			t.Fatal(err)
		}
		out := got
		got = nil
		return out
	}
	end := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	batch := func(n int, prefix string, st ledger.Status) []ledger.Event {
		var evs []ledger.Event
		for i := range n {
			// Long ids, so that a few hundred agents exceed one payload.
			agent := fmt.Sprintf("%s-%03d-%s", prefix, i, strings.Repeat("x", 100))
			e := ledger.Event{Type: ledger.ConduitSession, ID: fmt.Sprintf("%s-e%d", prefix, i), AgentID: agent,
				Status: st, StartedAt: end, EndedAt: end}
			if !st.Terminal() {
				e.EndedAt = time.Time{}
			}
			evs = append(evs, e)
		}
		return evs
	}
	ingest := func(evs []ledger.Event) {
		t.Helper()
		out, err := s.Ingest(t.Context(), ledger.Batch{Operator: "op", Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range out {
			if o.Status != ledger.OutcomeAccepted {
				t.Fatalf("event %d: %v %v", i, o.Status, o.Err)
			}
		}
	}

	// New agents: the INSERT notifies nothing (nobody remembers them).
	ingest(batch(300, "p", ledger.Running))
	if p := drain(); len(p) != 0 {
		t.Fatalf("new agents: %d notifications", len(p))
	}
	// 300 terminal transitions of existing agents: every id, chunked.
	evs := batch(300, "p", ledger.Verified)
	ingest(evs)
	p := drain()
	named := map[string]bool{}
	for _, payload := range p {
		if len(payload) >= 8000 {
			t.Errorf("payload of %d bytes", len(payload))
		}
		for _, id := range strings.Fields(payload) {
			named[id] = true
		}
	}
	if len(p) < 2 || len(named) != 300 {
		t.Fatalf("300 terminal reports: %d payloads naming %d agents", len(p), len(named))
	}
	for _, e := range evs {
		if !named[e.AgentID] {
			t.Fatalf("%s not named", e.AgentID)
		}
	}
	// A non-terminal report of existing agents: nothing.
	ingest([]ledger.Event{{Type: ledger.ConduitSession, ID: "p-new", AgentID: evs[0].AgentID, Status: ledger.Running, StartedAt: end}})
	if p := drain(); len(p) != 0 {
		t.Fatalf("non-terminal report: %v", p)
	}
	// More than 1000 agents: "*".
	ingest(batch(1001, "q", ledger.Running))
	drain()
	ingest(batch(1001, "q", ledger.Failed))
	if p := drain(); len(p) != 1 || p[0] != NotifyAll {
		t.Fatalf("1001 terminal reports: %d payloads, want one %q", len(p), NotifyAll)
	}

	// Passports: a refresh replacing one notifies its agent; a refresh of
	// an entry without one, nothing; a recompute dropping them, each agent
	// that had one.
	a, b := evs[0].AgentID, evs[1].AgentID
	issue := func(sig string) ledger.IssueFunc {
		return func(*ledger.ScoreEntry) ([]byte, string, error) { return []byte(`{}`), sig, nil }
	}
	if _, err := s.RefreshScore(t.Context(), a, end.Add(time.Minute), issue("s1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RefreshScore(t.Context(), b, end.Add(time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	if p := drain(); len(p) != 0 {
		t.Fatalf("first passport: %v", p)
	}
	if _, err := s.RefreshScore(t.Context(), a, end.Add(2*time.Minute), issue("s2")); err != nil {
		t.Fatal(err)
	}
	if p := drain(); len(p) != 1 || p[0] != a {
		t.Fatalf("replaced passport: %v, want [%s]", p, a)
	}
	if _, err := s.RecomputeAll(t.Context(), end.Add(3*time.Minute), false); err != nil {
		t.Fatal(err)
	}
	if p := drain(); len(p) != 1 || p[0] != a {
		t.Fatalf("recompute: %v, want [%s]", p, a)
	}
	if _, err := s.pool.Exec(t.Context(), `TRUNCATE swarmscore_cache`); err != nil {
		t.Fatal(err)
	}
	if p := drain(); len(p) != 1 || p[0] != NotifyAll {
		t.Fatalf("truncate: %v", p)
	}
}

// BenchmarkNotifyDelay measures how long another process's write takes to
// reach a watch: from the return of a terminal report's Ingest on one
// store to the watch of another store reporting the agent changed.
func BenchmarkNotifyDelay(b *testing.B) {
	ctx := context.Background()
	s := openTest(b)
	other, err := Open(ctx, s.pool.Config().ConnString())
	if err != nil {
		b.Fatal(err)
	}
	defer other.Close()
	w := other.CacheWatch().(*pgWatch)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := w.Mark(); ok {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("listener not up")
		}
		time.Sleep(time.Millisecond)
	}
	end := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op", Events: []ledger.Event{{Type: ledger.ConduitSession, ID: "seed", AgentID: "a", Status: ledger.Verified, StartedAt: end, EndedAt: end}}}); err != nil {
		b.Fatal(err)
	}
	var delays []time.Duration
	for i := 0; b.Loop(); i++ {
		m, _ := w.Mark()
		if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op", Events: []ledger.Event{{Type: ledger.ConduitSession, ID: fmt.Sprint("e", i), AgentID: "a",
			Status: ledger.Verified, StartedAt: end, EndedAt: end}}}); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		for w.Unchanged("a", m) {
			if time.Since(t0) > notifyDelay {
				b.Fatal("no notification")
			}
		}
		delays = append(delays, time.Since(t0))
	}
	slices.Sort(delays)
	b.ReportMetric(float64(delays[len(delays)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(delays[len(delays)*99/100].Microseconds()), "p99-µs")
}
