// Package ledger is the event record a score is computed from (spec §3.1,
// §12.1, §12.2, §8.2, §15.2): Conduit sessions and AP2 transactions, their
// lifecycles, the 90-day window and the per-agent hash chain that makes the
// record tamper-evident. It does no I/O; the store persists what it defines.
//
// An event is identified by its type and the id its reporter gave it.
// Reporting a later status of the same event is sending the same id again
// with the new status; the ledger accepts it only if the status moves forward
// and every immutable field (agent, buyer, amount, started_at) is unchanged.
package ledger

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// Type is the kind of an event: a Conduit session, an AP2 transaction, or a
// task offer.
type Type string

// The event types, named as on the wire. Task offers (issue 16, spec §8.3
// "success rate gaming") never enter the score: they record which work an
// agent accepted and declined, so that an operator can see its acceptance
// rate beside its success rate.
const (
	ConduitSession Type = "conduit_session"
	AP2Transaction Type = "ap2_transaction"
	TaskOffer      Type = "task_offer"
)

// Types lists the event types in a fixed order.
var Types = []Type{ConduitSession, AP2Transaction, TaskOffer}

// Valid reports whether t is one of the event types.
func (t Type) Valid() bool { return t == ConduitSession || t == AP2Transaction || t == TaskOffer }

// MaxEscrowCents is the largest escrow amount accepted: 2^53 − 1 cents
// (about 90 trillion dollars). Larger integers are not exactly representable
// as JSON numbers in most JSON implementations (JavaScript, RFC 8785), so the
// ledger refuses them instead of letting a client round them.
const MaxEscrowCents = 1<<53 - 1

// Event is one report of a Conduit session or an AP2 transaction. Obtain one
// from ParseEvent (or build one and call Validate); every Event the store
// accepts has passed Validate, so its times are UTC with at most microsecond
// precision.
type Event struct {
	Type Type
	ID   string
	// AgentID is the scored agent: agent_id for a Conduit session,
	// provider_id for an AP2 transaction.
	AgentID string
	// BuyerID is the buyer; "" when absent (allowed only for Conduit).
	BuyerID string
	Status  Status
	// EscrowAmountCents is the AP2 escrow amount; always 0 for Conduit.
	EscrowAmountCents int64
	StartedAt         time.Time
	// EndedAt is completed_at (Conduit) or settled_at (AP2): set exactly
	// when the status is terminal.
	EndedAt time.Time
	// ProofHash is a Conduit session's proof_hash (§12.1: the SHA-256 of
	// its proof bundle, 64 lowercase hex), "" when not reported. It is
	// not part of the chain's content (whose bytes cannot change) and
	// not an immutable field: the first report that carries one records
	// it, later ones never replace it (docs/ERRATA.md E57). Proof checks
	// (ProofCheck) chain the hash they were checked against.
	ProofHash string
}

// Counted reports whether e enters the 90-day counts at all (a VERIFIED or
// FAILED session, a SETTLED, DISPUTED or REFUNDED transaction).
func (e *Event) Counted() bool { return e.Status.CountsTotal() }

// SameImmutable reports whether e and o agree on every field a later report
// of the same event may not change.
func (e *Event) SameImmutable(o *Event) bool {
	return e.Type == o.Type && e.ID == o.ID && e.AgentID == o.AgentID && e.BuyerID == o.BuyerID &&
		e.EscrowAmountCents == o.EscrowAmountCents && e.StartedAt.Equal(o.StartedAt)
}

// Equal reports whether e and o are the same report (a re-send is a no-op).
func (e *Event) Equal(o *Event) bool {
	return e.SameImmutable(o) && e.Status == o.Status && e.EndedAt.Equal(o.EndedAt)
}

// FieldError says which field of an event was rejected and why. It matches
// errkind.ErrInvalid.
type FieldError struct {
	Field  string
	Reason string
	// Code is the refusal's stable code (errkind.Code), "" for none.
	Code string
}

// ErrorCode reports Code to errkind.Code.
func (e *FieldError) ErrorCode() string { return e.Code }

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// Is makes errors.Is(err, errkind.ErrInvalid) true.
func (e *FieldError) Is(target error) bool { return target == errkind.ErrInvalid }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// MaxIDLen is the longest id, in bytes.
const MaxIDLen = 128

// ValidID reports whether s is a valid agent, buyer, event or operator id:
// 1 to MaxIDLen (128) characters from [A-Za-z0-9._:-], other than "." and "..". Ids
// are URL path segments (/swarmscore/{agent_id}), where those two mean the
// segment itself and its parent (RFC 3986 §5.2.4): an agent named ".." would
// have URLs that clients, proxies and caches rewrite to other routes.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLen || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// CheckID returns a *FieldError naming field unless ValidID(s). It is the
// one id rule of every transport: ingest, corrections, appeals, tokens,
// erasure and the {agent_id} of URLs.
func CheckID(field, s string) error {
	if ValidID(s) {
		return nil
	}
	e := &FieldError{Field: field, Code: InvalidIDCode}
	switch {
	case s == "":
		e.Reason = "must not be empty"
	case len(s) > 128:
		e.Reason = fmt.Sprintf("is %d characters long (at most 128)", len(s))
	case s == "." || s == "..":
		e.Reason = fmt.Sprintf("%q is not an id: \".\" and \"..\" are path segments with a special meaning", s)
	default:
		e.Reason = fmt.Sprintf("%q has a character outside [A-Za-z0-9._:-]", s)
	}
	return e
}

// InvalidIDCode is the code (errkind.Code) of every id CheckID refuses.
const InvalidIDCode = "invalid_id"

// endField is the wire name of the terminal timestamp for the event's type.
func (t Type) endField() string {
	switch t {
	case AP2Transaction:
		return "settled_at"
	case TaskOffer:
		return "decided_at"
	}
	return "completed_at"
}

// agentField is the wire name of the scored agent for the event's type.
func (t Type) agentField() string {
	if t == AP2Transaction {
		return "provider_id"
	}
	return "agent_id"
}

// Validate checks every field and the consistency between them, returning
// the first problem as a *FieldError (errkind.ErrInvalid). Times must
// already be UTC with at most microsecond precision (ParseEvent guarantees
// it; use NormalizeTime for others).
func (e *Event) Validate() error {
	if !e.Type.Valid() {
		return fieldErr("type", "%q is not conduit_session, ap2_transaction or task_offer", e.Type)
	}
	if err := CheckID("id", e.ID); err != nil {
		return err
	}
	if err := CheckID(e.Type.agentField(), e.AgentID); err != nil {
		return err
	}
	if e.BuyerID != "" || e.Type != ConduitSession {
		if err := CheckID("buyer_id", e.BuyerID); err != nil {
			return err
		}
	}
	if !e.Status.ValidFor(e.Type) {
		return fieldErr("status", "%q is not a %s status (want one of %s)", e.Status, e.Type, statusList(e.Type))
	}
	switch e.Type {
	case ConduitSession, TaskOffer:
		if e.EscrowAmountCents != 0 {
			return fieldErr("escrow_amount_cents", "only ap2_transaction events carry an escrow amount")
		}
	case AP2Transaction:
		if e.EscrowAmountCents < 0 || e.EscrowAmountCents > MaxEscrowCents {
			return fieldErr("escrow_amount_cents", "%d is outside 0..%d", e.EscrowAmountCents, int64(MaxEscrowCents))
		}
	}
	if err := checkTime("started_at", e.StartedAt); err != nil {
		return err
	}
	end := e.Type.endField()
	if e.Status.Terminal() {
		if e.EndedAt.IsZero() {
			return fieldErr(end, "is required when status is %s", e.Status)
		}
		if err := checkTime(end, e.EndedAt); err != nil {
			return err
		}
		if e.EndedAt.Before(e.StartedAt) {
			return fieldErr(end, "%s precedes started_at %s", FormatTime(e.EndedAt), FormatTime(e.StartedAt))
		}
	} else if !e.EndedAt.IsZero() {
		return fieldErr(end, "must be absent while status is %s (not terminal)", e.Status)
	}
	return nil
}

func checkTime(field string, t time.Time) error {
	switch {
	case t.IsZero():
		return fieldErr(field, "is required")
	case t.Location() != time.UTC:
		return fieldErr(field, "must be in UTC")
	case t.Nanosecond()%1000 != 0:
		return fieldErr(field, "has more precision than microseconds")
	case t.Year() < 1 || t.Year() > 9999:
		return fieldErr(field, "year %d is outside 0001..9999", t.Year())
	}
	return nil
}

// NormalizeTime converts t to UTC and rejects (as a *FieldError naming
// field) sub-microsecond precision, which the stores cannot keep: truncating
// it silently would make two different reports look identical.
func NormalizeTime(field string, t time.Time) (time.Time, error) {
	t = t.UTC()
	if err := checkTime(field, t); err != nil {
		return time.Time{}, err
	}
	return t, nil
}

// timeLayout renders UTC times with exactly the precision they carry (at
// most microseconds), e.g. 2026-03-17T14:30:00Z or 2026-03-17T14:30:00.5Z.
const timeLayout = "2006-01-02T15:04:05.999999Z07:00"

// FormatTime renders t in UTC as RFC 3339 with at most six fractional digits.
func FormatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// ParseTime parses an RFC 3339 time with any offset and returns it in UTC.
// Errors are *FieldError values naming field.
func ParseTime(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fieldErr(field, "%q is not an RFC 3339 time (e.g. 2026-03-17T14:30:00Z)", s)
	}
	return NormalizeTime(field, t)
}

// wireEvent is the JSON shape of an event, used for output. Field order is
// irrelevant to readers; Canonical defines the hashed form.
type wireEvent struct {
	Type              Type   `json:"type"`
	ID                string `json:"id"`
	AgentID           string `json:"agent_id,omitempty"`
	ProviderID        string `json:"provider_id,omitempty"`
	BuyerID           string `json:"buyer_id,omitempty"`
	Status            Status `json:"status"`
	EscrowAmountCents *int64 `json:"escrow_amount_cents,omitempty"`
	StartedAt         string `json:"started_at"`
	CompletedAt       string `json:"completed_at,omitempty"`
	SettledAt         string `json:"settled_at,omitempty"`
	DecidedAt         string `json:"decided_at,omitempty"`
	ProofHash         string `json:"proof_hash,omitempty"`
}

// MarshalJSON renders the event in the wire format ParseEvent reads.
func (e Event) MarshalJSON() ([]byte, error) {
	w := wireEvent{Type: e.Type, ID: e.ID, BuyerID: e.BuyerID, Status: e.Status, StartedAt: FormatTime(e.StartedAt)}
	var end string
	if !e.EndedAt.IsZero() {
		end = FormatTime(e.EndedAt)
	}
	switch e.Type {
	case AP2Transaction:
		amount := e.EscrowAmountCents
		w.ProviderID, w.EscrowAmountCents, w.SettledAt = e.AgentID, &amount, end
	case TaskOffer:
		w.AgentID, w.DecidedAt = e.AgentID, end
	default:
		w.AgentID, w.CompletedAt, w.ProofHash = e.AgentID, end, e.ProofHash
	}
	return json.Marshal(w)
}

// UnmarshalJSON accepts exactly what ParseEvent accepts.
func (e *Event) UnmarshalJSON(b []byte) error {
	v, err := ParseEvent(b)
	if err != nil {
		return err
	}
	*e = v
	return nil
}
