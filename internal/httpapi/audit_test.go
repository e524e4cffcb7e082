package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/audit/audittest"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
)

// auditAsked records, per fake, the audit query it was asked; the fake
// returns auditServed.
var (
	auditMu     sync.Mutex
	auditAsked  = map[*fake]service.AuditQuery{}
	auditServed *audit.Bundle
)

func (f *fake) AuditBundle(ctx context.Context, agentID string, q service.AuditQuery) (*audit.Bundle, audit.Openings, error) {
	auditMu.Lock()
	auditAsked[f] = q
	b := auditServed
	auditMu.Unlock()
	if err := f.enter(agentID); err != nil {
		return nil, nil, err
	}
	return b, nil, nil
}

func TestAuditRoute(t *testing.T) {
	_, src := audittest.Scenario(t)
	b, err := audit.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	auditMu.Lock()
	auditServed = b
	auditMu.Unlock()
	h := newHarness(t, Options{})
	asked := func() service.AuditQuery {
		auditMu.Lock()
		defer auditMu.Unlock()
		return auditAsked[h.f]
	}

	h.do("GET", "/swarmscore/a/audit", nil).problem(t, "unauthorized", http.StatusUnauthorized)

	r := h.do("GET", "/swarmscore/a/audit", nil, authHdr()...)
	if r.code != http.StatusOK || r.header.Get("Content-Type") != "application/json" || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %v %s", r.code, r.header, r.body)
	}
	if v := audit.VerifyDocument(r.body, audittest.Keys(t)); !v.Valid || h.f.gotAgent != "a" || !asked().AsOf.IsZero() || asked().Withhold != nil {
		t.Fatalf("served bundle %+v, asked %+v", v, asked())
	}

	at := time.Date(2026, 3, 1, 12, 0, 0, 500000000, time.UTC)
	h.do("GET", "/swarmscore/a/audit?as_of=2026-03-01T13:00:00.5%2B01:00&withhold=operators,buyers", nil, authHdr()...)
	if q := asked(); !q.AsOf.Equal(at) || fmt.Sprint(q.Withhold) != "[buyers operators]" {
		t.Errorf("asked %+v", q)
	}

	for _, target := range []string{
		"/swarmscore/a/audit?as_of=yesterday",
		"/swarmscore/a/audit?withhold=emails",
		"/swarmscore/a/audit?as_of=2026-03-01T00:00:00Z&as_of=2026-03-02T00:00:00Z",
		"/swarmscore/a/audit?format=pdf",
		"/swarmscore/a%20b/audit",
	} {
		h.do("GET", target, nil, authHdr()...).problem(t, "invalid-request", http.StatusBadRequest)
	}
	h.f.err = fmt.Errorf("%w: agent %q", errkind.ErrNotFound, "ghost")
	h.do("GET", "/swarmscore/ghost/audit", nil, authHdr()...).problem(t, "not-found", http.StatusNotFound)
	h.f.err = fmt.Errorf("%w: the stored records cannot be audited", errkind.ErrConflict)
	h.do("GET", "/swarmscore/a/audit", nil, authHdr()...).problem(t, "conflict", http.StatusConflict)
}

// TestAuditRouteAbsent: Services without an AuditService make a server
// without the route.
func TestAuditRouteAbsent(t *testing.T) {
	h := newHarness(t, Options{})
	svc := every(h.f)
	svc.Audit = nil
	s := New(svc, Options{})
	if s.routes["GET /swarmscore/{agent_id}/audit"] {
		t.Fatal("the audit route is registered without the use case")
	}
	h.s = s
	h.do("GET", "/swarmscore/a/audit", nil, authHdr()...).problem(t, "no-route", http.StatusNotFound)
}
