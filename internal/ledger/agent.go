package ledger

import (
	"fmt"
	"strings"
	"time"
)

// AgentInfo summarises an agent's ledger.
type AgentInfo struct {
	ID           string
	RegisteredAt time.Time // when its first event was recorded
	ChainLength  int64     // its head's seq: records ever appended to its hash chain
	// PrunedThrough is the seq of the last record a prune removed (its
	// anchor), 0 when none was.
	PrunedThrough int64
	ChainHead     Hash
	Visibility    Visibility
}

// Visibility is an agent's consent choice for public display (§11.1, §8.4).
type Visibility string

// The two visibilities. Agents without a recorded choice are public.
const (
	VisibilityPublic   Visibility = "public"
	VisibilityUnlisted Visibility = "unlisted"
)

// VerifyReport is the result of walking every hash chain.
type VerifyReport struct {
	Agents  int64 // chains walked
	Records int64 // chain records checked
	Events  int64 // event rows checked
	Broken  []BrokenLink
}

// BrokenLink is the first inconsistency found in one agent's chain.
type BrokenLink struct {
	AgentID string
	Seq     int64  // chain position (0 when the problem is an event row without a record)
	EventID string // the event concerned, when known
	Reason  string
}

func (b BrokenLink) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "agent %s seq %d", b.AgentID, b.Seq)
	if b.EventID != "" {
		fmt.Fprintf(&s, " event %s", b.EventID)
	}
	s.WriteString(": " + b.Reason)
	return s.String()
}

// Consent is what an agent agreed to about its score (§11.1): its
// visibility choice, and which disclosure text it consented to, when and
// through whom.
type Consent struct {
	Visibility Visibility
	// DisclosureVersion names the disclosure text consented to; "" when
	// the agent has not consented.
	DisclosureVersion string
	GivenAt           time.Time
	By                string // who recorded it: the agent's token or an operator
}

// Consented reports whether the agent has consented to some disclosure.
func (c Consent) Consented() bool { return c.DisclosureVersion != "" }

// CheckConsent checks the fields of a consent to record: the disclosure
// version and who records it must be valid ids (CheckID). Errors:
// ErrInvalid naming the field.
func CheckConsent(version, by string) error {
	if err := CheckID("version", version); err != nil {
		return err
	}
	return CheckID("by", by)
}
