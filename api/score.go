package api

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/swarmscore/swarmscore/score"
)

// Score is an agent's current score (GET /swarmscore/{agent_id}): the
// agent, the cache entry's computed_at and expires_at, then the members of
// score.Result's JSON form (formula_version, score, tier, escrow_modifier,
// conduit, ap2, qualification_gaps).
type Score struct {
	AgentID string
	// ComputedAt and ExpiresAt are whole seconds.
	ComputedAt time.Time
	ExpiresAt  time.Time
	// Result is the formula's outcome; decoding recomputes it from its
	// counts and checks every derived member (score.Result.UnmarshalJSON),
	// so a decoded Score is internally consistent.
	score.Result
}

// AppendJSON appends s's JSON object to b without allocating when b has
// room (1 KiB is always enough); the agent id must be a valid one (its
// characters need no escaping), as every id the server holds is.
func (s *Score) AppendJSON(b []byte) []byte {
	b = append(b, `{"agent_id":`...)
	b = strconv.AppendQuote(b, s.AgentID)
	b = append(b, `,"computed_at":"`...)
	b = s.ComputedAt.UTC().Truncate(time.Second).AppendFormat(b, time.RFC3339)
	b = append(b, `","expires_at":"`...)
	b = s.ExpiresAt.UTC().Truncate(time.Second).AppendFormat(b, time.RFC3339)
	b = append(b, `",`...)
	b = s.Result.AppendJSONFields(b)
	return append(b, '}')
}

// MarshalJSON returns AppendJSON's bytes.
func (s Score) MarshalJSON() ([]byte, error) {
	if _, err := s.Tier.MarshalText(); err != nil {
		return nil, err
	}
	return s.AppendJSON(make([]byte, 0, 1024)), nil
}

// UnmarshalJSON reads the JSON form and checks the result
// (score.Result.UnmarshalJSON); a missing agent_id, computed_at or
// expires_at is an error.
func (s *Score) UnmarshalJSON(b []byte) error {
	var w struct {
		AgentID    *string    `json:"agent_id"`
		ComputedAt *time.Time `json:"computed_at"`
		ExpiresAt  *time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("api: score: %w", err)
	}
	if w.AgentID == nil || w.ComputedAt == nil || w.ExpiresAt == nil {
		return fmt.Errorf("api: score: missing agent_id, computed_at or expires_at")
	}
	var r score.Result
	if err := r.UnmarshalJSON(b); err != nil {
		return err
	}
	*s = Score{AgentID: *w.AgentID, ComputedAt: *w.ComputedAt, ExpiresAt: *w.ExpiresAt, Result: r}
	return nil
}

// EscrowRequest is the body of POST /swarmscore/{agent_id}/escrow: a
// payment in integer cents (0 up to the ledger's largest escrow amount).
type EscrowRequest struct {
	AmountCents int64 `json:"amount_cents"`
}

// Escrow is the hold for one payment (§5): the hold is amount × modifier,
// rounded up to the cent, and released the rest (POST
// /swarmscore/{agent_id}/escrow, swarmscore escrow --json).
type Escrow struct {
	Score          int            `json:"score"`
	EscrowModifier score.Modifier `json:"escrow_modifier"`
	HoldCents      int64          `json:"hold_cents"`
	ReleasedCents  int64          `json:"released_cents"`
}

// RankedAgent is one entry of the ranking (GET /swarmscore/agents): its
// cache entry's score and the window's totals, and the entry's times
// (whole seconds).
type RankedAgent struct {
	AgentID        string         `json:"agent_id"`
	Score          int            `json:"score"`
	Tier           score.Tier     `json:"tier"`
	EscrowModifier score.Modifier `json:"escrow_modifier"`
	ConduitTotal   int64          `json:"conduit_sessions_90d"`
	AP2Total       int64          `json:"ap2_sessions_90d"`
	// The points each dimension contributes to Score (§3.4), what
	// ?sort=conduit and ?sort=ap2 order by.
	ConduitContribution int       `json:"conduit_contribution"`
	AP2Contribution     int       `json:"ap2_contribution"`
	ComputedAt          time.Time `json:"computed_at"`
	ExpiresAt           time.Time `json:"expires_at"`
}

// AgentsPage is one page of the ranking, highest score first; NextCursor
// is the cursor query parameter of the next page, nil on the last.
type AgentsPage struct {
	Agents     []RankedAgent `json:"agents"`
	NextCursor *string       `json:"next_cursor"`
}
