package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Bounded waits. A request that needs the database holds one of
// Options.DBMaxRequests slots while it runs, under a deadline of
// Options.DBTimeout: a pool that cannot hand out a connection, a connect or
// a statement that does not return in time ends with
// context.DeadlineExceeded, which errkind classifies as unavailable (503
// with Retry-After). When every slot is taken the request is refused at
// once (503) rather than queued: under a partition, requests would
// otherwise pile up, each holding a goroutine and a connection attempt,
// for as long as the network stays down.
//
// The slot and the deadline start after the request has been read (the
// body is read into memory first, bounded by the route's limit), so a
// slow upload holds no slot and spends none of the database's time.
// Operator routes hold a slot for the token lookup, then another for the
// handler.

// Defaults of the Options that bound waits and failures.
const (
	// DefaultDBTimeout is Options.DBTimeout when zero (serve's
	// --db-timeout): the longest a request waits for the database.
	DefaultDBTimeout = 5 * time.Second
	// DefaultDBMaxRequests is Options.DBMaxRequests when zero (serve's
	// --db-max-requests): requests using or waiting on the database at
	// once; more are answered 503 at once.
	DefaultDBMaxRequests = 64
	// readyTimeout bounds /readyz: probes expect an answer within 2 s.
	readyTimeout = 2 * time.Second
	// retryAfterUnavailable is the Retry-After of a 503: long enough for a
	// pool to reconnect or a burst to drain, short enough that clients
	// come back soon after the database does.
	retryAfterUnavailable = 2
	// Failed operator authentications: a burst of this many per client,
	// then one more per authFailureEvery.
	defaultAuthFailures     = 10
	defaultAuthFailureEvery = 6 * time.Second
	// probeEvery is how often the database is probed during an outage.
	probeEvery = 500 * time.Millisecond
)

// withoutDatabase are the routes that never reach the database (or, for
// /readyz, bound their own wait): they take no slot.
var withoutDatabase = map[string]bool{
	"GET /healthz":      true,
	"GET /readyz":       true,
	"GET /metrics":      true,
	"GET /openapi.json": true,
}

// dbGate hands out the slots of requests that use the database.
type dbGate struct {
	timeout time.Duration
	slots   chan struct{}
	refused atomic.Uint64
	log     logSampler // refusals, one line per rateLimitedLogEvery
}

func newDBGate(timeout time.Duration, max int) *dbGate {
	if timeout <= 0 {
		timeout = DefaultDBTimeout
	}
	if max <= 0 {
		max = DefaultDBMaxRequests
	}
	return &dbGate{timeout: timeout, slots: make(chan struct{}, max)}
}

// busyError is the answer when every slot is taken: 503 at once, and
// logged one line per rateLimitedLogEvery (logBusy).
type busyError struct{ max int }

func (e *busyError) Error() string {
	return fmt.Sprintf("%d requests are already waiting on the database; retry later", e.max)
}

// enter takes a slot and returns ctx bounded by the gate's timeout and the
// function that gives the slot back. With every slot taken it takes none
// and returns a *busyError.
func (g *dbGate) enter(ctx context.Context) (context.Context, func(), error) {
	select {
	case g.slots <- struct{}{}:
	default:
		g.refused.Add(1)
		return ctx, nil, &busyError{cap(g.slots)}
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	return ctx, func() { cancel(); <-g.slots }, nil
}

// dbGuard runs h in a slot, or answers 503 at once without one.
func (s *Server) dbGuard(w http.ResponseWriter, r *http.Request, h http.HandlerFunc) {
	ctx, done, err := s.gate.enter(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer done()
	h(w, r.WithContext(ctx))
}

// logBusy logs a request refused for want of a slot, one line per
// rateLimitedLogEvery with the number held back: a flood would otherwise
// write a line per request.
func (s *Server) logBusy(r *http.Request) {
	if ok, held := s.gate.log.take(s.now()); ok {
		s.log.Warn("refusing requests: every database slot is taken", "max", cap(s.gate.slots),
			"refused_not_logged", held, "path", r.URL.Path)
	}
}

// retryAfter gives a 429 or 503 that has none the Retry-After its error
// carries, or retryAfterUnavailable for a 503.
func retryAfter(h http.Header, status int, err error) {
	if h.Get("Retry-After") != "" {
		return
	}
	var ra *retryAfterError
	switch {
	case errors.As(err, &ra):
		h.Set("Retry-After", itoa(ra.secs))
	case status == http.StatusServiceUnavailable:
		h.Set("Retry-After", strconv.Itoa(retryAfterUnavailable))
	}
}

// retryAfterError is an error answered with Retry-After: secs.
type retryAfterError struct {
	error
	secs int64
}

func (e *retryAfterError) Unwrap() error { return e.error }

// seconds rounds d up to whole seconds, at least 1.
func seconds(d time.Duration) int64 { return max(1, int64((d+time.Second-1)/time.Second)) }

// bufferBody reads the request body into memory, at most the route's limit
// (r.Body is already a MaxBytesReader), so that handlers parse a complete
// body and no database slot waits on a slow client. A body that ends
// before its Content-Length (the client gave up or lied) is 400, not an
// internal error: it says nothing about the server.
func bufferBody(r *http.Request) error {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	var b []byte
	var err error
	if r.ContentLength > 0 {
		b = make([]byte, r.ContentLength)
		var n int
		n, err = io.ReadFull(r.Body, b)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return errorf(ptInvalid, "the request body ended after %d of the %d bytes its Content-Length declares", n, r.ContentLength)
		}
	} else {
		b, err = io.ReadAll(r.Body)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return errorf(ptInvalid, "the request body ended before its last chunk")
		}
	}
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &mb):
		return err
	case err != nil:
		return errorf(ptInvalid, "the request body could not be read: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return nil
}

// health notices database outages and their end, so that each is logged
// once, at ERROR and WARN, instead of once per refused request. The first
// unavailable answer of an episode is logged as usual and starts a probe
// (ReadinessService.Ready every probeEvery): if the probe fails, the outage is
// logged and later requests answered 503 are logged at DEBUG only, until
// a probe succeeds and the recovery is logged with the outage's length and
// the number of requests refused. Nothing waits for the probe: requests go
// on trying the database, so recovery needs no probe either.
type health struct {
	svc     ReadinessService
	log     *slog.Logger
	timeout time.Duration // of each probe

	mu      sync.Mutex
	state   healthState
	since   time.Time // when the episode began
	refused int64     // 503s answered in the episode
	closed  bool
	ctx     context.Context // ends at close, and with it a probe's wait
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

type healthState int32

const (
	healthy healthState = iota
	suspect             // a request found the database unavailable; probing
	outage              // a probe confirmed it
)

// unavailable records a request answered 503 because the database was
// unavailable and returns the level to log it at: level for the first of
// an episode (which starts the probe), DEBUG for the others.
func (h *health) unavailable(level slog.Level) slog.Level {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != healthy {
		h.refused++
		return slog.LevelDebug
	}
	if h.closed {
		return level
	}
	h.state, h.since, h.refused = suspect, time.Now(), 1
	if h.ctx == nil {
		h.ctx, h.stop = context.WithCancel(context.Background())
	}
	h.wg.Add(1)
	go h.probe()
	return level
}

// down reports whether an outage is confirmed, for /metrics.
func (h *health) down() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state == outage
}

func (h *health) probe() {
	defer h.wg.Done()
	for {
		ctx, cancel := context.WithTimeout(h.ctx, h.timeout)
		err := h.svc.Ready(ctx)
		cancel()
		h.mu.Lock()
		switch {
		case err == nil:
			if h.state == outage {
				h.log.Warn("database available again", "outage_ms", time.Since(h.since).Milliseconds(),
					"requests_refused", h.refused)
			}
			h.state = healthy
			h.mu.Unlock()
			return
		case h.state == suspect:
			h.state = outage
			h.log.Error("database unavailable: answering 503 until it recovers", "err", err)
		}
		done := h.ctx.Done()
		h.mu.Unlock()
		select {
		case <-done:
			return
		case <-time.After(probeEvery):
		}
	}
}

// close stops the probe, if one runs, and waits for it.
func (h *health) close() {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		if h.stop != nil {
			h.stop()
		}
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// Close stops the server's background work (the database probe of an
// outage) and waits for it. Call it after the http.Server has shut down;
// the Server must not serve afterwards. It never fails.
func (s *Server) Close() error {
	s.health.close()
	return nil
}

// initFaults sets up the bounded waits, the failed-authentication
// throttle and their metrics.
func (s *Server) initFaults(opt Options) {
	s.gate = newDBGate(opt.DBTimeout, opt.DBMaxRequests)
	burst, every := opt.AuthFailures, opt.AuthFailureEvery
	if burst <= 0 {
		burst = defaultAuthFailures
	}
	if every <= 0 {
		every = defaultAuthFailureEvery
	}
	clients := opt.RateClients
	if clients <= 0 {
		clients = 10000
	}
	s.authFails = newIPLimiter(float64(time.Second)/float64(every), burst, clients, opt.RateIPv6Prefix)
	s.health = &health{svc: s.svc.Schema, log: s.log, timeout: min(readyTimeout, s.gate.timeout)}
	s.metrics.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "swarmscore_db_requests_in_flight",
			Help: "Requests holding one of the --db-max-requests slots (using or waiting on the database).",
		}, func() float64 { return float64(len(s.gate.slots)) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "swarmscore_db_requests_refused_total",
			Help: "Requests answered 503 at once because every --db-max-requests slot was taken.",
		}, func() float64 { return float64(s.gate.refused.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "swarmscore_db_unavailable",
			Help: "1 while a database outage is confirmed (requests found it unavailable and a probe failed), else 0.",
		}, func() float64 {
			if s.health.down() {
				return 1
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "swarmscore_auth_throttled_total",
			Help: "Operator requests refused (429) because their client failed to authenticate too often.",
		}, func() float64 { return float64(s.authThrottled.Load()) }),
	)
}
