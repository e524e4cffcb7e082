package client

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/swarmscore/swarmscore/api"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"
)

// StreamOptions tunes IngestStream. The zero value sends batches as large
// as the server accepts and tries each one up to 5 times.
type StreamOptions struct {
	// MaxEvents is the most events sent in one request: 1..api.MaxEvents
	// (0 means api.MaxEvents).
	MaxEvents int
	// MaxBytes bounds one request body: api.MaxLineBytes+1..api.MaxBodyBytes
	// (0 means api.MaxBodyBytes).
	MaxBytes int
	// Attempts is how many times one batch is sent before IngestStream
	// gives up (0 means 5).
	Attempts int
	// Backoff is the wait before the first retry (0 means 500 ms); each
	// further retry waits twice as long, up to 30 s, with up to 50%
	// jitter. A 429 or 503 that says Retry-After waits that long instead
	// (at most a minute).
	Backoff time.Duration
	// Progress, if not nil, is called after every batch the server
	// recorded, with the running totals.
	Progress func(StreamProgress)
}

// StreamProgress is reported after each recorded batch.
type StreamProgress struct {
	Lines   int // input lines read so far, blank ones included
	Batches int // requests the server answered with a result
	// The running totals; rejections carry input line numbers.
	IngestResult
}

// BatchError is returned by IngestStream when a batch could not be
// recorded: the input lines it held, how many times it was sent, and the
// last failure (a *Problem, a transport error, or ctx's error). Batches
// before it were recorded; it and the rest of the input were not, unless a
// lost response hid a commit (sending the input again is then safe: the
// server reports those events as duplicates).
type BatchError struct {
	FirstLine, LastLine int
	Attempts            int
	Err                 error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("lines %d-%d not recorded after %d attempt(s): %v", e.FirstLine, e.LastLine, e.Attempts, e.Err)
}

func (e *BatchError) Unwrap() error { return e.Err }

// IngestStream sends the NDJSON events read from r (a file of any size) to
// POST /swarmscore/events with the operator token, in batches within the
// server's limits (at most api.MaxEvents events and api.MaxBodyBytes per
// request), reading r once, in memory bounded by one batch. Blank lines are
// skipped and a UTF-8 byte-order mark at the start of r is dropped, as the
// server does; a line longer than api.MaxLineBytes is rejected here, unsent.
//
// A batch that fails transiently (a connection error, or a 429, 502, 503
// or 504 answer) is sent again, up to opt.Attempts times with backoff:
// ingest is idempotent, so a batch that was recorded although its answer
// was lost is reported again as duplicates, never recorded twice. Any
// other problem (401, 403, 413, ...) stops at once.
//
// The result counts every input event once, and its rejections carry the
// line numbers of r and the 0-based position among r's non-blank lines,
// whatever the batching. On an error (a *BatchError, or r's read error)
// the result covers the batches recorded before it.
func (c *Client) IngestStream(ctx context.Context, r io.Reader, opt StreamOptions) (*IngestResult, error) {
	if err := opt.normalise(); err != nil {
		return &IngestResult{Rejected: []Rejection{}}, err
	}
	s := &streamer{c: c, opt: opt, in: bufio.NewReaderSize(r, 64<<10),
		total: IngestResult{Rejected: []Rejection{}}}
	if b, err := s.in.Peek(3); err == nil && string(b) == "\xef\xbb\xbf" {
		s.in.Discard(3)
	}
	for {
		more, err := s.fill()
		if err != nil {
			return &s.total, err
		}
		if err := s.flush(ctx); err != nil {
			return &s.total, err
		}
		if !more {
			return &s.total, nil
		}
	}
}

func (o *StreamOptions) normalise() error {
	if o.MaxEvents == 0 {
		o.MaxEvents = api.MaxEvents
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = api.MaxBodyBytes
	}
	if o.Attempts == 0 {
		o.Attempts = 5
	}
	if o.Backoff == 0 {
		o.Backoff = 500 * time.Millisecond
	}
	switch {
	case o.MaxEvents < 1 || o.MaxEvents > api.MaxEvents:
		return fmt.Errorf("client: StreamOptions.MaxEvents %d is outside 1..%d", o.MaxEvents, api.MaxEvents)
	case o.MaxBytes <= api.MaxLineBytes || o.MaxBytes > api.MaxBodyBytes:
		return fmt.Errorf("client: StreamOptions.MaxBytes %d is outside %d..%d", o.MaxBytes, api.MaxLineBytes+1, api.MaxBodyBytes)
	case o.Attempts < 1 || o.Backoff < 0:
		return fmt.Errorf("client: StreamOptions.Attempts must be at least 1 and Backoff not negative")
	}
	return nil
}

// streamer holds one IngestStream: the input, the batch being filled and
// the running totals.
type streamer struct {
	c     *Client
	opt   StreamOptions
	in    *bufio.Reader
	buf   []byte // the line being read
	line  int    // input lines read
	index int    // non-blank input lines read
	total IngestResult
	sent  int // batches recorded

	// The batch: its body, and for each body line its input line and
	// index; the input lines rejected here while filling it; a line read
	// but left for the next batch.
	body    []byte
	lines   []int
	indexes []int
	local   []Rejection
	held    *heldLine
}

type heldLine struct {
	data        []byte
	line, index int
}

// fill reads lines into the batch until it holds opt.MaxEvents events,
// the next line would take its body past opt.MaxBytes (that line is held
// for the next batch), or the input ends (more is false).
func (s *streamer) fill() (more bool, err error) {
	s.body, s.lines, s.indexes, s.local = s.body[:0], s.lines[:0], s.indexes[:0], s.local[:0]
	if h := s.held; h != nil {
		s.held = nil
		s.add(h.data, h.line, h.index)
	}
	for len(s.lines) < s.opt.MaxEvents {
		data, tooLong, err := s.readLine()
		if err == io.EOF && len(data) == 0 && !tooLong {
			return false, nil
		}
		if err != nil && err != io.EOF {
			return false, fmt.Errorf("client: reading events after line %d: %w", s.line, err)
		}
		s.line++
		if tooLong {
			s.local = append(s.local, Rejection{Index: s.index, Line: s.line, Reason: fmt.Sprintf("line longer than %d bytes", api.MaxLineBytes)})
			s.index++
			continue
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 {
			continue
		}
		if len(s.body)+len(data)+1 > s.opt.MaxBytes {
			s.held = &heldLine{append([]byte(nil), data...), s.line, s.index}
			s.index++
			return true, nil
		}
		s.add(data, s.line, s.index)
		s.index++
	}
	return true, nil
}

func (s *streamer) add(data []byte, line, index int) {
	s.body = append(append(s.body, data...), '\n')
	s.lines = append(s.lines, line)
	s.indexes = append(s.indexes, index)
}

// readLine reads one line without its terminator into s.buf; a line longer
// than api.MaxLineBytes is read to its end and discarded (tooLong).
func (s *streamer) readLine() (data []byte, tooLong bool, err error) {
	s.buf = s.buf[:0]
	for {
		chunk, isPrefix, err := s.in.ReadLine()
		if !tooLong {
			if len(s.buf)+len(chunk) > api.MaxLineBytes {
				tooLong, s.buf = true, s.buf[:0]
			} else {
				s.buf = append(s.buf, chunk...)
			}
		}
		if err != nil || !isPrefix {
			return s.buf, tooLong, err
		}
	}
}

// flush sends the batch (if it holds any event) and adds its outcome to the
// totals, its rejections renumbered to the input's lines.
func (s *streamer) flush(ctx context.Context) error {
	rej := append([]Rejection(nil), s.local...)
	if len(s.lines) > 0 {
		res, attempts, err := s.send(ctx)
		if err != nil {
			return &BatchError{FirstLine: s.lines[0], LastLine: s.lines[len(s.lines)-1], Attempts: attempts, Err: err}
		}
		s.sent++
		s.total.Accepted += res.Accepted
		s.total.Duplicates += res.Duplicates
		s.total.Superseded += res.Superseded
		for _, rj := range res.Rejected {
			k := rj.Line - 1 // the body has no blank line: its line k+1 is event k
			if k < 0 || k >= len(s.lines) {
				k = rj.Index
			}
			if k >= 0 && k < len(s.lines) {
				rj.Line, rj.Index = s.lines[k], s.indexes[k]
			}
			rej = append(rej, rj)
		}
	}
	// The lines rejected here and by the server, in input order.
	slices.SortStableFunc(rej, func(a, b Rejection) int { return cmp.Compare(a.Index, b.Index) })
	s.total.Rejected = append(s.total.Rejected, rej...)
	if s.opt.Progress != nil && (len(s.lines) > 0 || len(rej) > 0) {
		s.opt.Progress(StreamProgress{Lines: s.line, Batches: s.sent, IngestResult: s.total})
	}
	return nil
}

// Waits between attempts.
const (
	maxBackoff    = 30 * time.Second
	maxRetryAfter = time.Minute
)

// send posts the batch, retrying transient failures, and reports how many
// attempts it made.
func (s *streamer) send(ctx context.Context) (*IngestResult, int, error) {
	backoff := s.opt.Backoff
	for attempt := 1; ; attempt++ {
		res, err := s.c.ingest(ctx, bytes.NewReader(s.body), "application/x-ndjson")
		if err == nil {
			return res, attempt, nil
		}
		retry, after := transient(err)
		if !retry || attempt >= s.opt.Attempts || ctx.Err() != nil {
			return nil, attempt, err
		}
		wait := min(after, maxRetryAfter)
		if after == 0 {
			wait = backoff + rand.N(backoff/2+1)
			backoff = min(2*backoff, maxBackoff)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, attempt, ctx.Err()
		case <-t.C:
		}
	}
}

// transient reports whether a failed request may succeed if sent again,
// and how long the server asked to wait. Problems that say the server is
// overloaded or down are transient; other problems are answers. Anything
// else (a refused or reset connection, a timeout, a response cut short)
// happened on the way, and is.
func transient(err error) (bool, time.Duration) {
	var p *Problem
	if errors.As(err, &p) {
		switch p.Status {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true, p.RetryAfter
		}
		return false, 0
	}
	return true, 0
}
