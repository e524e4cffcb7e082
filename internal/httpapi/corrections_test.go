package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/passport"
)

// AppealStats lets /metrics work in tests that give the fake no
// CorrectionsService: no appeals.
func (f *fake) AppealStats(ctx context.Context) (service.AppealStats, error) {
	if f.CorrectionsService != nil {
		return f.CorrectionsService.AppealStats(ctx)
	}
	return service.AppealStats{}, nil
}

// withService gives the harness's fake real corrections, appeals and
// checkpoints: use cases over a fresh SQLite file on the harness's clock,
// holding agent-1 (10 Conduit sessions, 8 VERIFIED; 4 AP2 transactions
// SETTLED) with a passport issued.
func withService(t testing.TB, h *harness) (*service.UseCases, *clockwork) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "api.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key, _ := passport.NewKey([]byte(testSigningKey))
	cpKey, _ := service.NewCheckpointKey([]byte(testSigningKey))
	c := &clockwork{t: now}
	u := service.New(st, service.Config{Key: key, Platform: "api.test", Now: c.now, CheckpointKey: cpKey})
	end := now.Add(-24 * time.Hour)
	var evs []ledger.Event
	for i := range 10 {
		s := ledger.Verified
		if i >= 8 {
			s = ledger.Failed
		}
		evs = append(evs, ledger.Event{Type: ledger.ConduitSession, ID: fmt.Sprintf("s-%d", i), AgentID: "agent-1", Status: s,
			StartedAt: end.Add(-time.Hour), EndedAt: end})
	}
	for i := range 4 {
		evs = append(evs, ledger.Event{Type: ledger.AP2Transaction, ID: fmt.Sprintf("t-%d", i), AgentID: "agent-1", BuyerID: "b-1",
			Status: ledger.Settled, EscrowAmountCents: 5000, StartedAt: end.Add(-time.Hour), EndedAt: end})
	}
	evs = append(evs, ledger.Event{Type: ledger.AP2Transaction, ID: "t-open", AgentID: "agent-1", BuyerID: "b-1", Status: ledger.Held,
		EscrowAmountCents: 5000, StartedAt: end})
	if _, err := u.Ingest.Ingest(ctx, "market-1", evs); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Certificates.Certificate(ctx, "agent-1"); err != nil {
		t.Fatal(err)
	}
	h.f.CorrectionsService, h.f.CheckpointService, h.f.LogService, h.st = u.Corrections, u.Audit, u.Log, st
	return u, c
}

const testSigningKey = "httpapi-test-signing-key-0123456789abcdef"

type clockwork struct{ t time.Time }

func (c *clockwork) now() time.Time { return c.t }

func jsonBody(s string) io.Reader { return strings.NewReader(s) }

func TestCorrectionRoute(t *testing.T) {
	h := newHarness(t, Options{})
	u, _ := withService(t, h)
	body := `{"event_type":"ap2_transaction","event_id":"t-1","action":"status","status":"REFUNDED","reason":"chargeback: card network case 77"}`
	r := h.do("POST", "/swarmscore/corrections", jsonBody(body), authHdr()...)
	if r.code != http.StatusCreated {
		t.Fatalf("correct: %d %s", r.code, r.body)
	}
	var c map[string]any
	if err := json.Unmarshal(r.body, &c); err != nil {
		t.Fatal(err)
	}
	if c["by"] != "acme" || c["from_status"] != "SETTLED" || c["to_status"] != "REFUNDED" || c["status"] != "REFUNDED" ||
		c["reissued_at"] != "2026-03-17T14:30:00Z" || c["at"] != "2026-03-17T14:30:00Z" || c["from_agent"] != "agent-1" || c["agent_id"] != nil {
		t.Fatalf("correction %s", r.body)
	}
	if e, _ := u.Certificates.Score(context.Background(), "agent-1"); e.Result.Counts.AP2Success != 3 {
		t.Fatalf("the chargeback did not lower the count: %+v", e.Result.Counts)
	}
	again := h.do("POST", "/swarmscore/corrections", jsonBody(body), authHdr()...)
	if again.code != http.StatusOK || !bytes.Equal(again.body, r.body) {
		t.Fatalf("repeat: %d %s", again.code, again.body)
	}

	p := h.do("POST", "/swarmscore/corrections", jsonBody(`{"event_type":"ap2_transaction","event_id":"t-9","action":"void","reason":"x"}`), authHdr()...).
		problem(t, "not-found", 404)
	if p.Detail != `ap2_transaction "t-9" is not in the ledger` {
		t.Errorf("unknown event detail %q", p.Detail)
	}
	h.do("POST", "/swarmscore/corrections", jsonBody(`{"event_type":"ap2_transaction","event_id":"t-open","action":"status","status":"REFUNDED","reason":"x"}`), authHdr()...).
		problem(t, "conflict", 409)
	for name, tc := range map[string]struct{ body, slug, detail string }{
		"unknown member":   {`{"event_type":"ap2_transaction","event_id":"t-2","action":"void","reason":"x","amount":1}`, "invalid-request", `unknown field "amount"`},
		"duplicate member": {`{"event_type":"ap2_transaction","event_id":"t-2","action":"void","reason":"x","reason":"y"}`, "invalid-request", "field reason is given twice"},
		"wrong type":       {`{"event_type":"ap2_transaction","event_id":2,"action":"void","reason":"x"}`, "wrong-type", "field event_id must be a JSON string, not a JSON number"},
		"not an object":    {`["void"]`, "wrong-type", "the request body must be a JSON object"},
		"trailing data":    {`{"event_type":"ap2_transaction","event_id":"t-2","action":"void","reason":"x"} {}`, "malformed-json", "unexpected data after the JSON object"},
		"empty":            {``, "malformed-json", "the request body is empty; expected a JSON object"},
		"missing field":    {`{"event_type":"ap2_transaction","event_id":"t-2","action":"status","reason":"x"}`, "invalid-request", "status:"},
		"needless field":   {`{"event_type":"ap2_transaction","event_id":"t-2","action":"void","agent_id":"a","reason":"x"}`, "invalid-request", "action: void takes neither"},
		"no reason":        {`{"event_type":"ap2_transaction","event_id":"t-2","action":"void"}`, "invalid-request", "reason: is required"},
	} {
		p := h.do("POST", "/swarmscore/corrections", jsonBody(tc.body), authHdr()...).problem(t, tc.slug, 400)
		if !strings.Contains(p.Detail, tc.detail) {
			t.Errorf("%s: detail %q, want %q", name, p.Detail, tc.detail)
		}
	}
	if list, _ := h.st.Corrections(context.Background(), ledger.AP2Transaction, "t-2"); len(list) != 0 {
		t.Fatalf("a refused request corrected t-2: %+v", list)
	}
	h.do("POST", "/swarmscore/corrections", jsonBody(body)).problem(t, "unauthorized", 401)
}

// TestAppealRoutes: file, list (overdue first, filters), show, act, with
// the history and the metrics.
func TestAppealRoutes(t *testing.T) {
	h := newHarness(t, Options{})
	u, clk := withService(t, h)
	ctx := context.Background()
	ps, err := h.st.Passports(ctx, "agent-1")
	if err != nil || len(ps) != 1 {
		t.Fatalf("passports %+v %v", ps, err)
	}
	file := `{"agent_passport_id":"` + ps[0].ID + `","grounds":"incorrect_status","statement":"s-9 was delivered",` +
		`"events":[{"event_type":"conduit_session","event_id":"s-9"}]}`
	r := h.do("POST", "/swarmscore/appeals", jsonBody(file), authHdr()...)
	if r.code != http.StatusCreated {
		t.Fatalf("file: %d %s", r.code, r.body)
	}
	var a struct {
		ID, State, Grounds string
		AgentID            string  `json:"agent_id"`
		FiledBy            string  `json:"filed_by"`
		ReissuedAt         *string `json:"reissued_at"`
		Overdue            bool
		Corrections        []string
		NextDeadline       *struct{ Duty, Due string } `json:"next_deadline"`
		History            []struct{ Action, By, At, Note string }
	}
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatal(err)
	}
	if a.State != "submitted" || a.AgentID != "agent-1" || a.FiledBy != "acme" || a.NextDeadline == nil ||
		a.NextDeadline.Duty != "acknowledge" || a.NextDeadline.Due != "2026-03-24T14:30:00Z" || r.header.Get("Location") != "/swarmscore/appeals/"+a.ID {
		t.Fatalf("filed %s", r.body)
	}
	p := h.do("POST", "/swarmscore/appeals", jsonBody(strings.Replace(file, "incorrect_status", "formula", 1)), authHdr()...).problem(t, "invalid-request", 400)
	if !strings.Contains(p.Detail, "disagreement with the formula is not a ground") {
		t.Errorf("formula detail %q", p.Detail)
	}
	h.do("POST", "/swarmscore/appeals", jsonBody(`{"agent_passport_id":"nope","grounds":"incorrect_count","statement":"x","events":[{"event_type":"conduit_session","event_id":"s-1"}]}`),
		authHdr()...).problem(t, "not-found", 404)
	h.do("POST", "/swarmscore/appeals", jsonBody(strings.Replace(file, `"event_id":"s-9"`, `"event_id":"s-9","note":1`, 1)), authHdr()...).problem(t, "invalid-request", 400)

	list := func(q string) []string {
		t.Helper()
		r := h.do("GET", "/swarmscore/appeals"+q, nil, authHdr()...)
		if r.code != 200 {
			t.Fatalf("list %s: %d %s", q, r.code, r.body)
		}
		var l struct{ Appeals []struct{ ID string } }
		json.Unmarshal(r.body, &l)
		var ids []string
		for _, x := range l.Appeals {
			ids = append(ids, x.ID)
		}
		return ids
	}
	if got := list("?overdue=true"); len(got) != 0 {
		t.Fatalf("overdue at once: %v", got)
	}
	clk.t = clk.t.Add(8 * 24 * time.Hour)
	if got := list("?overdue=true&state=submitted"); len(got) != 1 || got[0] != a.ID {
		t.Fatalf("overdue after 8 days: %v", got)
	}
	h.do("GET", "/swarmscore/appeals?overdue=yes", nil, authHdr()...).problem(t, "invalid-request", 400)
	h.do("GET", "/swarmscore/appeals?state=open", nil, authHdr()...).problem(t, "invalid-request", 400)
	h.do("GET", "/swarmscore/appeals?page=2", nil, authHdr()...).problem(t, "invalid-request", 400)
	m := h.do("GET", "/metrics", nil)
	for _, want := range []string{`swarmscore_appeals{state="submitted"} 1`, `swarmscore_appeals{state="upheld"} 0`, `swarmscore_appeals_overdue{duty="acknowledge"} 1`} {
		if !strings.Contains(string(m.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	act := func(action, body string) response {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = jsonBody(body)
		}
		return h.do("POST", "/swarmscore/appeals/"+a.ID+"/"+action, rd, authHdr()...)
	}
	if r := act("ack", ""); r.code != 200 {
		t.Fatalf("ack: %d %s", r.code, r.body)
	}
	act("ack", "").problem(t, "conflict", 409)
	act("reject", `{}`).problem(t, "invalid-request", 400)
	act("uphold", `{"reason":"confirmed"}`).problem(t, "invalid-request", 400)
	p = act("uphold", `{"reason":"confirmed","corrections":[{"event_type":"conduit_session","event_id":"s-9","action":"status","status":"VERIFIED","extra":1}]}`).
		problem(t, "invalid-request", 400)
	if p.Detail != `unknown field "corrections[0].extra"` {
		t.Errorf("nested unknown member detail %q", p.Detail)
	}
	act("escalate", "").problem(t, "conflict", 409)
	r = act("uphold", `{"reason":"the buyer confirmed delivery","corrections":[{"event_type":"conduit_session","event_id":"s-9","action":"status","status":"VERIFIED"}]}`)
	if r.code != 200 {
		t.Fatalf("uphold: %d %s", r.code, r.body)
	}
	json.Unmarshal(r.body, &a)
	if a.State != "upheld" || len(a.Corrections) != 1 || a.ReissuedAt == nil || *a.ReissuedAt != "2026-03-25T14:30:00Z" || a.NextDeadline != nil {
		t.Fatalf("upheld %s", r.body)
	}
	if e, _ := u.Certificates.Score(ctx, "agent-1"); e.Result.Counts.ConduitSuccess != 9 {
		t.Fatalf("the uphold's correction did not count: %+v", e.Result.Counts)
	}
	if r := act("escalate", `{"reason":"the agent disputes the remedy"}`); r.code != 200 {
		t.Fatalf("escalate: %d %s", r.code, r.body)
	}
	r = h.do("GET", "/swarmscore/appeals/"+a.ID, nil, authHdr()...)
	json.Unmarshal(r.body, &a)
	var hist []string
	for _, e := range a.History {
		hist = append(hist, e.Action+"/"+e.By+"/"+e.Note)
	}
	if a.State != "escalated" || strings.Join(hist, " ") != "file/acme/ ack/acme/ uphold/acme/the buyer confirmed delivery escalate/acme/the agent disputes the remedy" {
		t.Fatalf("history %v in %s", hist, r.body)
	}
	h.do("GET", "/swarmscore/appeals/apl-none", nil, authHdr()...).problem(t, "not-found", 404)
	h.do("GET", "/swarmscore/appeals/"+a.ID, nil).problem(t, "unauthorized", 401)
	h.do("POST", "/swarmscore/appeals/apl-none/ack", nil, authHdr()...).problem(t, "not-found", 404)
}

func TestCheckpointRoutes(t *testing.T) {
	h := newHarness(t, Options{})
	u, _ := withService(t, h)
	asJSON := []string{"Accept", "application/json"}
	p := h.do("GET", "/swarmscore/checkpoints/latest", nil, asJSON...).problem(t, "not-found", 404)
	if p.Detail != "no checkpoint has been made yet" {
		t.Errorf("detail %q", p.Detail)
	}
	// The log's note by default: an HMAC key signs none.
	if p := h.do("GET", "/swarmscore/checkpoints/latest", nil).problem(t, "not-found", 404); p.Detail != "no log checkpoint has been signed yet" {
		t.Errorf("note detail %q", p.Detail)
	}
	first, err := u.Audit.MakeCheckpoint(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	second, err := u.Audit.MakeCheckpoint(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	r := h.do("GET", "/swarmscore/checkpoints/latest", nil, "Accept", "application/json, text/plain")
	if r.code != 200 || !bytes.Equal(r.body, second.Document) || r.header.Get("Cache-Control") != "no-cache" || r.header.Get("Vary") != "Accept" ||
		r.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("latest: %d %v %s", r.code, r.header, r.body)
	}
	r = h.do("GET", "/swarmscore/checkpoints/1", nil)
	if r.code != 200 || !bytes.Equal(r.body, first.Document) || !strings.Contains(r.header.Get("Cache-Control"), "immutable") {
		t.Fatalf("number 1: %d %v %s", r.code, r.header, r.body)
	}
	h.do("GET", "/swarmscore/checkpoints/3", nil).problem(t, "not-found", 404)
	for _, bad := range []string{"0", "01", "-1", "x", "9007199254740992999"} {
		h.do("GET", "/swarmscore/checkpoints/"+bad, nil).problem(t, "invalid-request", 400)
	}
	// The certificate route keeps its paths; other collections are no
	// routes; other methods are not allowed.
	if r := h.do("GET", "/swarmscore/checkpoints/certificate", nil); r.code != 200 || h.f.gotAgent != "checkpoints" {
		t.Fatalf("certificate of agent checkpoints: %d, asked about %q", r.code, h.f.gotAgent)
	}
	h.do("GET", "/swarmscore/elsewhere/1", nil).problem(t, "no-route", 404)
	h.do("POST", "/swarmscore/checkpoints/1", nil).problem(t, "method-not-allowed", 405)
}

// FuzzCorrectionBodies sends arbitrary bodies to the routes of
// corrections.go over real use cases: whatever arrives, the answer is a
// 2xx with JSON or a 4xx problem, never a 5xx or a panic, and a body with a
// repeated member is never accepted.
func FuzzCorrectionBodies(f *testing.F) {
	f.Add(uint8(0), `{"event_type":"ap2_transaction","event_id":"t-1","action":"status","status":"REFUNDED","reason":"chargeback"}`)
	f.Add(uint8(0), `{"event_type":"conduit_session","event_id":"s-1","action":"reattribute","agent_id":"agent-2","reason":"moved","appeal_id":null}`)
	f.Add(uint8(0), `{"event_type":"conduit_session","event_id":"s-1","action":"void","reason":"x","reason":"y"}`)
	f.Add(uint8(1), `{"agent_passport_id":"x","grounds":"incorrect_count","statement":"s","events":[{"event_type":"conduit_session","event_id":"s-1"}]}`)
	f.Add(uint8(2), `{"reason":"ok","corrections":[{"event_type":"conduit_session","event_id":"s-9","action":"status","status":"VERIFIED"}]}`)
	f.Add(uint8(2), `{"reason":"ok","corrections":[1,{}]}`)
	h := newHarness(f, Options{})
	withService(f, h)
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		target := []string{"/swarmscore/corrections", "/swarmscore/appeals", "/swarmscore/appeals/apl-0/uphold"}[route%3]
		req := httptest.NewRequest("POST", target, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+goodToken)
		rec := httptest.NewRecorder()
		h.s.ServeHTTP(rec, req)
		switch code := rec.Code; {
		case code == 200 || code == 201:
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%d with invalid JSON: %q", code, rec.Body)
			}
			if hasRepeatedMember(body) {
				t.Fatalf("accepted a repeated member: %q", body)
			}
			if !utf8.ValidString(body) {
				t.Fatalf("accepted a body that is not UTF-8: %q", body)
			}
		case code >= 400 && code < 500:
			var p Problem
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || !strings.HasPrefix(p.Type, ProblemBase) || p.Detail == "" {
				t.Fatalf("%d without a problem: %q", code, rec.Body)
			}
		default:
			t.Fatalf("status %d for %s %q: %s", code, target, body, rec.Body)
		}
	})
}

// hasRepeatedMember reports whether the top-level JSON object in body
// names a member twice (false for anything else).
func hasRepeatedMember(body string) bool {
	dec := json.NewDecoder(strings.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		name, _ := tok.(string)
		if seen[name] {
			return true
		}
		seen[name] = true
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return false
		}
	}
	return false
}

// TestTextIsUTF8: a reason or a statement that is not UTF-8, or holds an
// escaped surrogate that is not half of a pair, is refused with 400 as
// written, never stored with U+FFFD in its place (issue 28). A pair is
// one character, kept.
func TestTextIsUTF8(t *testing.T) {
	h := newHarness(t, Options{})
	withService(t, h)
	ps, err := h.st.Passports(context.Background(), "agent-1")
	if err != nil || len(ps) != 1 {
		t.Fatalf("passports %+v %v", ps, err)
	}
	correction := func(reason string) string {
		return `{"event_type":"conduit_session","event_id":"s-1","action":"void","reason":"` + reason + `"}`
	}
	appealWith := func(statement string) string {
		return `{"agent_passport_id":"` + ps[0].ID + `","grounds":"incorrect_status","statement":"` + statement + `","events":[{"event_type":"conduit_session","event_id":"s-9"}]}`
	}
	for _, c := range []struct{ target, body, detail string }{
		{"/swarmscore/corrections", correction("chargeback \xff"), "field reason is not valid UTF-8"},
		{"/swarmscore/corrections", correction("caf\xc3"), "field reason is not valid UTF-8"},
		{"/swarmscore/corrections", correction(`lone \ud800 high`), "field reason holds an escaped UTF-16 surrogate"},
		{"/swarmscore/corrections", correction(`lone \uDC00 low`), "field reason holds an escaped UTF-16 surrogate"},
		{"/swarmscore/corrections", correction(`reversed \udc00\ud800`), "field reason holds an escaped UTF-16 surrogate"},
		{"/swarmscore/appeals", appealWith("delivered \xed\xa0\x80"), "field statement is not valid UTF-8"},
		{"/swarmscore/appeals", appealWith(`delivered \ud83d`), "field statement holds an escaped UTF-16 surrogate"},
		{"/swarmscore/appeals/apl-0/reject", "{\"reason\":\"no \x80\"}", "field reason is not valid UTF-8"},
		{"/swarmscore/appeals/apl-0/uphold", `{"reason":"ok","corrections":[` + correction("\xfe") + `]}`, "field corrections[0].reason is not valid UTF-8"},
		{"/swarmscore/agent-1/erase", "{\"reason\":\"gdpr \xff\"}", "field reason is not valid UTF-8"},
	} {
		p := h.do("POST", c.target, jsonBody(c.body), authHdr()...).problem(t, "invalid-request", 400)
		if !strings.Contains(p.Detail, c.detail) {
			t.Errorf("%s %q: detail %q, want %q", c.target, c.body, p.Detail, c.detail)
		}
	}
	if _, err := h.st.Passports(context.Background(), "agent-1"); err != nil {
		t.Fatalf("agent-1 is gone: %v", err)
	}
	r := h.do("POST", "/swarmscore/corrections", jsonBody(correction(`paid in \u20ac \ud83d\ude00 \\ud800`)), authHdr()...)
	var got struct{ Reason string }
	if r.code != http.StatusCreated || json.Unmarshal(r.body, &got) != nil || got.Reason != `paid in € 😀 \ud800` {
		t.Fatalf("a valid reason: %d %s", r.code, r.body)
	}
}
