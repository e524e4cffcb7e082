package web

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/httpapi"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// TestAgentPageCached serves an agent's page from the rendered-page cache:
// the same bytes each time but the nonce, which is each response's own;
// and a new page as soon as one of its inputs changes (the host its
// snippet names, the clock's words for the expiry, a report that changes
// the score).
func TestAgentPageCached(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	nonces := map[string]bool{}
	get := func(target string, hdr ...string) string {
		t.Helper()
		r := s.get(target, hdr...)
		body := r.page(t, 200)
		if cl := r.header.Get("Content-Length"); cl != strconv.Itoa(len(body)) {
			t.Fatalf("Content-Length %s for %d bytes", cl, len(body))
		}
		nonce := checkSecurityHeaders(t, r.header)
		if nonces[nonce] {
			t.Fatalf("nonce %s served twice", nonce)
		}
		nonces[nonce] = true
		if strings.Contains(body, placeholderNonce) {
			t.Fatal("the page holds the placeholder nonce")
		}
		return strings.ReplaceAll(body, nonce, "NONCE")
	}
	first := get("/agents/agent-7")
	if len(s.pages.pages.m) != 1 {
		t.Fatalf("%d pages cached, want 1", len(s.pages.pages.m))
	}
	for range 3 {
		if got := get("/agents/agent-7"); got != first {
			t.Fatal("a cached page differs from the first")
		}
	}
	head := s.do("HEAD", "/agents/agent-7", nil)
	size := len(first) + strings.Count(first, "NONCE")*(len(placeholderNonce)-len("NONCE"))
	if head.code != 200 || head.body != "" || head.header.Get("Content-Length") != strconv.Itoa(size) {
		t.Fatalf("HEAD: %d, %d bytes, Content-Length %s", head.code, len(head.body), head.header.Get("Content-Length"))
	}

	other := get("http://scores.example:8443/agents/agent-7")
	mustContain(t, other, "[![SwarmScore](http://scores.example:8443/badge/agent-7.svg)]")
	mustContain(t, get("/agents/agent-7"), "(in 7 days)")
	s.clock.t = s.clock.t.Add(2 * time.Hour)
	mustContain(t, get("/agents/agent-7"), "(in 6 days)")

	// One more VERIFIED session: 81 of 77, 308 points for Conduit.
	ev := ledger.Event{Type: ledger.ConduitSession, ID: "late-1", AgentID: "agent-7", Status: ledger.Verified,
		StartedAt: s.clock.t.Add(-time.Hour), EndedAt: s.clock.t.Add(-time.Minute)}
	if _, err := s.u.Ingest.Ingest(context.Background(), "op-1", []ledger.Event{ev}); err != nil {
		t.Fatal(err)
	}
	after := get("/agents/agent-7")
	mustContain(t, after, `<span class="score-value">764</span>`, "<strong>308</strong> of 400 points")
	if !strings.Contains(after, `<tr><th scope="row">2026-06-15</th><td class="num">764</td>`) {
		t.Fatalf("today's history row is not the new score")
	}
}
