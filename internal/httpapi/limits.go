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
	// The agent card is built once, at start.
	"GET /.well-known/agent-card.json": true,
}

// dbGate hands out the slots of requests that use the database.
type dbGate struct {
	timeout time.Duration
	slots   chan struct{}
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

// dbReason is why the database caused a 503: the reason label of
// swarmscore_db_unavailable_responses_total and of an outage's last log
// line. Every 503 the server answers is the database's: it is a refusal
// for want of a slot, or an error of kind errkind.Unavailable, which only
// the database's failures carry (service.Store's contract).
type dbReason int

const (
	// reasonTimeout: the database did not answer before the request's
	// deadline (--db-timeout; /readyz's own): a partition, a database
	// overloaded or holding a lock the request needs.
	reasonTimeout dbReason = iota
	// reasonRefused: it failed the request before the deadline: a
	// connection refused or lost, a login or a database refused, a server
	// shutting down, a SQLite file locked or unreadable.
	reasonRefused
	// reasonSlots: every --db-max-requests slot was taken; refused at once.
	reasonSlots
	numReasons
)

var reasonNames = [numReasons]string{"timeout", "refused", "slots"}

// reasonOf classifies the 503 answered with err for a request whose
// context (bounded by its slot's deadline) is ctx. A request past its
// deadline timed out, whatever words the driver found for it.
func reasonOf(ctx context.Context, err error) dbReason {
	var busy *busyError
	switch {
	case errors.As(err, &busy):
		return reasonSlots
	case errors.Is(err, context.DeadlineExceeded), errors.Is(ctx.Err(), context.DeadlineExceeded):
		return reasonTimeout
	}
	return reasonRefused
}

// dbUnavailable records a 503 the database caused, answered to r with
// err: in swarmscore_db_unavailable_responses_total and in the outage it
// belongs to. It returns the level to log the request at
// (health.unavailable); a refusal for want of a slot is logged here, one
// line per rateLimitedLogEvery (logBusy), and not by the caller.
func (s *Server) dbUnavailable(r *http.Request, err error, level slog.Level) slog.Level {
	reason := reasonOf(r.Context(), err)
	if reason == reasonSlots {
		s.logBusy(r)
	}
	// A request that timed out found the database unavailable when it
	// began to wait, a timeout before its deadline.
	began := time.Now()
	if dl, ok := r.Context().Deadline(); ok && reason == reasonTimeout {
		wait := s.gate.timeout
		if r.Pattern == "GET /readyz" {
			wait = s.health.timeout
		}
		if b := dl.Add(-wait); b.Before(began) {
			began = b
		}
	}
	return s.health.unavailable(reason, err, level, began)
}

// health counts the 503s the database causes and follows its outages, so
// that each is logged once when it is confirmed (ERROR) and once when it
// ends (WARN, with its length and its 503s by reason) instead of once per
// refused request.
//
// An episode begins with the first 503 the database causes while it is
// healthy, whatever the reason; that 503 is logged as usual, the
// episode's later ones at DEBUG only. The 503 starts a probe:
// ReadinessService.Ready at once, then every probeEvery (never sooner than
// probeEvery after the previous probe, so that a busy server's bursts of
// refusals do not become a stream of pings). The outage is confirmed when
// a probe fails, or when probes succeed but, a probe interval or more
// into the episode, requests still get 503s and either have got them for
// a probe interval or more, or hold every slot (statements that a lock
// keeps waiting: the database answers, but not the requests). The
// episode ends at the first probe that succeeds with no 503 for the
// Retry-After of a 503 and the database timeout: long enough for a
// client honouring Retry-After to come back and wait out the timeout
// again, so that an outage's 503s are not split into episodes of one, a
// lone 503 is not an outage, and the 503s of requests that were still
// waiting when the database came back are the outage's too. Nothing waits for the probe: requests go on trying
// the database, so recovery needs no probe either.
type health struct {
	svc     ReadinessService
	log     *slog.Logger
	timeout time.Duration // of each probe
	quiet   time.Duration // without a 503 before a successful probe ends an episode
	slots   func() (used, max int)
	// total counts every 503 the database caused since the start, by
	// reason: swarmscore_db_unavailable_responses_total.
	total [numReasons]atomic.Uint64

	mu      sync.Mutex
	state   healthState
	count   [numReasons]int64 // the episode's 503s
	since   time.Time         // the episode's first 503
	began   time.Time         // when the first request of those that got its 503s began to wait
	last    time.Time         // its latest
	lastErr error             // and that one's error
	upSince time.Time         // the start of the latest run of successful probes, if the latest succeeded
	probed  time.Time         // the latest probe's start, of any episode
	closed  bool
	ctx     context.Context // ends at close, and with it a probe's wait
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

type healthState int32

const (
	healthy healthState = iota
	suspect             // the database caused a 503; probing
	outage              // confirmed
)

// unavailable records a 503 the database caused (for reason, answered
// with err, to a request that began to wait at began) and returns the
// level to log it at: level for the first of an episode (which starts the
// probe), DEBUG for the others.
func (h *health) unavailable(reason dbReason, err error, level slog.Level, began time.Time) slog.Level {
	h.total[reason].Add(1)
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != healthy {
		h.count[reason]++
		h.last, h.lastErr = now, err
		if began.Before(h.began) {
			h.began = began
		}
		return slog.LevelDebug
	}
	if h.closed {
		return level
	}
	h.state = suspect
	h.count = [numReasons]int64{}
	h.count[reason] = 1
	h.since, h.began, h.last, h.lastErr, h.upSince = now, began, now, err, time.Time{}
	if h.ctx == nil {
		h.ctx, h.stop = context.WithCancel(context.Background())
	}
	h.wg.Add(1)
	go h.probe()
	return level
}

// episode reports whether 503s are being followed (an outage suspected
// or confirmed).
func (h *health) episode() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state != healthy
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
		h.mu.Lock()
		wait := time.Until(h.probed.Add(probeEvery))
		done := h.ctx.Done()
		h.mu.Unlock()
		if wait > 0 {
			select {
			case <-done:
				return
			case <-time.After(wait):
			}
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(h.ctx, h.timeout)
		err := h.svc.Ready(ctx)
		cancel()
		if h.ctx.Err() != nil {
			return // closed: the failure is the probe's own
		}
		h.mu.Lock()
		h.probed = start
		quiet := start.Sub(h.last) >= h.quiet
		switch {
		case err != nil:
			h.upSince = time.Time{}
			h.confirm(err)
		case quiet:
			if h.upSince.IsZero() {
				h.upSince = start
			}
			if h.state == outage {
				end := h.upSince
				if h.last.After(end) {
					end = h.last
				}
				h.log.Warn("database available again", h.tally(end)...)
			}
			h.state = healthy
			h.mu.Unlock()
			return
		default:
			if h.upSince.IsZero() {
				h.upSince = start
			}
			used, most := h.slots()
			if start.Sub(h.since) >= probeEvery && (h.last.Sub(h.since) >= probeEvery || used == most) {
				h.confirm(fmt.Errorf("it answers a probe, but requests go on getting 503 (%d in %s; %d of %d slots taken); the latest: %w",
					h.total503(), h.last.Sub(h.since).Round(time.Millisecond), used, most, h.lastErr))
			}
		}
		h.mu.Unlock()
	}
}

// confirm makes a suspected outage an outage and logs it, with err saying
// why. h.mu is held.
func (h *health) confirm(err error) {
	if h.state == suspect {
		h.state = outage
		h.log.Error("database unavailable: answering 503 until it recovers", "err", err)
	}
}

// total503 is the number of the episode's 503s. h.mu is held.
func (h *health) total503() int64 {
	var n int64
	for _, c := range h.count {
		n += c
	}
	return n
}

// tally is what the log says of an episode that ended at end: its length
// (from the moment the first request that got one of its 503s began to
// wait) and its 503s, in all and by reason. h.mu is held.
func (h *health) tally(end time.Time) []any {
	by := make([]any, 0, 2*numReasons)
	for r, n := range h.count {
		by = append(by, reasonNames[r], n)
	}
	return []any{"outage_ms", end.Sub(h.began).Milliseconds(), "unavailable_responses", h.total503(),
		slog.Group("unavailable_by_reason", by...)}
}

// close stops the probe, if one runs, and waits for it. An outage still
// going on is logged with its tally so far: its 503s are in no other line.
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
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == outage {
		h.log.Warn("stopping during a database outage", h.tally(time.Now())...)
		h.state = healthy
	}
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
	s.health = &health{svc: s.svc.Schema, log: s.log, timeout: min(readyTimeout, s.gate.timeout), quiet: retryAfterUnavailable*time.Second + s.gate.timeout,
		slots: func() (int, int) { return len(s.gate.slots), cap(s.gate.slots) }}
	for r, name := range reasonNames {
		s.metrics.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "swarmscore_db_unavailable_responses_total",
			Help:        "Responses 503 the database caused, API and pages, by reason: timeout (no answer within --db-timeout), refused (it failed the request sooner), slots (every --db-max-requests slot taken).",
			ConstLabels: prometheus.Labels{"reason": name},
		}, func() float64 { return float64(s.health.total[r].Load()) }))
	}
	s.metrics.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "swarmscore_db_requests_in_flight",
			Help: "Requests holding one of the --db-max-requests slots (using or waiting on the database).",
		}, func() float64 { return float64(len(s.gate.slots)) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "swarmscore_db_requests_refused_total",
			Help: `Deprecated: swarmscore_db_unavailable_responses_total{reason="slots"}, which this equals. Requests answered 503 at once because every --db-max-requests slot was taken.`,
		}, func() float64 { return float64(s.health.total[reasonSlots].Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "swarmscore_db_unavailable",
			Help: "1 while a database outage is confirmed (a probe failed, or requests went on getting 503 though it answered probes), else 0.",
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
