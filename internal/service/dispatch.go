package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/webhook"
)

// DispatchConfig is how a Dispatcher delivers. Zero fields take the
// defaults named.
type DispatchConfig struct {
	// Policy is where deliveries may go, checked on the URL and at every
	// dial (webhook.URLPolicy.Control).
	Policy webhook.URLPolicy
	// Retry is the schedule of failed messages (webhook.DefaultRetry).
	Retry webhook.Retry
	// Timeout bounds one attempt, from dial to the end of the answer's
	// headers (10 s).
	Timeout time.Duration
	// Workers is how many attempts run at once (8).
	Workers int
	// Batch is how many messages one claim takes (Workers × 4).
	Batch int
	// Poll is the wait between claims that found nothing due (500 ms).
	Poll time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives failed attempts (at INFO) and failed messages
	// (WARN); never a secret or a payload. nil discards.
	Logger *slog.Logger
	// Transport, when set, replaces the guarded transport (tests of the
	// dial guard itself must not set it).
	Transport http.RoundTripper
}

// Dispatcher delivers the webhook outbox: it claims due messages, posts
// each to its endpoint signed per Standard Webhooks, and records the
// attempt, retrying failures on the schedule until they fail for good.
// Several dispatchers may share a database (WebhookOutbox): each message
// is attempted by one at a time, and a message whose attempt was not
// recorded (the process died) is attempted again, with the same id, when
// its lease runs out.
type Dispatcher struct {
	out    WebhookOutbox
	cfg    DispatchConfig
	client *http.Client
	log    *slog.Logger
}

// NewDispatcher makes a dispatcher of the outbox out.
func NewDispatcher(out WebhookOutbox, cfg DispatchConfig) *Dispatcher {
	if cfg.Retry == (webhook.Retry{}) {
		cfg.Retry = webhook.DefaultRetry
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.Batch <= 0 {
		cfg.Batch = cfg.Workers * 4
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	rt := cfg.Transport
	if rt == nil {
		d := &net.Dialer{Timeout: cfg.Timeout, Control: cfg.Policy.Control}
		rt = &http.Transport{
			// No proxy: a proxy would dial the receiver, past the
			// guard on the addresses dialed.
			Proxy:                 nil,
			DialContext:           d.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   cfg.Workers,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   cfg.Timeout,
			ResponseHeaderTimeout: cfg.Timeout,
		}
	}
	client := &http.Client{Transport: rt, Timeout: cfg.Timeout,
		// A redirect is an answer, not a success: following it would
		// send the signed payload to a URL nobody registered.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Dispatcher{out: out, cfg: cfg, client: client, log: log}
}

// lease is how long a claim keeps a message from other dispatchers: two
// attempts' timeouts (one for the answer, one for a slow dial and
// transfer) and a margin for recording it.
func (d *Dispatcher) lease() time.Duration { return 2*d.cfg.Timeout + 5*time.Second }

// Run delivers until ctx ends, claiming again at once after a full batch
// and after Poll otherwise. A database error is logged and retried after
// Poll. It returns ctx's error.
func (d *Dispatcher) Run(ctx context.Context) error {
	for {
		n, err := d.DeliverDue(ctx)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("webhook dispatcher: cannot read the outbox", "err", err)
		}
		if n == d.cfg.Batch && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d.cfg.Poll):
		}
	}
}

// DeliverDue claims one batch of due messages, attempts each (Workers at
// once) and records the attempts; it returns how many it claimed. Errors:
// the outbox's (ErrUnavailable) when the claim fails; an attempt's record
// that fails is logged, and the message is attempted again after its
// lease.
func (d *Dispatcher) DeliverDue(ctx context.Context) (int, error) {
	now := d.cfg.Now().UTC()
	claimed, err := d.out.ClaimWebhookMessages(ctx, now, now.Add(d.lease()), d.cfg.Batch)
	if err != nil {
		return 0, err
	}
	work := make(chan webhook.Claimed)
	var wg sync.WaitGroup
	for range min(d.cfg.Workers, len(claimed)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				d.deliver(ctx, c)
			}
		}()
	}
	for _, c := range claimed {
		work <- c
	}
	close(work)
	wg.Wait()
	return len(claimed), nil
}

// maxAnswer is how much of an answer's body is read (and discarded), so
// that the connection can be reused without reading an endless body.
const maxAnswer = 64 << 10

// deliver makes one attempt of c and records it.
func (d *Dispatcher) deliver(ctx context.Context, c webhook.Claimed) {
	start := d.cfg.Now().UTC()
	status, aerr := d.post(ctx, c, start)
	a := webhook.Attempt{N: c.Attempts + 1, At: start, Status: status, Duration: d.cfg.Now().Sub(start)}
	r := webhook.Result{MessageID: c.ID, Attempt: a, State: webhook.Delivered}
	if aerr != nil {
		if ctx.Err() != nil {
			return // shutting down: the lease runs out and another attempt is made
		}
		r.Attempt.Error = aerr.Error()
		next, ok := d.cfg.Retry.Next(a.N, c.CreatedAt, start)
		if ok {
			r.State, r.NextAttemptAt = webhook.Pending, next
			d.log.Info("webhook attempt failed", "message", c.ID, "endpoint", c.EndpointID, "attempt", a.N, "status", status,
				"err", r.Attempt.Error, "next_attempt_at", next)
		} else {
			r.State = webhook.Failed
			d.log.Warn("webhook message failed: no attempt succeeded in time", "message", c.ID, "endpoint", c.EndpointID,
				"attempts", a.N, "status", status, "err", r.Attempt.Error)
		}
	}
	// The record is written even when ctx ends now: the attempt was made.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := d.out.RecordWebhookAttempt(rctx, r); err != nil {
		d.log.Warn("webhook dispatcher: cannot record an attempt; the message will be attempted again", "message", c.ID, "err", err)
	}
}

// post sends c once; status is the answer's (0 without one) and err
// says why the attempt failed (nil for a 2xx).
func (d *Dispatcher) post(ctx context.Context, c webhook.Claimed, at time.Time) (int, error) {
	if _, err := d.cfg.Policy.CheckURL(c.URL); err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(c.Payload))
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errkind.ErrInvalid, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "swarmscore-webhooks/1")
	for k, v := range webhook.Headers(c.Secret, c.ID, at, c.Payload) {
		req.Header.Set(k, v)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, attemptError(err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, errors.New("answered " + strconv.Itoa(resp.StatusCode))
	}
	return resp.StatusCode, nil
}

// attemptError says why no answer came, in words that name neither the
// secret nor the payload (net/http's errors quote the URL, which the
// operator registered and sees anyway).
func attemptError(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return errors.New("timed out")
	case errkind.Code(err) == webhook.CodeInvalidURL:
		return fmt.Errorf("refused: %w", err)
	}
	return err
}
