package cli

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// logFlushEvery bounds how long a log line of serve waits in memory.
const logFlushEvery = 100 * time.Millisecond

// logBuffer gathers serve's log lines (the access log is one a request)
// and writes them at most logFlushEvery later, or as soon as 64 KiB
// wait, so that a busy server makes one write system call per batch
// rather than one per request (it was ≈ 6% of a cached certificate's CPU:
// docs/BENCHMARKS.md, "The public read routes"). Close writes what is left;
// a process killed outright loses at most the last logFlushEvery of lines.
// Lines are written whole and in order. Safe for concurrent use.
type logBuffer struct {
	mu     sync.Mutex
	w      *bufio.Writer
	closed bool // Close ran: lines go straight through
	stop   chan struct{}
	done   chan struct{}
}

func newLogBuffer(w io.Writer) *logBuffer {
	b := &logBuffer{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go b.flushing()
	return b
}

func (b *logBuffer) flushing() {
	defer close(b.done)
	t := time.NewTicker(logFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.mu.Lock()
			b.w.Flush()
			b.mu.Unlock()
		}
	}
}

// Write takes one line (the slog handlers write a record in one call).
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		n, err := b.w.Write(p)
		if err == nil {
			err = b.w.Flush()
		}
		return n, err
	}
	if len(p) > b.w.Available() && b.w.Buffered() > 0 {
		// Whole lines only: what waits goes first.
		if err := b.w.Flush(); err != nil {
			return 0, err
		}
	}
	return b.w.Write(p)
}

// Close stops the timer and writes the lines still waiting. Lines written
// after it are written at once.
func (b *logBuffer) Close() error {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return b.w.Flush()
}
