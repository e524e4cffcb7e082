package wire

import (
	"encoding/json"
	"github.com/swarmscore/swarmscore/api"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var at = time.Date(2026, 11, 24, 10, 0, 0, 123456000, time.UTC)

func TestOptTime(t *testing.T) {
	if optTime(time.Time{}) != nil {
		t.Fatal("a zero time is not null")
	}
	for _, v := range []time.Time{at, at.Add(789 * time.Nanosecond), at.Truncate(time.Second), at.In(time.FixedZone("x", 3600))} {
		if s := optTime(v); s == nil || mustJSON(t, s) != `"`+ledger.FormatTime(v)+`"` {
			t.Fatalf("%v: got %v, want %s", v, s, ledger.FormatTime(v))
		}
	}
}

func TestCorrectionOf(t *testing.T) {
	c := ledger.Correction{ID: "cor-1", FromAgent: "a", ToAgent: "a", FromStatus: ledger.Settled, ToStatus: ledger.Refunded,
		CorrectionRequest: ledger.CorrectionRequest{EventType: ledger.AP2Transaction, EventID: "t-1", Action: ledger.ActionStatus,
			Status: ledger.Refunded, Reason: "chargeback", By: "op", At: at}}
	got := mustJSON(t, CorrectionOf(&c))
	for _, want := range []string{`"action":"status"`, `"status":"REFUNDED"`, `"from_status":"SETTLED"`, `"reissued_at":null`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %s", got, want)
		}
	}
	if strings.Contains(got, `"agent_id"`) || strings.Contains(got, `"appeal_id"`) {
		t.Errorf("%s names fields its action does not use", got)
	}
}

func TestErasureResultOf(t *testing.T) {
	r := service.ErasureResult{Erasure: ledger.Erasure{ID: "erasure-1", Pseudonym: "erased-0123456789abcdef", By: "op", At: at,
		Identity: strings.Repeat("ab", 32), Digests: make([]ledger.Hash, 3)}}
	r.Opening[0] = 0xff
	got := mustJSON(t, ErasureResultOf(&r))
	for _, want := range []string{`"sealed_records":3`, `"opening":{"category":"agents","salt":"ff000000000000000000000000000000"}`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %s", got, want)
		}
	}
	if strings.Contains(got, "reason") || strings.Contains(mustJSON(t, ErasureOf(&r.Erasure)), "opening") {
		t.Errorf("an empty reason or a listed erasure's opening is shown: %s", got)
	}
}

func TestRecordsOf(t *testing.T) {
	rec := service.AgentRecords{AgentID: "a", AsOf: at, Events: []service.Record{
		{Type: ledger.ConduitSession, ID: "s-1", AgentID: "a", Status: ledger.Verified, ReportedStatus: ledger.Verified, StartedAt: at, EndedAt: at},
		{Type: ledger.AP2Transaction, ID: "t-1", AgentID: "a", BuyerID: "b", Status: ledger.Refunded, ReportedStatus: ledger.Settled,
			EscrowAmountCents: 500, StartedAt: at, EndedAt: at, Corrected: true},
	}, Passports: []ledger.IssuedPassport{{ID: "p-1", ComputedAt: at, ExpiresAt: at, Document: []byte(`{}`)}}}
	got := RecordsOf(&rec)
	s, c, p := mustJSON(t, got.Events[0]), mustJSON(t, got.Events[1]), mustJSON(t, got.Passports[0])
	switch {
	case mustJSON(t, got.AsOf) != `"2026-11-24T10:00:00.123456Z"`:
		t.Errorf("as_of %s", got.AsOf)
	case !strings.Contains(s, `"buyer_id":null`) || !strings.Contains(s, `"completed_at"`) || strings.Contains(s, "reported_status"):
		t.Errorf("session %s", s)
	case !strings.Contains(c, `"settled_at"`) || !strings.Contains(c, `"reported_status":"SETTLED"`) || !strings.Contains(c, `"escrow_amount_cents":500`):
		t.Errorf("transaction %s", c)
	case !strings.Contains(p, `"computed_at":"2026-11-24T10:00:00Z"`) || !strings.Contains(p, `"key_id":null`):
		t.Errorf("passport %s", p)
	}
}

// TestEventShape: api.Event, which clients send, marshals exactly as the
// ledger writes the same event, and the ledger reads it back unchanged.
func TestEventShape(t *testing.T) {
	started, ended := at.Add(-time.Hour), at
	cents := int64(500)
	for _, c := range []struct {
		api    api.Event
		ledger ledger.Event
	}{
		{api.Event{Type: "conduit_session", ID: "s-1", AgentID: "a", BuyerID: "b", Status: "VERIFIED", StartedAt: started, CompletedAt: &ended},
			ledger.Event{Type: ledger.ConduitSession, ID: "s-1", AgentID: "a", BuyerID: "b", Status: ledger.Verified, StartedAt: started, EndedAt: ended}},
		{api.Event{Type: "conduit_session", ID: "s-2", AgentID: "a", Status: "RUNNING", StartedAt: started},
			ledger.Event{Type: ledger.ConduitSession, ID: "s-2", AgentID: "a", Status: ledger.Running, StartedAt: started}},
		{api.Event{Type: "ap2_transaction", ID: "t-1", ProviderID: "a", BuyerID: "b", Status: "SETTLED", EscrowAmountCents: &cents, StartedAt: started, SettledAt: &ended},
			ledger.Event{Type: ledger.AP2Transaction, ID: "t-1", AgentID: "a", BuyerID: "b", Status: ledger.Settled, EscrowAmountCents: 500, StartedAt: started, EndedAt: ended}},
		{api.Event{Type: "task_offer", ID: "o-1", AgentID: "a", BuyerID: "b", Status: "ACCEPTED", StartedAt: started, DecidedAt: &ended},
			ledger.Event{Type: ledger.TaskOffer, ID: "o-1", AgentID: "a", BuyerID: "b", Status: ledger.Accepted, StartedAt: started, EndedAt: ended}},
	} {
		got, want := mustJSON(t, c.api), mustJSON(t, c.ledger)
		if got != want {
			t.Errorf("api.Event %s\nledger.Event %s", got, want)
		}
		back, err := ledger.ParseEvent([]byte(got))
		if err != nil || back != c.ledger {
			t.Errorf("%s reads back as %+v, %v", got, back, err)
		}
	}
}
