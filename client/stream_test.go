package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/swarmscore/swarmscore/api"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// ingestServer answers POST /swarmscore/events like the server does for
// NDJSON: every non-blank body line is one event, numbered by its body
// line; a line containing "bad" is rejected, "dup" is a duplicate, the
// rest accepted. fail, when set, decides the answer of each request
// instead (by its 1-based number) when it returns a status.
type ingestServer struct {
	mu       sync.Mutex
	requests int
	bodies   []string
	fail     func(n int, w http.ResponseWriter) bool
}

func (s *ingestServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body bytes.Buffer
	body.ReadFrom(r.Body)
	s.mu.Lock()
	s.requests++
	n := s.requests
	s.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer sst_secret" {
		w.WriteHeader(401)
		fmt.Fprint(w, `{"type":"https://swarmscore.dev/problems/unauthorized","title":"Unauthorized","status":401,"detail":"no"}`)
		return
	}
	if s.fail != nil && s.fail(n, w) {
		return
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body.String())
	s.mu.Unlock()
	res := IngestResult{Rejected: []Rejection{}}
	sc := bufio.NewScanner(&body)
	sc.Buffer(nil, api.MaxBodyBytes)
	line, index := 0, 0
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		if l == "" {
			continue
		}
		switch {
		case strings.Contains(l, "bad"):
			res.Rejected = append(res.Rejected, Rejection{Index: index, Line: line, ID: l, Reason: "bad " + l})
		case strings.Contains(l, "dup"):
			res.Duplicates++
		default:
			res.Accepted++
		}
		index++
	}
	json.NewEncoder(w).Encode(res)
}

func newIngestTest(t *testing.T, s *ingestServer) *Client {
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	c, err := New(ts.URL, WithToken("sst_secret"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestIngestStream: batches within the limits (events and bytes), every
// rejection numbered by the input's lines, blank lines and a leading
// byte-order mark skipped, an overlong line rejected unsent.
func TestIngestStream(t *testing.T) {
	s := &ingestServer{}
	c := newIngestTest(t, s)
	long := `{"pad":"` + strings.Repeat("x", api.MaxLineBytes) + `"}`
	in := "\xef\xbb\xbfe1\n\n  \ne2 bad\ne3 dup\n" + long + "\ne4\r\ne5 bad\ne6\n\ne7 bad" // no newline at the end
	var progress []StreamProgress
	res, err := c.IngestStream(context.Background(), strings.NewReader(in), StreamOptions{MaxEvents: 2, Progress: func(p StreamProgress) {
		progress = append(progress, p)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 3 || res.Duplicates != 1 || len(res.Rejected) != 4 {
		t.Fatalf("result %+v", res)
	}
	want := []Rejection{
		{Index: 1, Line: 4, ID: "e2 bad", Reason: "bad e2 bad"},
		{Index: 3, Line: 6, Reason: "line longer than 65536 bytes"},
		{Index: 5, Line: 8, ID: "e5 bad", Reason: "bad e5 bad"},
		{Index: 7, Line: 11, ID: "e7 bad", Reason: "bad e7 bad"},
	}
	for i, r := range res.Rejected {
		if r != want[i] {
			t.Errorf("rejection %d = %+v, want %+v", i, r, want[i])
		}
	}
	if got := strings.Join(s.bodies, "|"); got != "e1\ne2 bad\n|e3 dup\ne4\n|e5 bad\ne6\n|e7 bad\n" {
		t.Errorf("bodies %q", got)
	}
	if len(progress) != 4 || progress[3].Lines != 11 || progress[3].Batches != 4 || progress[1].Accepted != 2 {
		t.Errorf("progress %+v", progress)
	}

	// Bytes bound a batch too: 3 lines of 30 KiB in 64 KiB + 1 bodies.
	s.bodies = nil
	line := strings.Repeat("y", 30<<10)
	res, err = c.IngestStream(context.Background(), strings.NewReader(line+"\n"+line+"\n"+line+"\n"), StreamOptions{MaxBytes: api.MaxLineBytes + 1})
	if err != nil || res.Accepted != 3 || len(s.bodies) != 2 || len(s.bodies[0]) != 2*(len(line)+1) {
		t.Fatalf("byte-bounded: %+v %v (%d bodies)", res, err, len(s.bodies))
	}
	for _, o := range []StreamOptions{{MaxEvents: api.MaxEvents + 1}, {MaxBytes: api.MaxBodyBytes + 1}, {MaxBytes: api.MaxLineBytes}, {Attempts: -1}} {
		if _, err := c.IngestStream(context.Background(), strings.NewReader("e\n"), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	// Nothing to send: no request.
	s.requests = 0
	if res, err := c.IngestStream(context.Background(), strings.NewReader("\n \n"), StreamOptions{}); err != nil || res.Accepted != 0 || s.requests != 0 {
		t.Fatalf("blank input: %+v %v, %d requests", res, err, s.requests)
	}
}

func problem(w http.ResponseWriter, status int, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"https://swarmscore.dev/problems/x","title":"T","status":%d,"detail":"d"}`, status)
}

// TestIngestStreamRetries: transient failures (503, 429 with Retry-After,
// a dropped connection) are retried with the same batch; an answer such
// as 401 or 400 is not; attempts are bounded.
func TestIngestStreamRetries(t *testing.T) {
	s := &ingestServer{fail: func(n int, w http.ResponseWriter) bool {
		switch n {
		case 1:
			problem(w, 503, "")
		case 2:
			problem(w, 429, "0")
		case 3: // the connection drops before an answer
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		default:
			return false
		}
		return true
	}}
	c := newIngestTest(t, s)
	start := time.Now()
	res, err := c.IngestStream(context.Background(), strings.NewReader("e1\ne2\n"), StreamOptions{Backoff: time.Millisecond})
	if err != nil || res.Accepted != 2 || s.requests != 4 || len(s.bodies) != 1 || s.bodies[0] != "e1\ne2\n" {
		t.Fatalf("after three transient failures: %+v %v, %d requests, bodies %q", res, err, s.requests, s.bodies)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("retries took %s", time.Since(start))
	}

	// Attempts are bounded; the error says which lines were not recorded.
	s = &ingestServer{fail: func(n int, w http.ResponseWriter) bool {
		if n > 1 {
			problem(w, 503, "")
			return true
		}
		return false
	}}
	c = newIngestTest(t, s)
	res, err = c.IngestStream(context.Background(), strings.NewReader("e1\ne2\ne3\n"), StreamOptions{MaxEvents: 2, Attempts: 3, Backoff: time.Millisecond})
	var be *BatchError
	var p *Problem
	if !errors.As(err, &be) || be.FirstLine != 3 || be.LastLine != 3 || be.Attempts != 3 || !errors.As(err, &p) || p.Status != 503 ||
		res.Accepted != 2 || s.requests != 4 {
		t.Fatalf("bounded: %+v %v (%d requests)", res, err, s.requests)
	}

	// An answer is final.
	for _, status := range []int{400, 401, 403, 413, 500} {
		s = &ingestServer{fail: func(n int, w http.ResponseWriter) bool { problem(w, status, ""); return true }}
		c = newIngestTest(t, s)
		_, err := c.IngestStream(context.Background(), strings.NewReader("e1\n"), StreamOptions{Backoff: time.Millisecond})
		if !errors.As(err, &p) || p.Status != status || s.requests != 1 {
			t.Errorf("%d: %v after %d requests", status, err, s.requests)
		}
	}

	// The context ends a wait.
	s = &ingestServer{fail: func(n int, w http.ResponseWriter) bool { problem(w, 503, "60"); return true }}
	c = newIngestTest(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.IngestStream(ctx, strings.NewReader("e1\n"), StreamOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled wait: %v", err)
	}
}
