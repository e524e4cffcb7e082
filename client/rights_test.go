package client

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func TestRightsRequests(t *testing.T) {
	ctx := context.Background()
	consent := `{"agent_id":"a:1","visibility":"unlisted","consented":true,"disclosure_version":"1","consented_at":"2026-03-17T14:31:00Z","consented_by":"agent:tok-1","require_consent":true,"published":false}`
	c, s := newTest(t, map[string]reply{
		"GET /swarmscore/disclosure":     {200, `{"version":"1","disclosure":"d","disclaimer":"x"}`, nil},
		"GET /swarmscore/a:1/consent":    {200, consent, nil},
		"PUT /swarmscore/a:1/consent":    {200, consent, nil},
		"PUT /swarmscore/a:1/visibility": {200, consent, nil},
		"GET /swarmscore/a:1/records": {200, `{"agent_id":"a:1","as_of":"2026-03-17T14:30:00.5Z","buyer_ids_masked":true,"events":[` +
			`{"type":"ap2_transaction","id":"t1","agent_id":"a:1","buyer_id":"buyer-0011223344556677","status":"SETTLED","escrow_amount_cents":100,"started_at":"2026-03-17T10:00:00Z","settled_at":"2026-03-17T11:00:00.25Z","operator":"m","seq":3,"corrected":false}],` +
			`"passports":[{"agent_passport_id":"p1","computed_at":"2026-03-17T14:30:00Z","expires_at":"2026-03-24T14:30:00Z","key_id":null,"passport":{"agent_id":"a:1"}}]}`, nil},
		"GET /swarmscore/a:1/signals":     {200, `{"agent_id":"a:1","as_of":"2026-03-17T14:30:00Z","signals":[{"name":"report_lag","value":48,"threshold":24,"flagged":true}]}`, nil},
		"GET /swarmscore/signals":         {200, `{"as_of":"2026-03-17T14:30:00Z","agents":[{"agent_id":"a:1","signals":[{"name":"chain_break","value":1,"threshold":0,"flagged":true}]}]}`, nil},
		"GET /swarmscore/a:1/certificate": {200, `{"agent_id":"a:1"}`, http.Header{"Etag": {`"e"`}}},
	})
	d, err := c.Disclosure(ctx, "1")
	if err != nil || d.Version != "1" || d.Disclaimer != "x" || s.got.URL.Query().Get("version") != "1" || s.got.Header.Get("Authorization") != "" {
		t.Fatalf("disclosure %+v %v", d, err)
	}
	st, err := c.SetVisibility(ctx, "a:1", "unlisted")
	if err != nil || st.Visibility != "unlisted" || !st.Consented || st.ConsentedAt == nil || st.ConsentedBy == nil || *st.ConsentedBy != "agent:tok-1" ||
		s.gotBody != `{"visibility":"unlisted"}` || s.got.Header.Get("Authorization") != "Bearer sst_secret" {
		t.Fatalf("visibility %+v %v, sent %s", st, err, s.gotBody)
	}
	if _, err := c.RecordConsent(ctx, "a:1", ""); err != nil || s.gotBody != `{}` {
		t.Fatalf("consent sent %s: %v", s.gotBody, err)
	}
	if _, err := c.RecordConsent(ctx, "a:1", "1"); err != nil || s.gotBody != `{"disclosure_version":"1"}` {
		t.Fatalf("consent sent %s: %v", s.gotBody, err)
	}
	if st, err := c.Consent(ctx, "a:1"); err != nil || !st.RequireConsent || st.Published || s.gotBody != "" {
		t.Fatalf("consent %+v %v", st, err)
	}
	asOf := time.Date(2026, 3, 17, 14, 30, 0, 500_000_000, time.FixedZone("x", 3600))
	r, err := c.Records(ctx, "a:1", asOf)
	if err != nil || s.got.URL.Query().Get("as_of") != "2026-03-17T13:30:00.5Z" || !r.BuyerIDsMasked || len(r.Events) != 1 ||
		r.Events[0].SettledAt == nil || r.Events[0].SettledAt.Nanosecond() != 250_000_000 || r.Events[0].EscrowAmountCents == nil || *r.Events[0].EscrowAmountCents != 100 ||
		len(r.Passports) != 1 || string(r.Passports[0].Passport) != `{"agent_id":"a:1"}` {
		t.Fatalf("records %+v %v", r, err)
	}
	sig, err := c.Signals(ctx, "a:1", time.Time{})
	if err != nil || s.got.URL.RawQuery != "" || len(sig.Signals) != 1 || sig.Signals[0].Value != 48 || !sig.Signals[0].Flagged {
		t.Fatalf("signals %+v %v", sig, err)
	}
	f, err := c.FlaggedAgents(ctx, time.Time{})
	if err != nil || s.got.URL.RawQuery != "flagged=true" || len(f.Agents) != 1 || f.Agents[0].AgentID != "a:1" {
		t.Fatalf("flagged %+v %v", f, err)
	}
	cert, err := c.PrivateCertificate(ctx, "a:1")
	if err != nil || cert.ETag != `"e"` || s.got.Header.Get("Authorization") != "Bearer sst_secret" {
		t.Fatalf("private certificate %+v %v", cert, err)
	}
}
