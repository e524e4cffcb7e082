package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/api"
	authz "github.com/swarmscore/swarmscore/internal/auth"
)

// The fake's part of ConsoleService: refusals are dropped, the log is
// empty.
func (f *fake) RecordDenied(context.Context, string, error) {}
func (f *fake) Actions(context.Context, authz.ActionQuery) ([]authz.Action, error) {
	return nil, f.err
}

// TestOpenAPIRoles: the document's x-role of every operation is the least
// role its permission needs.
func TestOpenAPIRoles(t *testing.T) {
	h := newHarness(t, Options{})
	var doc struct {
		Paths map[string]map[string]struct {
			Access string `json:"x-access"`
			Role   string `json:"x-role"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(h.do("GET", "/openapi.json", nil).body, &doc); err != nil {
		t.Fatal(err)
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			k := strings.ToUpper(method) + " " + path
			perm, ok := routePermissions[k]
			want := ""
			if ok {
				want = string(authz.Needs(perm))
			}
			if op.Role != want {
				t.Errorf("%s: x-role %q, want %q", k, op.Role, want)
			}
		}
	}
	for k := range routePermissions {
		if !h.s.routes[k] {
			t.Errorf("routePermissions names %s, which is not a route", k)
		}
	}
}

// TestRoles: a viewer reads but may not ingest, erase or read the action
// log (403 forbidden_role, recorded); an operator ingests; an admin reads
// the log, refusals included.
func TestRoles(t *testing.T) {
	h := newRightsHarness(t)
	ctx := context.Background()
	tok := map[authz.Role]string{}
	for _, r := range authz.Roles {
		nt, err := h.u.Tokens.CreateToken(ctx, "op-"+string(r), r)
		if err != nil {
			t.Fatal(err)
		}
		tok[r] = nt.Secret
	}
	events := `{"type":"conduit_session","id":"r-1","agent_id":"agent-1","status":"VERIFIED","started_at":"2026-03-17T10:00:00Z","completed_at":"2026-03-17T11:00:00Z"}`
	ingest := func(r authz.Role) response {
		return h.do("POST", "/swarmscore/events", strings.NewReader(events),
			"Authorization", "Bearer "+tok[r], "Content-Type", "application/x-ndjson")
	}
	if r := h.do("GET", "/swarmscore/agents", nil, bearer(tok[authz.Viewer])...); r.code != 200 {
		t.Fatalf("a viewer's read: %d %s", r.code, r.body)
	}
	for _, c := range []struct {
		method, target string
		body           string
	}{
		{"POST", "/swarmscore/events", events},
		{"POST", "/swarmscore/agent-2/erase", ""},
		{"GET", "/swarmscore/actions", ""},
		{"PUT", "/swarmscore/agent-1/visibility", `{"visibility":"unlisted"}`},
	} {
		r := h.do(c.method, c.target, strings.NewReader(c.body), "Authorization", "Bearer "+tok[authz.Viewer], "Content-Type", "application/json")
		p := r.problem(t, "forbidden", http.StatusForbidden)
		if p.Code != authz.ForbiddenRoleCode || !strings.Contains(p.Detail, "this token has the viewer role") {
			t.Errorf("%s %s: %+v", c.method, c.target, p)
		}
	}
	if r := ingest(authz.Operator); r.code != 200 {
		t.Fatalf("an operator's ingest: %d %s", r.code, r.body)
	}
	h.do("POST", "/swarmscore/agent-2/erase", nil, bearer(tok[authz.Operator])...).problem(t, "forbidden", http.StatusForbidden)
	h.do("GET", "/swarmscore/actions", nil, bearer(tok[authz.Operator])...).problem(t, "forbidden", http.StatusForbidden)
	r := h.do("GET", "/swarmscore/actions?limit=3", nil, bearer(tok[authz.Admin])...)
	var page api.Actions
	if r.code != 200 || json.Unmarshal(r.body, &page) != nil || len(page.Actions) != 3 || page.Next == nil {
		t.Fatalf("the log: %d %s", r.code, r.body)
	}
	if a := page.Actions[0]; a.Action != "denied" || a.Operator != "op-operator" || a.Role != "operator" || a.Via != "api" ||
		a.Target != "GET /swarmscore/actions" || a.Outcome != "denied" || a.Code != "forbidden_role" {
		t.Errorf("newest entry %+v", a)
	}
	if a := page.Actions[2]; a.Action != "ingest" || a.Operator != "op-operator" || a.Outcome != "ok" || a.Client != "192.0.2.1" ||
		!strings.Contains(a.Detail, "1 accepted") {
		t.Errorf("the ingest %+v", a)
	}
	r = h.do("GET", "/swarmscore/actions?operator=op-viewer&before="+itoaTest(*page.Next+100), nil, bearer(tok[authz.Admin])...)
	var viewer api.Actions
	if json.Unmarshal(r.body, &viewer) != nil || len(viewer.Actions) != 4 {
		t.Fatalf("the viewer's refusals: %s", r.body)
	}
	for _, q := range []string{"limit=0", "limit=501", "before=x", "agent_id=a%20b", "limit=1&limit=2"} {
		h.do("GET", "/swarmscore/actions?"+q, nil, bearer(tok[authz.Admin])...).problem(t, "invalid-request", 400)
	}
}

func itoaTest(n int64) string { b, _ := json.Marshal(n); return string(b) }
