package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// VerifyRequest is the body of POST /swarmscore/verify: a passport exactly
// as received and, optionally, the agent it must belong to. The bare
// passport is accepted as the body too. Send Certificate's bytes as they
// came (json.Marshal would compact them; the signature covers what the
// issuer wrote, but an exact copy is what a verifier should judge).
type VerifyRequest struct {
	Certificate json.RawMessage `json:"certificate"`
	AgentID     string          `json:"agent_id,omitempty"`
}

// Verification is the answer of POST /swarmscore/verify: the §7.3 verdict,
// the reasons behind it, and what each level of verification found. A
// passport that is not valid is still a 200 with Valid false.
type Verification struct {
	Valid          bool `json:"valid"`
	SignatureValid bool `json:"signature_valid"`
	ScoreValid     bool `json:"score_valid"`
	// ExpiresAt is the passport's expires_at, nil when it has none that
	// could be read.
	ExpiresAt         *time.Time `json:"expires_at"`
	DetectedTampering bool       `json:"detected_tampering"`
	// Errors make the passport invalid; Warnings do not (a member the
	// server's version does not know, a passport that names no agent, a
	// superseded score). Both are [] when empty.
	Errors   []passport.Problem `json:"errors"`
	Warnings []passport.Problem `json:"warnings"`
	// Checks holds each level the server ran and its result, in the order
	// the server ran them (Check* names; a server may report more).
	Checks Checks `json:"checks"`
	// Current is the agent's score now, when the server holds its ledger
	// (absent otherwise). A passport that was true when issued but whose
	// agent's counts have changed since has the warning CodeSuperseded.
	Current *CurrentScore `json:"current,omitempty"`
	// ChangedSinceIssue lists, with the warning
	// CodeLedgerChangedSinceIssue, the events reported or corrected after
	// the passport was issued that changed the window it counts (absent
	// otherwise).
	ChangedSinceIssue []EventRef `json:"changed_since_issue,omitempty"`
}

// CurrentScore is an agent's score as of ComputedAt (whole seconds).
type CurrentScore struct {
	Score      int        `json:"score"`
	Tier       score.Tier `json:"tier"`
	ComputedAt time.Time  `json:"computed_at"`
}

// EventRef names an event: its type (conduit_session, ap2_transaction)
// and id.
type EventRef struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// The codes of Verification.Errors and Warnings that the server adds to
// those of package passport (passport.Code*).
const (
	// CodeAgentMismatch: the passport is for another agent than the one
	// asked about.
	CodeAgentMismatch = "agent_mismatch"
	// CodeLedgerMismatch: the server's ledger, as it stood when the
	// passport was issued, does not give its counts.
	CodeLedgerMismatch = "ledger_mismatch"
	// CodeAgentUnbound (a warning): the passport names no agent, so nothing
	// binds it to the one asked about.
	CodeAgentUnbound = "agent_unbound"
	// CodePassportRevoked: the server issued the passport and revoked it,
	// because its agent was erased (GDPR Art. 17); refused even if genuine
	// and unexpired.
	CodePassportRevoked = "passport_revoked"
	// CodeSuperseded (a warning): the passport was true when issued, and
	// the agent's score has changed since.
	CodeSuperseded = "superseded"
	// CodeLedgerChangedSinceIssue (a warning): the ledger confirmed the
	// passport as it stood at issue, and reports received since changed
	// the window it counts (Verification.ChangedSinceIssue).
	CodeLedgerChangedSinceIssue = "ledger_changed_since_issue"
)

// CheckResult is the result of one level of verification.
type CheckResult string

// The checks a server reports in Verification.Checks, and their results.
const (
	CheckSignature   = "signature"   // CheckOK or CheckFailed
	CheckConsistency = "consistency" // CheckOK or CheckFailed
	CheckExpiry      = "expiry"      // CheckOK, CheckExpired, CheckNotYetValid, or CheckFailed (no readable expires_at)
	// CheckLedger: CheckConfirmed by the server's ledger; CheckMismatch;
	// CheckChangedSinceIssue when the ledger confirmed it as it stood at
	// issue and reports received since changed it; CheckNotApplicable
	// when the server has no ledger for the agent (one it has never seen);
	// CheckRevoked for a passport it revoked.
	CheckLedger = "ledger"
	CheckAgent  = "agent" // CheckOK, CheckMismatch, or CheckNotApplicable when no agent was asked about

	CheckOK            CheckResult = "ok"
	CheckFailed        CheckResult = "failed"
	CheckExpired       CheckResult = "expired"
	CheckNotYetValid   CheckResult = "not_yet_valid" // computed_at more than 5 minutes after the server's clock
	CheckConfirmed     CheckResult = "confirmed"
	CheckMismatch      CheckResult = "mismatch"
	CheckNotApplicable CheckResult = "not_applicable"
	// CheckRevoked: the ledger check of a passport the server revoked
	// (CodePassportRevoked).
	CheckRevoked CheckResult = "revoked"
	// CheckChangedSinceIssue: see CheckLedger.
	CheckChangedSinceIssue CheckResult = "changed_since_issue"
)

// Check is one level of verification and its result.
type Check struct {
	Name   string
	Result CheckResult
}

// Checks are the levels of a verification in the order they ran. In JSON
// they are one object, a member per level in that order:
// {"signature":"ok","consistency":"ok",…}.
type Checks []Check

// Result returns the result of the check named name, "" when there is none.
func (cs Checks) Result(name string) CheckResult {
	for _, c := range cs {
		if c.Name == name {
			return c.Result
		}
	}
	return ""
}

// Set sets the result of the check named name, if there is one.
func (cs Checks) Set(name string, r CheckResult) {
	for i := range cs {
		if cs[i].Name == name {
			cs[i].Result = r
		}
	}
}

// MarshalJSON writes the checks as one object in their order. Names and
// results are plain identifiers: nothing needs escaping.
func (cs Checks) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 128)
	b = append(b, '{')
	for i, c := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, c.Name...)
		b = append(b, `":"`...)
		b = append(b, c.Result...)
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads the object MarshalJSON writes, keeping its members'
// order; every member must be a string.
func (cs *Checks) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*cs = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil {
		return err
	} else if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("api: checks must be a JSON object")
	}
	out := Checks{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := t.(string)
		var r CheckResult
		if err := dec.Decode(&r); err != nil {
			return fmt.Errorf("api: check %q: %w", name, err)
		}
		out = append(out, Check{Name: name, Result: r})
	}
	*cs = out
	return nil
}
