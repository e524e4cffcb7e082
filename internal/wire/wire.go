// Package wire renders the use cases' results as the public JSON shapes of
// package api, for the transports that print the same use case: the HTTP
// API answers them and the CLI's --json prints them, byte for byte alike,
// so that a script can switch between the two. A result that one transport
// alone renders is converted in that transport.
package wire

import (
	"encoding/hex"
	"encoding/json"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"time"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/signal"
	"github.com/swarmscore/swarmscore/internal/webhook"
	"github.com/swarmscore/swarmscore/passport"
)

// Micros renders an instant as the ledger keeps it: UTC, with its
// microseconds when it has any (for text output; api times marshal alike).
func Micros(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ledgerTime is t as ledger.FormatTime renders it: UTC, at most
// microseconds.
func ledgerTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// optTime is ledgerTime(t), or nil (JSON null) when t has not happened.
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	v := ledgerTime(t)
	return &v
}

// Seconds is t as a passport renders it: UTC, whole seconds.
func Seconds(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// CorrectionOf is c's shape.
func CorrectionOf(c *ledger.Correction) api.Correction {
	return api.Correction{ID: c.ID, EventType: string(c.EventType), EventID: c.EventID, Action: string(c.Action),
		Status: string(c.Status), AgentID: c.AgentID, Reason: c.Reason, AppealID: c.AppealID, By: c.By,
		At: ledgerTime(c.At), FromAgent: c.FromAgent, ToAgent: c.ToAgent, FromStatus: string(c.FromStatus),
		ToStatus: string(c.ToStatus), ReissuedAt: optTime(c.ReissuedAt)}
}

// CorrectionRequest is the request c describes.
func CorrectionRequest(c *api.CorrectionRequest) ledger.CorrectionRequest {
	return ledger.CorrectionRequest{EventType: ledger.Type(c.EventType), EventID: c.EventID, Action: ledger.CorrectionAction(c.Action),
		Status: ledger.Status(c.Status), AgentID: c.AgentID, Reason: c.Reason, AppealID: c.AppealID}
}

// AppealOf is s's shape.
func AppealOf(s *service.AppealStatus) api.Appeal {
	a := &s.Appeal
	out := api.Appeal{ID: a.ID, AgentID: a.AgentID, PassportID: a.PassportID, PassportComputedAt: ledgerTime(a.PassportComputedAt),
		Grounds: string(a.Grounds), Statement: a.Statement, Events: make([]api.EventKey, len(a.Events)), State: string(a.State),
		FiledBy: a.FiledBy, FiledAt: ledgerTime(a.FiledAt), AcknowledgedAt: optTime(a.AcknowledgedAt),
		DecidedAt: optTime(a.DecidedAt), EscalatedAt: optTime(a.EscalatedAt), Decision: a.Decision,
		Corrections: append([]string{}, a.Corrections...), ReissuedAt: optTime(a.ReissuedAt), Overdue: s.Overdue,
		History: make([]api.History, len(a.History))}
	for i, e := range a.Events {
		out.Events[i] = api.EventKey{EventType: string(e.Type), EventID: e.ID}
	}
	for i, h := range a.History {
		out.History[i] = api.History{Action: string(h.Action), By: h.By, At: ledgerTime(h.At), Note: h.Note}
	}
	if s.Next.Duty != "" {
		out.NextDeadline = &api.Deadline{Duty: s.Next.Duty, Due: ledgerTime(s.Next.Due)}
	}
	return out
}

// AppealsOf is list's shape.
func AppealsOf(list []service.AppealStatus) api.Appeals {
	out := api.Appeals{Appeals: make([]api.Appeal, len(list))}
	for i := range list {
		out.Appeals[i] = AppealOf(&list[i])
	}
	return out
}

// ErasureOf is e's shape, without an opening.
func ErasureOf(e *ledger.Erasure) api.Erasure {
	return api.Erasure{ID: e.ID, Pseudonym: e.Pseudonym, ErasedAt: ledgerTime(e.At), ErasedBy: e.By,
		Identity: e.Identity, SealedRecords: len(e.Digests)}
}

// ErasuresOf is the list of es, without openings.
func ErasuresOf(es []ledger.Erasure) api.Erasures {
	out := api.Erasures{Erasures: make([]api.Erasure, 0, len(es))}
	for i := range es {
		out.Erasures = append(out.Erasures, ErasureOf(&es[i]))
	}
	return out
}

// ErasureResultOf is the answer to an erasure: its shape with the opening,
// shown this once, and the reason when one was given.
func ErasureResultOf(r *service.ErasureResult) api.Erasure {
	out := ErasureOf(&r.Erasure)
	out.Opening = &api.Opening{Category: string(audit.Agents), Salt: hex.EncodeToString(r.Opening[:])}
	out.Reason = r.Reason
	return out
}

// RecordsOf is rec's shape.
func RecordsOf(rec *service.AgentRecords) api.Records {
	out := api.Records{AgentID: rec.AgentID, AsOf: rec.AsOf.UTC(), BuyerIDsMasked: rec.Masked,
		Events: make([]api.Record, 0, len(rec.Events)), Passports: make([]api.IssuedPassport, 0, len(rec.Passports))}
	for i := range rec.Events {
		e := &rec.Events[i]
		j := api.Record{Type: string(e.Type), ID: e.ID, AgentID: e.AgentID, Status: string(e.Status), ReportedAgentID: e.ReportedAgentID,
			StartedAt: e.StartedAt.UTC(), Operator: e.Operator, Seq: e.Seq, Corrected: e.Corrected}
		if e.BuyerID != "" {
			j.BuyerID = &e.BuyerID
		}
		if e.ReportedStatus != e.Status {
			j.ReportedStatus = string(e.ReportedStatus)
		}
		ended := e.EndedAt.UTC()
		if e.Type == ledger.AP2Transaction {
			j.EscrowAmountCents, j.SettledAt = &e.EscrowAmountCents, &ended
		} else {
			j.CompletedAt = &ended
		}
		out.Events = append(out.Events, j)
	}
	for i := range rec.Passports {
		p := &rec.Passports[i]
		j := api.IssuedPassport{ID: p.ID, ComputedAt: Seconds(p.ComputedAt), ExpiresAt: Seconds(p.ExpiresAt), Passport: p.Document}
		if p.KeyID != "" {
			j.KeyID = &p.KeyID
		}
		out.Passports = append(out.Passports, j)
	}
	return out
}

// ConsentOf is the agent's consent and visibility as recorded.
func ConsentOf(st *service.ConsentStatus) api.Consent {
	out := api.Consent{AgentID: st.AgentID, Visibility: string(st.Visibility), Consented: st.Consented()}
	if st.Consented() {
		at := ledgerTime(st.GivenAt)
		out.DisclosureVersion, out.ConsentedAt, out.ConsentedBy = &st.DisclosureVersion, &at, &st.By
	}
	return out
}

// ConsentStatusOf is st's shape: the consent and what follows from it.
func ConsentStatusOf(st *service.ConsentStatus) api.ConsentStatus {
	return api.ConsentStatus{Consent: ConsentOf(st), RequireConsent: st.RequireConsent, Published: st.Published}
}

// SignalsOf is a's shape.
func SignalsOf(a *service.AgentSignals) api.AgentSignals {
	return api.AgentSignals{AgentID: a.AgentID, AsOf: a.AsOf.UTC(), Signals: signalsOf(a.Signals)}
}

// FlaggedOf is f's shape.
func FlaggedOf(f *service.Flagged) api.FlaggedAgents {
	out := api.FlaggedAgents{AsOf: f.AsOf.UTC(), Agents: make([]api.FlaggedAgent, 0, len(f.Agents))}
	for i := range f.Agents {
		a := &f.Agents[i]
		out.Agents = append(out.Agents, api.FlaggedAgent{AgentID: a.AgentID, Signals: signalsOf(a.Signals)})
	}
	return out
}

func signalsOf(s []signal.Signal) []api.Signal {
	if s == nil {
		return nil
	}
	out := make([]api.Signal, len(s))
	for i, g := range s {
		out[i] = api.Signal{Name: g.Name, Value: g.Value, Threshold: g.Threshold, Flagged: g.Flagged, Note: g.Note}
	}
	return out
}

// IngestResultOf is r's shape.
func IngestResultOf(r *service.IngestReport) api.IngestResult {
	out := api.IngestResult{Accepted: r.Accepted, Duplicates: r.Duplicates, Superseded: r.Superseded,
		Rejected: make([]api.Rejection, len(r.Rejected))}
	for i, rj := range r.Rejected {
		out.Rejected[i] = api.Rejection{Index: rj.Index, Line: rj.Line, ID: rj.ID, Reason: rj.Err.Error(), Code: errkind.Code(rj.Err)}
	}
	return out
}

// VerificationOf is v's shape: the answer of POST /swarmscore/verify and
// of the MCP tool verify_passport.
func VerificationOf(v *service.Verification) api.Verification {
	resp := api.Verification{
		Valid:             v.Valid,
		SignatureValid:    v.SignatureValid,
		ScoreValid:        v.ScoreValid,
		DetectedTampering: v.DetectedTampering,
		Errors:            v.Errors,
		Warnings:          v.Warnings,
		Checks:            v.Checks,
	}
	if !v.ExpiresAt.IsZero() {
		e := Seconds(v.ExpiresAt)
		resp.ExpiresAt = &e
	}
	if resp.Errors == nil {
		resp.Errors = []passport.Problem{}
	}
	if resp.Warnings == nil {
		resp.Warnings = []passport.Problem{}
	}
	if c := v.Current; c != nil {
		resp.Current = &api.CurrentScore{Score: c.Score, Tier: c.Tier, ComputedAt: Seconds(c.ComputedAt)}
	}
	for _, k := range v.ChangedSinceIssue {
		resp.ChangedSinceIssue = append(resp.ChangedSinceIssue, api.EventRef{Type: string(k.Type), ID: k.ID})
	}
	return resp
}

// ActionOf is an action log entry's wire shape.
func ActionOf(a *auth.Action) api.Action {
	return api.Action{Seq: a.Seq, At: a.At.UTC(), Operator: a.Operator, TokenID: a.TokenID, Role: string(a.Role), Via: string(a.Via),
		Client: a.Client, Action: string(a.Kind), AgentID: a.AgentID, Target: a.Target, Detail: a.Detail, Outcome: string(a.Outcome),
		Code: a.Code}
}

// ActionsOf is a page of the action log; limit is the page size asked
// for: a full page has a next one to ask for.
func ActionsOf(as []auth.Action, limit int) api.Actions {
	out := api.Actions{Actions: make([]api.Action, 0, len(as))}
	for i := range as {
		out.Actions = append(out.Actions, ActionOf(&as[i]))
	}
	if len(as) > 0 && len(as) == limit {
		next := as[len(as)-1].Seq
		out.Next = &next
	}
	return out
}

// WebhookOf is e as the API shows it, without its secret.
func WebhookOf(e webhook.Endpoint) api.Webhook {
	w := api.Webhook{ID: e.ID, URL: e.URL, Events: make([]string, len(e.Events)), CreatedAt: e.CreatedAt.UTC(), CreatedBy: e.CreatedBy}
	for i, t := range e.Events {
		w.Events[i] = string(t)
	}
	return w
}

// WebhookDeliveriesOf is ms as the API shows them.
func WebhookDeliveriesOf(ms []webhook.Message) api.WebhookDeliveries {
	out := api.WebhookDeliveries{Deliveries: make([]api.WebhookDelivery, 0, len(ms))}
	for _, m := range ms {
		d := api.WebhookDelivery{ID: m.ID, Type: string(m.Type), AgentID: m.AgentID, CreatedAt: m.CreatedAt.UTC(), State: string(m.State),
			Attempts: m.Attempts, LastStatus: m.LastStatus, LastError: m.LastError, Payload: json.RawMessage(m.Payload),
			History: make([]api.WebhookAttempt, 0, len(m.History))}
		if m.State == webhook.Pending {
			t := m.NextAttemptAt.UTC()
			d.NextAttemptAt = &t
		}
		if !m.DeliveredAt.IsZero() {
			t := m.DeliveredAt.UTC()
			d.DeliveredAt = &t
		}
		for _, a := range m.History {
			d.History = append(d.History, api.WebhookAttempt{N: a.N, At: a.At.UTC(), Status: a.Status, Error: a.Error, DurationMS: a.Duration.Milliseconds()})
		}
		out.Deliveries = append(out.Deliveries, d)
	}
	return out
}
