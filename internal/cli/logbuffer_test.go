package cli

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer records each Write as one call.
type lockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() (string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String(), b.writes
}

// TestLogBuffer: lines reach the writer in order, whole, in a few writes,
// within logFlushEvery (and a margin) without Close; Close writes the rest,
// and a line after Close goes straight through.
func TestLogBuffer(t *testing.T) {
	var out lockedBuffer
	b := newLogBuffer(&out)
	var want strings.Builder
	for i := range 2000 { // 2000 lines of 50 bytes: more than one buffer
		line := fmt.Sprintf("%-49d\n", i)
		want.WriteString(line)
		if _, err := b.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(logFlushEvery + 2*time.Second)
	for {
		got, writes := out.String()
		if got == want.String() {
			if writes > 4 {
				t.Fatalf("%d lines in %d writes", 2000, writes)
			}
			break
		}
		if !strings.HasPrefix(want.String(), got) || len(got)%50 != 0 {
			t.Fatalf("written so far is not whole lines in order: %d bytes", len(got))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d bytes written after %s", len(got), want.Len(), logFlushEvery)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Write([]byte("last\n"))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := out.String(); !strings.HasSuffix(got, "last\n") {
		t.Fatal("Close did not write the waiting line")
	}
	b.Write([]byte("after\n"))
	if got, _ := out.String(); !strings.HasSuffix(got, "after\n") {
		t.Fatal("a line after Close waits")
	}
}
