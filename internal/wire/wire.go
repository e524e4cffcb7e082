// Package wire holds the JSON shapes that both transports print for the
// same use case: the HTTP API answers them and the CLI's --json prints them
// byte for byte alike, so that a script can switch between the two. A shape
// printed by one transport only stays in that transport.
package wire

import (
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// OptTime is t as the ledger formats it, or nil (JSON null) when it has
// not happened.
func OptTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := ledger.FormatTime(t)
	return &s
}

// Micros renders an instant as the ledger keeps it: UTC, with its
// microseconds when it has any.
func Micros(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// seconds renders a passport's instant, which has whole seconds.
func seconds(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// Correction is a stored correction (POST /swarmscore/corrections,
// swarmscore correct --json).
type Correction struct {
	ID         string  `json:"id"`
	EventType  string  `json:"event_type"`
	EventID    string  `json:"event_id"`
	Action     string  `json:"action"`
	Status     string  `json:"status,omitempty"`
	AgentID    string  `json:"agent_id,omitempty"`
	Reason     string  `json:"reason"`
	AppealID   string  `json:"appeal_id,omitempty"`
	By         string  `json:"by"`
	At         string  `json:"at"`
	FromAgent  string  `json:"from_agent"`
	ToAgent    string  `json:"to_agent"`
	FromStatus string  `json:"from_status"`
	ToStatus   string  `json:"to_status"`
	ReissuedAt *string `json:"reissued_at"`
}

// CorrectionOf is c's shape.
func CorrectionOf(c *ledger.Correction) Correction {
	return Correction{ID: c.ID, EventType: string(c.EventType), EventID: c.EventID, Action: string(c.Action),
		Status: string(c.Status), AgentID: c.AgentID, Reason: c.Reason, AppealID: c.AppealID, By: c.By,
		At: ledger.FormatTime(c.At), FromAgent: c.FromAgent, ToAgent: c.ToAgent, FromStatus: string(c.FromStatus),
		ToStatus: string(c.ToStatus), ReissuedAt: OptTime(c.ReissuedAt)}
}

// Appeal is an appeal with its next deadline and history (the appeals
// routes, swarmscore appeal … --json).
type Appeal struct {
	ID                 string     `json:"id"`
	AgentID            string     `json:"agent_id"`
	PassportID         string     `json:"agent_passport_id"`
	PassportComputedAt string     `json:"passport_computed_at"`
	Grounds            string     `json:"grounds"`
	Statement          string     `json:"statement"`
	Events             []EventKey `json:"events"`
	State              string     `json:"state"`
	FiledBy            string     `json:"filed_by"`
	FiledAt            string     `json:"filed_at"`
	AcknowledgedAt     *string    `json:"acknowledged_at"`
	DecidedAt          *string    `json:"decided_at"`
	EscalatedAt        *string    `json:"escalated_at"`
	Decision           string     `json:"decision,omitempty"`
	Corrections        []string   `json:"corrections"`
	ReissuedAt         *string    `json:"reissued_at"`
	NextDeadline       *Deadline  `json:"next_deadline"`
	Overdue            bool       `json:"overdue"`
	History            []History  `json:"history"`
}

// EventKey names an event.
type EventKey struct {
	EventType string `json:"event_type"`
	EventID   string `json:"event_id"`
}

// Deadline is an appeal's next duty and when it is due.
type Deadline struct {
	Duty string `json:"duty"`
	Due  string `json:"due"`
}

// History is one action on an appeal.
type History struct {
	Action string `json:"action"`
	By     string `json:"by"`
	At     string `json:"at"`
	Note   string `json:"note,omitempty"`
}

// AppealOf is s's shape.
func AppealOf(s *service.AppealStatus) Appeal {
	a := &s.Appeal
	out := Appeal{ID: a.ID, AgentID: a.AgentID, PassportID: a.PassportID, PassportComputedAt: ledger.FormatTime(a.PassportComputedAt),
		Grounds: string(a.Grounds), Statement: a.Statement, Events: make([]EventKey, len(a.Events)), State: string(a.State),
		FiledBy: a.FiledBy, FiledAt: ledger.FormatTime(a.FiledAt), AcknowledgedAt: OptTime(a.AcknowledgedAt),
		DecidedAt: OptTime(a.DecidedAt), EscalatedAt: OptTime(a.EscalatedAt), Decision: a.Decision,
		Corrections: append([]string{}, a.Corrections...), ReissuedAt: OptTime(a.ReissuedAt), Overdue: s.Overdue,
		History: make([]History, len(a.History))}
	for i, e := range a.Events {
		out.Events[i] = EventKey{string(e.Type), e.ID}
	}
	for i, h := range a.History {
		out.History[i] = History{Action: string(h.Action), By: h.By, At: ledger.FormatTime(h.At), Note: h.Note}
	}
	if s.Next.Duty != "" {
		out.NextDeadline = &Deadline{Duty: s.Next.Duty, Due: ledger.FormatTime(s.Next.Due)}
	}
	return out
}

// Erasure is an erasure (POST /swarmscore/{agent_id}/erase, GET
// /swarmscore/erasures, swarmscore agent erase|erasures --json). It never
// names the erased id: whoever asked knows it, and output that paired it
// with the pseudonym would undo the erasure.
type Erasure struct {
	ID        string `json:"erasure_id"`
	Pseudonym string `json:"pseudonym"`
	ErasedAt  string `json:"erased_at"`
	ErasedBy  string `json:"erased_by"`
	Identity  string `json:"identity"`
	Sealed    int    `json:"sealed_records"`
	// Only in the answer to the erasure itself.
	Opening *Opening `json:"opening,omitempty"`
	Reason  *string  `json:"reason,omitempty"`
}

// Opening opens an erasure's identity commitment.
type Opening struct {
	Category audit.Category `json:"category"`
	Salt     string         `json:"salt"`
}

// ErasureOf is e's shape, without an opening.
func ErasureOf(e *ledger.Erasure) Erasure {
	return Erasure{ID: e.ID, Pseudonym: e.Pseudonym, ErasedAt: ledger.FormatTime(e.At), ErasedBy: e.By,
		Identity: e.Identity, Sealed: len(e.Digests)}
}

// ErasureResultOf is the answer to an erasure: its shape with the opening,
// shown this once, and the reason when one was given.
func ErasureResultOf(r *service.ErasureResult) Erasure {
	out := ErasureOf(&r.Erasure)
	out.Opening = &Opening{Category: audit.Agents, Salt: hex.EncodeToString(r.Opening[:])}
	if r.Reason != "" {
		out.Reason = &r.Reason
	}
	return out
}

// Records is an agent's access to its data (GET
// /swarmscore/{agent_id}/records, swarmscore agent records --json).
type Records struct {
	AgentID   string     `json:"agent_id"`
	AsOf      string     `json:"as_of"`
	Masked    bool       `json:"buyer_ids_masked"`
	Events    []Record   `json:"events"`
	Passports []Passport `json:"passports"`
}

// Record is one event counting in the score, in its current state.
type Record struct {
	Type              ledger.Type   `json:"type"`
	ID                string        `json:"id"`
	AgentID           string        `json:"agent_id"`
	BuyerID           *string       `json:"buyer_id"`
	Status            ledger.Status `json:"status"`
	ReportedStatus    ledger.Status `json:"reported_status,omitempty"`
	ReportedAgentID   string        `json:"reported_agent_id,omitempty"`
	EscrowAmountCents *int64        `json:"escrow_amount_cents,omitempty"`
	StartedAt         string        `json:"started_at"`
	CompletedAt       string        `json:"completed_at,omitempty"`
	SettledAt         string        `json:"settled_at,omitempty"`
	Operator          string        `json:"operator"`
	Seq               int64         `json:"seq"`
	Corrected         bool          `json:"corrected"`
}

// Passport is one passport issued to the agent.
type Passport struct {
	ID         string          `json:"agent_passport_id"`
	ComputedAt string          `json:"computed_at"`
	ExpiresAt  string          `json:"expires_at"`
	KeyID      *string         `json:"key_id"`
	Passport   json.RawMessage `json:"passport"`
}

// RecordsOf is rec's shape.
func RecordsOf(rec *service.AgentRecords) Records {
	out := Records{AgentID: rec.AgentID, AsOf: Micros(rec.AsOf), Masked: rec.Masked,
		Events: make([]Record, 0, len(rec.Events)), Passports: make([]Passport, 0, len(rec.Passports))}
	for i := range rec.Events {
		e := &rec.Events[i]
		j := Record{Type: e.Type, ID: e.ID, AgentID: e.AgentID, Status: e.Status, ReportedAgentID: e.ReportedAgentID,
			StartedAt: Micros(e.StartedAt), Operator: e.Operator, Seq: e.Seq, Corrected: e.Corrected}
		if e.BuyerID != "" {
			j.BuyerID = &e.BuyerID
		}
		if e.ReportedStatus != e.Status {
			j.ReportedStatus = e.ReportedStatus
		}
		if e.Type == ledger.AP2Transaction {
			j.EscrowAmountCents, j.SettledAt = &e.EscrowAmountCents, Micros(e.EndedAt)
		} else {
			j.CompletedAt = Micros(e.EndedAt)
		}
		out.Events = append(out.Events, j)
	}
	for i := range rec.Passports {
		p := &rec.Passports[i]
		j := Passport{ID: p.ID, ComputedAt: seconds(p.ComputedAt), ExpiresAt: seconds(p.ExpiresAt), Passport: p.Document}
		if p.KeyID != "" {
			j.KeyID = &p.KeyID
		}
		out.Passports = append(out.Passports, j)
	}
	return out
}
