package api

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/score"
)

func TestChecksKeepTheirOrder(t *testing.T) {
	cs := Checks{{Name: CheckSignature, Result: CheckOK}, {Name: CheckExpiry, Result: CheckExpired}, {Name: CheckAgent, Result: CheckNotApplicable}}
	b, err := json.Marshal(cs)
	if err != nil || string(b) != `{"signature":"ok","expiry":"expired","agent":"not_applicable"}` {
		t.Fatalf("%s %v", b, err)
	}
	var back Checks
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 3 || back[2] != cs[2] || back.Result(CheckExpiry) != CheckExpired {
		t.Fatalf("%+v %v", back, err)
	}
	back.Set(CheckExpiry, CheckOK)
	if back.Result(CheckExpiry) != CheckOK || back.Result("ledger") != "" {
		t.Fatalf("%+v", back)
	}
	for _, bad := range []string{`[]`, `{"signature":1}`, `{"signature":"ok"`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if err := json.Unmarshal([]byte(`null`), &back); err != nil || back != nil {
		t.Errorf("null: %+v %v", back, err)
	}
}

func TestScore(t *testing.T) {
	r, err := score.Compute(score.Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 17, 14, 30, 0, 900_000_000, time.FixedZone("x", 3600))
	s := Score{AgentID: "agent-1", ComputedAt: at, ExpiresAt: at.Add(7 * 24 * time.Hour), Result: r}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"agent_id":"agent-1","computed_at":"2026-03-17T13:30:00Z","expires_at":"2026-03-24T13:30:00Z",` + string(r.AppendJSON(nil))[1:]
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back Score
	if err := json.Unmarshal(b, &back); err != nil || back.Result != r || back.AgentID != "agent-1" || !back.ComputedAt.Equal(at.Truncate(time.Second)) {
		t.Fatalf("%+v %v", back, err)
	}
	// A member that disagrees with the counts, and a missing agent.
	if err := json.Unmarshal([]byte(strings.Replace(string(b), `"score":760`, `"score":761`, 1)), &back); !errors.Is(err, score.ErrInvalid) {
		t.Errorf("a wrong score: %v", err)
	}
	if err := json.Unmarshal([]byte(strings.Replace(string(b), `"agent_id"`, `"agent"`, 1)), &back); err == nil {
		t.Error("no agent_id accepted")
	}
}

func TestEscrowDecodesExactly(t *testing.T) {
	var e Escrow
	if err := json.Unmarshal([]byte(`{"score":760,"escrow_modifier":0.392,"hold_cents":39200,"released_cents":60800}`), &e); err != nil ||
		e.EscrowModifier != 3920 {
		t.Fatalf("%+v %v", e, err)
	}
	if err := json.Unmarshal([]byte(`{"escrow_modifier":0.39285}`), &e); !errors.Is(err, score.ErrInvalid) {
		t.Fatalf("an inexact modifier: %v", err)
	}
}

// TestConsentStatusFlattens: the status is the consent's members, then the
// server's.
func TestConsentStatusFlattens(t *testing.T) {
	v := "1"
	b, _ := json.Marshal(ConsentStatus{Consent: Consent{AgentID: "a", Visibility: "public", Consented: true, DisclosureVersion: &v}, Published: true})
	want := `{"agent_id":"a","visibility":"public","consented":true,"disclosure_version":"1","consented_at":null,"consented_by":null,"require_consent":false,"published":true}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestProblemTypes(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range ProblemTypes {
		if !strings.HasPrefix(p, ProblemBase) || seen[p] {
			t.Errorf("%s", p)
		}
		seen[p] = true
	}
}
