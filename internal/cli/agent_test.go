package cli

import (
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/score"
)

// TestAgentScoreJSON pins `agent show --json`'s object: the members, their
// order, and times in UTC with their sub-second digits.
func TestAgentScoreJSON(t *testing.T) {
	r, err := score.Compute(score.Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 13, 0, 0, 123456000, time.FixedZone("CET", 3600))
	s := service.AgentScore{
		Entry: ledger.ScoreEntry{AgentID: "agent-1", Result: r, ComputedAt: at, ExpiresAt: at.Add(7 * 24 * time.Hour),
			ValidUntil: at.Add(time.Hour), Passport: []byte("{}")},
		AsOf: at.Add(time.Minute), Cache: service.CacheHit,
	}
	want := `{"agent_id":"agent-1","computed_at":"2026-03-01T12:00:00.123456Z","expires_at":"2026-03-08T12:00:00.123456Z",` +
		`"formula_version":"1.0","score":760,"tier":"STANDARD","escrow_modifier":0.392,` +
		`"conduit":{"total":80,"success":76,"rate":0.95,"volume_factor":0.8,"contribution":304,"max_contribution":400},` +
		`"ap2":{"total":40,"success":38,"rate":0.95,"volume_factor":0.8,"contribution":456,"max_contribution":600},` +
		`"qualification_gaps":[{"tier":"ELITE","requirement":"score","required":850,"actual":760},` +
		`{"tier":"ELITE","requirement":"conduit_sessions_90d","required":100,"actual":80},` +
		`{"tier":"ELITE","requirement":"ap2_sessions_90d","required":50,"actual":40}],` +
		`"as_of":"2026-03-01T12:01:00.123456Z","valid_until":"2026-03-01T13:00:00.123456Z","cache":"hit","passport_issued":true}`
	if got := string(appendAgentScoreJSON(nil, &s)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// A historical score: no validity, no cache entry, no passport.
	s = service.AgentScore{Entry: ledger.ScoreEntry{AgentID: "a", Result: r, ComputedAt: at, ExpiresAt: at}, AsOf: at}
	got := string(appendAgentScoreJSON(nil, &s))
	if tail := `"as_of":"2026-03-01T12:00:00.123456Z","passport_issued":false}`; got[len(got)-len(tail):] != tail {
		t.Errorf("historical: %s", got)
	}
}
