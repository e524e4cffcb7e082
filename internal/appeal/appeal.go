// Package appeal is the vocabulary and the rules of appeals (spec §11.3):
// an agent disputes the data behind an issued passport, within 30 days of
// its computation, on data grounds only; the operator acknowledges within
// 7 days, decides within 21, and when it upholds, the named corrections
// are recorded and the passports re-issued within 7 days. It does no I/O:
// internal/service runs the use cases and the store keeps the appeals.
package appeal

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Grounds are what an appeal may dispute: data errors only (§11.3).
type Grounds string

// The grounds of §11.3, named as on the wire.
const (
	IncorrectCount  Grounds = "incorrect_count"  // events not counted, or counted wrongly
	IncorrectStatus Grounds = "incorrect_status" // a session or transaction with the wrong final status
	IdentityError   Grounds = "identity_error"   // events attributed to the wrong agent
)

// State is where an appeal is.
type State string

// The states: submitted → acknowledged → upheld | rejected, and escalated
// (to the Advisory Board, §11.3 step 4) from either decision.
const (
	Submitted    State = "submitted"
	Acknowledged State = "acknowledged"
	Upheld       State = "upheld"
	Rejected     State = "rejected"
	Escalated    State = "escalated"
)

// ValidState reports whether s is one of the five states.
func ValidState(s State) bool {
	switch s {
	case Submitted, Acknowledged, Upheld, Rejected, Escalated:
		return true
	}
	return false
}

// Action is what an operator does to an appeal.
type Action string

// The actions, named as the CLI and the API name them.
const (
	File     Action = "file"
	Ack      Action = "ack"
	Uphold   Action = "uphold"
	Reject   Action = "reject"
	Escalate Action = "escalate"
)

// The deadlines of §11.3.
const (
	FilingWindow = 30 * 24 * time.Hour // after the passport's computed_at
	AckWithin    = 7 * 24 * time.Hour  // after filing
	DecideWithin = 21 * 24 * time.Hour // after filing
	ReissueAfter = 7 * 24 * time.Hour  // after upholding
)

// MaxTextLen bounds a statement or a decision's reason, in bytes.
const MaxTextLen = 4000

// Appeal is one appeal and its history.
type Appeal struct {
	ID      string
	AgentID string
	// PassportID is the agent_passport_id of the disputed passport, and
	// PassportComputedAt its computed_at.
	PassportID         string
	PassportComputedAt time.Time
	Grounds            Grounds
	// Statement is the agent's account of the error.
	Statement string
	// Events are the events the appeal disputes.
	Events  []ledger.EventKey
	State   State
	FiledBy string
	FiledAt time.Time
	// AcknowledgedAt, DecidedAt and EscalatedAt are zero until they happen.
	AcknowledgedAt time.Time
	DecidedAt      time.Time
	EscalatedAt    time.Time
	// Decision is the reason given with the decision.
	Decision string
	// Corrections are the ids of the corrections an uphold recorded, and
	// ReissuedAt when the affected passports were re-issued (zero if
	// not).
	Corrections []string
	ReissuedAt  time.Time
	// History lists every action, oldest first.
	History []Entry
}

// Entry is one action in an appeal's history: who did what, when, and why.
type Entry struct {
	Action Action
	By     string
	At     time.Time
	Note   string
}

// Filing is an agent's appeal as submitted (by the operator on its behalf
// or, with an agent token, by the agent).
type Filing struct {
	ID         string
	PassportID string
	Grounds    Grounds
	Statement  string
	Events     []ledger.EventKey
	By         string
	At         time.Time
}

// New checks a filing against the passport it disputes and returns the
// submitted appeal. Errors match errkind.ErrInvalid and say why: grounds
// other than the three data errors (a disagreement with the formula is not
// a ground, §11.3), a filing more than 30 days after the passport's
// computation, no disputed event, malformed ids or text.
func New(f Filing, p ledger.IssuedPassport) (Appeal, error) {
	switch f.Grounds {
	case IncorrectCount, IncorrectStatus, IdentityError:
	case "formula", "formula_disagreement", "weighting":
		return Appeal{}, fmt.Errorf("%w: grounds: a disagreement with the formula is not a ground for appeal; only data errors are (incorrect_count, incorrect_status, identity_error; spec §11.3)", errkind.ErrInvalid)
	default:
		return Appeal{}, fmt.Errorf("%w: grounds: %q is not incorrect_count, incorrect_status or identity_error (only data errors may be appealed, spec §11.3)", errkind.ErrInvalid, f.Grounds)
	}
	if err := ledger.CheckID("id", f.ID); err != nil {
		return Appeal{}, err
	}
	if err := ledger.CheckID("by", f.By); err != nil {
		return Appeal{}, err
	}
	if f.PassportID != p.ID {
		return Appeal{}, fmt.Errorf("appeal: filing names passport %q, given %q", f.PassportID, p.ID)
	}
	if f.At.IsZero() {
		return Appeal{}, fmt.Errorf("%w: at: the filing time is required", errkind.ErrInvalid)
	}
	if deadline := p.ComputedAt.Add(FilingWindow); f.At.After(deadline) {
		return Appeal{}, fmt.Errorf("%w: passport_id: the passport was computed at %s; appeals are accepted until %s (30 days, spec §11.3)",
			errkind.ErrInvalid, ledger.FormatTime(p.ComputedAt), ledger.FormatTime(deadline))
	}
	if err := checkText("statement", f.Statement, true); err != nil {
		return Appeal{}, err
	}
	if len(f.Events) == 0 {
		return Appeal{}, fmt.Errorf("%w: events: name at least one disputed event", errkind.ErrInvalid)
	}
	events := slices.Clone(f.Events)
	for _, e := range events {
		if !e.Type.Valid() {
			return Appeal{}, fmt.Errorf("%w: events: type %q is not conduit_session, ap2_transaction or task_offer", errkind.ErrInvalid, e.Type)
		}
		if err := ledger.CheckID("events: id", e.ID); err != nil {
			return Appeal{}, err
		}
	}
	slices.SortFunc(events, func(a, b ledger.EventKey) int {
		if c := strings.Compare(string(a.Type), string(b.Type)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	events = slices.Compact(events)
	at := f.At.UTC().Truncate(ledger.Resolution)
	return Appeal{
		ID: f.ID, AgentID: p.AgentID, PassportID: p.ID, PassportComputedAt: p.ComputedAt, Grounds: f.Grounds,
		Statement: f.Statement, Events: events, State: Submitted, FiledBy: f.By, FiledAt: at,
		History: []Entry{{Action: File, By: f.By, At: at}},
	}, nil
}

// Apply performs an action on a and returns the appeal after it. Moves:
// ack (submitted → acknowledged), uphold and reject (submitted or
// acknowledged → upheld / rejected; deciding acknowledges too), escalate
// (upheld or rejected → escalated). A decision needs a reason. Errors:
// ErrConflict for a move the state does not allow, ErrInvalid for a
// malformed action, actor or note.
func Apply(a Appeal, act Action, by string, at time.Time, note string) (Appeal, error) {
	if err := ledger.CheckID("by", by); err != nil {
		return a, err
	}
	if at.IsZero() {
		return a, fmt.Errorf("%w: at: the action's time is required", errkind.ErrInvalid)
	}
	at = at.UTC().Truncate(ledger.Resolution)
	decision := act == Uphold || act == Reject
	if err := checkText("reason", note, decision); err != nil {
		return a, err
	}
	from := a.State
	refuse := func() (Appeal, error) {
		return a, fmt.Errorf("%w: appeal %s is %s and cannot be %s", errkind.ErrConflict, a.ID, from, pastTense(act))
	}
	out := a
	out.History = append(slices.Clone(a.History), Entry{Action: act, By: by, At: at, Note: note})
	switch act {
	case Ack:
		if from != Submitted {
			return refuse()
		}
		out.State, out.AcknowledgedAt = Acknowledged, at
	case Uphold, Reject:
		if from != Submitted && from != Acknowledged {
			return refuse()
		}
		if from == Submitted {
			out.AcknowledgedAt = at
		}
		out.State, out.DecidedAt, out.Decision = Upheld, at, note
		if act == Reject {
			out.State = Rejected
		}
	case Escalate:
		if from != Upheld && from != Rejected {
			return refuse()
		}
		out.State, out.EscalatedAt = Escalated, at
	default:
		return a, fmt.Errorf("%w: action %q is not ack, uphold, reject or escalate", errkind.ErrInvalid, act)
	}
	return out, nil
}

func pastTense(a Action) string {
	switch a {
	case Ack:
		return "acknowledged"
	case Uphold:
		return "upheld"
	case Reject:
		return "rejected"
	case Escalate:
		return "escalated"
	}
	return string(a)
}

func checkText(field, s string, required bool) error {
	switch {
	case s == "" && required:
		return fmt.Errorf("%w: %s is required", errkind.ErrInvalid, field)
	case len(s) > MaxTextLen:
		return fmt.Errorf("%w: %s is %d bytes long (at most %d)", errkind.ErrInvalid, field, len(s), MaxTextLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s is not valid UTF-8", errkind.ErrInvalid, field)
	}
	for _, c := range s {
		if c < 0x20 && c != '\n' || c == 0x7f {
			return fmt.Errorf("%w: %s contains a control character", errkind.ErrInvalid, field)
		}
	}
	return nil
}

// Deadline is the next duty an appeal is waiting on: what, and by when.
type Deadline struct {
	Duty string // "acknowledge", "decide", "re-issue", or "" when none
	Due  time.Time
}

// Next returns the duty the operator owes on a and its deadline.
func (a *Appeal) Next() Deadline {
	switch {
	case a.State == Submitted:
		return Deadline{"acknowledge", a.FiledAt.Add(AckWithin)}
	case a.State == Acknowledged:
		return Deadline{"decide", a.FiledAt.Add(DecideWithin)}
	case a.State == Upheld && a.ReissuedAt.IsZero():
		return Deadline{"re-issue", a.DecidedAt.Add(ReissueAfter)}
	}
	return Deadline{}
}

// Overdue reports whether the duty a is waiting on is past its deadline at
// now.
func (a *Appeal) Overdue(now time.Time) bool {
	d := a.Next()
	return d.Duty != "" && now.After(d.Due)
}
