package postgres

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// NotifyChannel is the channel the triggers of migration 00003 notify at
// the commit of every write that may change a cache stamp (and those of
// 00016 at a consent choice, CreateAppeal and SaveAppeal at an appeal's).
// The payload is the agent ids concerned, separated by spaces, or
// NotifyAll.
const NotifyChannel = "swarmscore_cache"

// NotifyAll is the payload that names every agent (a batch too large to
// list, a TRUNCATE).
const NotifyAll = "*"

// ListenerApplicationName is the application_name of the watch's listener
// connection, so an operator can tell it from the pool's in
// pg_stat_activity.
const ListenerApplicationName = "swarmscore-cache-listener"

// Listener timing. The listener proves its connection alive with a round
// trip every heartbeat; a successful one vouches for the connection until
// liveness after it was sent. A connection lost silently (a partition, a
// stalled server) is therefore trusted for at most liveness after its last
// proof, and a lost notification costs at most that much staleness.
const (
	heartbeat   = 250 * time.Millisecond
	liveness    = time.Second
	minBackoff  = 100 * time.Millisecond
	maxBackoff  = 5 * time.Second
	dialTimeout = 5 * time.Second
)

// CacheWatch implements service.CacheWatcher with LISTEN/NOTIFY: the first
// call starts a listener on a dedicated connection (not from the pool)
// that turns each notification into an invalidation of the agents it
// names. The watch vouches for nothing (Mark is not ok) until the listener
// has subscribed, whenever its connection is lost (it reconnects with
// backoff), and whenever its last heartbeat is older than liveness; on
// every (re)subscription it invalidates every agent, since commits made
// while it was not listening were never notified to it. Commits by other
// processes are seen when their notification is processed, normally within
// a millisecond of the commit on the same host. It stops when the store is
// closed.
func (s *Store) CacheWatch() ledger.CacheWatch {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	if s.watch.closed {
		return nil
	}
	if s.watch.w == nil {
		s.watch.w = startWatch(s.pool.Config().ConnConfig.Config.Copy(), pgconn.ConnectConfig, s.log, s.gate)
	}
	return s.watch.w
}

// watchState starts the store's watch once and stops it on Close.
type watchState struct {
	mu     sync.Mutex
	w      *pgWatch
	closed bool
}

// get returns the watch if it was started.
func (ws *watchState) get() *pgWatch {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.w
}

func (ws *watchState) close() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.closed = true
	if ws.w != nil {
		ws.w.stop()
	}
}

// pgWatch is the PostgreSQL ledger.CacheWatch.
type pgWatch struct {
	inval *invalidations
	// origin is the monotonic reference of aliveUntil, which is 0 while
	// the listener is down.
	origin     time.Time
	aliveUntil atomic.Int64 // nanoseconds after origin

	cfg  *pgconn.Config
	dial dialFunc
	// dialErr, when set, makes every connection attempt fail with it:
	// tests use it to keep the listener down.
	dialErr atomic.Pointer[error]
	cancel  context.CancelFunc
	done    chan struct{}

	// log hears of each connection, loss and lapse once (never per
	// retry); the counters are what Stats reports.
	log                              *slog.Logger
	connects, disconnects, heartbeat atomic.Uint64

	// gate, with a read replica attached, learns every invalidation too,
	// and the primary's LSN after it (replica.go).
	gate *readGate
}

type dialFunc func(context.Context, *pgconn.Config) (*pgconn.PgConn, error)

// startWatch starts a listener on connections made with cfg (a copy the
// watch owns). Notifications are handled as they are read, whichever call
// reads them: the wait for one or a heartbeat.
func startWatch(cfg *pgconn.Config, dial dialFunc, log *slog.Logger, gate *readGate) *pgWatch {
	ctx, cancel := context.WithCancel(context.Background())
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &pgWatch{inval: newInvalidations(), origin: time.Now(), cfg: cfg, dial: dial, cancel: cancel, done: make(chan struct{}), log: log, gate: gate}
	cfg.RuntimeParams["application_name"] = ListenerApplicationName
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) { w.notified(n) }
	go w.run(ctx)
	return w
}

func (w *pgWatch) live() bool { return int64(time.Since(w.origin)) < w.aliveUntil.Load() }

// Mark implements ledger.CacheWatch.
func (w *pgWatch) Mark() (uint64, bool) {
	if !w.live() {
		return 0, false
	}
	return w.inval.Mark(), true
}

// Unchanged implements ledger.CacheWatch.
func (w *pgWatch) Unchanged(agentID string, mark uint64) bool {
	return w.live() && w.inval.Unchanged(agentID, mark)
}

// Wrote implements ledger.CacheWatch.
func (w *pgWatch) Wrote(agentIDs []string) {
	w.saw(agentIDs, false)
	w.inval.Agents(agentIDs)
}

// saw tells the read gate, if any, of an invalidation, before the
// invalidation itself: a read that starts after it is then held to it.
func (w *pgWatch) saw(agentIDs []string, all bool) {
	if w.gate != nil {
		w.gate.saw(agentIDs, all)
	}
}

// all invalidates every agent.
func (w *pgWatch) all() {
	w.saw(nil, true)
	w.inval.All()
}

// settle ties what the read gate saw to the primary's LSN, on conn.
func (w *pgWatch) settle(ctx context.Context, conn *pgconn.PgConn) error {
	if w.gate == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, liveness)
	defer cancel()
	return settleFromPrimary(sctx, conn, w.gate)
}

// Stats reports how the listener has fared since it started.
func (w *pgWatch) Stats() ledger.WatchStats {
	return ledger.WatchStats{Live: w.live(), Connects: w.connects.Load(), Disconnects: w.disconnects.Load(), MissedHeartbeats: w.heartbeat.Load()}
}

func (w *pgWatch) stop() {
	w.cancel()
	<-w.done
}

// down withdraws every vouch: marks taken so far never become good again.
func (w *pgWatch) down() {
	w.aliveUntil.Store(0)
	w.all()
}

// run keeps a listener subscribed until ctx ends.
func (w *pgWatch) run(ctx context.Context) {
	defer close(w.done)
	defer w.down()
	backoff := minBackoff
	var downSince time.Time // zero while connected, or before the first connection
	reported := false       // the current failure to connect was logged
	for {
		subscribed, err := w.listen(ctx, downSince)
		w.down()
		if ctx.Err() != nil {
			return
		}
		if subscribed {
			backoff, downSince, reported = minBackoff, time.Now(), false
			w.disconnects.Add(1)
			w.log.Warn("cache listener lost its connection; passports are read from the database until it is back", "err", err)
		} else if !reported {
			reported = true
			w.log.Warn("cache listener cannot connect; retrying with backoff", "err", err, "max_backoff", maxBackoff.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// listen connects, subscribes and handles notifications until the
// connection fails or ctx ends. It reports whether it subscribed, and why
// it stopped. downSince is when the previous connection was lost (zero for
// the first).
func (w *pgWatch) listen(ctx context.Context, downSince time.Time) (subscribed bool, err error) {
	if err := w.dialErr.Load(); err != nil {
		return false, *err
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	conn, err := w.dial(dctx, w.cfg)
	cancel()
	if err != nil {
		return false, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	sent := time.Since(w.origin)
	lctx, cancel := context.WithTimeout(ctx, liveness)
	err = conn.Exec(lctx, "LISTEN "+NotifyChannel).Close()
	cancel()
	if err != nil {
		return false, err
	}
	// Commits before the subscription took effect were never notified to
	// this connection: nothing validated before now may be trusted.
	w.all()
	if err := w.settle(ctx, conn); err != nil {
		return false, err
	}
	w.aliveUntil.Store(int64(sent + liveness))
	if w.connects.Add(1) == 1 {
		w.log.Info("cache listener subscribed", "channel", NotifyChannel)
	} else if !downSince.IsZero() {
		w.log.Warn("cache listener reconnected", "down_for", time.Since(downSince).Round(time.Millisecond).String())
	} else {
		w.log.Warn("cache listener connected after failed attempts")
	}
	last := sent
	for {
		if err := w.settle(ctx, conn); err != nil {
			return true, err
		}
		if wait := last + heartbeat - time.Since(w.origin); wait > 0 {
			wctx, cancel := context.WithTimeout(ctx, wait)
			err := conn.WaitForNotification(wctx)
			cancel()
			if ctx.Err() != nil {
				return true, ctx.Err()
			}
			if err != nil && !pgconn.Timeout(err) && !errors.Is(err, context.DeadlineExceeded) {
				return true, err
			}
			continue
		}
		prev := last
		last = time.Since(w.origin)
		hctx, cancel := context.WithTimeout(ctx, liveness)
		err := conn.Exec(hctx, "-- heartbeat").Close()
		cancel()
		if err != nil {
			return true, err
		}
		if !w.live() {
			// The connection went silent for longer than liveness and came
			// back. Nothing was lost on it (the server queues notifications
			// for the session, in order before this reply), but a lapse is
			// rare enough to pay a stamp read per remembered passport
			// rather than rely on that.
			w.all()
			w.heartbeat.Add(1)
			w.log.Warn("cache listener missed a heartbeat; passports were read from the database meanwhile",
				"silent_for", (time.Since(w.origin) - prev).Round(time.Millisecond).String())
		}
		w.aliveUntil.Store(int64(last + liveness))
	}
}

// notified records the invalidation a notification carries.
func (w *pgWatch) notified(n *pgconn.Notification) {
	if n.Channel != NotifyChannel {
		return
	}
	if n.Payload == NotifyAll {
		w.all()
		return
	}
	agents := strings.Fields(n.Payload)
	w.saw(agents, false)
	w.inval.Agents(agents)
}
