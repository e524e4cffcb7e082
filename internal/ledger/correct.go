package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/jcsstr"
)

// A correction never edits history (spec §11.3, §8.2): it is a record
// appended to the hash chains of the agents it affects, referencing the
// original event and saying what changes — a new final status (an
// operator's fix, or a chargeback after settlement), re-attribution to
// another agent, or void — who made it, why, and the appeal it answers.
// Counting uses the corrected state; the reports stay in the chain.
//
// It is decided here like a batch:
//
//	plan, err := ledger.DecideCorrection(req, state) // state: the event, heads, an earlier identical correction
//	write(plan)

// CorrectionAction is what a correction changes.
type CorrectionAction string

// The three actions, named as on the wire.
const (
	// ActionStatus gives a final event another final status.
	ActionStatus CorrectionAction = "status"
	// ActionReattribute moves an event to another agent.
	ActionReattribute CorrectionAction = "reattribute"
	// ActionVoid removes an event from every count.
	ActionVoid CorrectionAction = "void"
)

// MaxReasonLen bounds a correction's reason, in bytes.
const MaxReasonLen = 1000

// CorrectionRequest asks for one correction of one event.
type CorrectionRequest struct {
	EventType Type
	EventID   string
	Action    CorrectionAction
	// Status is the new final status (ActionStatus only).
	Status Status
	// AgentID is the agent the event moves to (ActionReattribute only).
	AgentID string
	// Reason says why, for the audit trail: 1 to MaxReasonLen bytes of
	// UTF-8 text without control characters.
	Reason string
	// AppealID is the appeal the correction answers, if any.
	AppealID string
	// By is who made it: an operator, or the payment system reporting a
	// chargeback through its operator token.
	By string
	// At is when it is recorded (the server's clock).
	At time.Time
}

// Correction is a stored correction: the request, its id, and the event's
// state before and after.
type Correction struct {
	ID string
	CorrectionRequest
	FromAgent  string
	FromStatus Status
	ToAgent    string
	ToStatus   Status
	// ReissuedAt is when the affected agents' passports were re-issued
	// after it (zero if they were not): the record of the 7-day duty of
	// §11.3.
	ReissuedAt time.Time
}

// Validate checks a request on its own (errkind.ErrInvalid naming the
// field).
func (r *CorrectionRequest) Validate() error {
	if !r.EventType.Valid() {
		return fieldErr("event_type", "%q is not conduit_session, ap2_transaction or task_offer", r.EventType)
	}
	if err := CheckID("event_id", r.EventID); err != nil {
		return err
	}
	switch r.Action {
	case ActionStatus:
		if !r.Status.ValidFor(r.EventType) || !r.Status.Terminal() {
			return fieldErr("status", "%q is not a final %s status (want one of %s)", r.Status, r.EventType, finalList(r.EventType))
		}
		if r.AgentID != "" {
			return fieldErr("agent_id", "must be absent for a status correction")
		}
	case ActionReattribute:
		if err := CheckID("agent_id", r.AgentID); err != nil {
			return err
		}
		if r.Status != "" {
			return fieldErr("status", "must be absent for a re-attribution")
		}
	case ActionVoid:
		if r.Status != "" || r.AgentID != "" {
			return fieldErr("action", "void takes neither status nor agent_id")
		}
	default:
		return fieldErr("action", "%q is not status, reattribute or void", r.Action)
	}
	if err := checkReason(r.Reason); err != nil {
		return err
	}
	if r.AppealID != "" {
		if err := CheckID("appeal_id", r.AppealID); err != nil {
			return err
		}
	}
	if err := CheckID("by", r.By); err != nil {
		return err
	}
	if r.At.IsZero() {
		return fieldErr("at", "is required")
	}
	return nil
}

func checkReason(s string) error {
	switch {
	case s == "":
		return fieldErr("reason", "is required: say why the event is corrected")
	case len(s) > MaxReasonLen:
		return fieldErr("reason", "is %d bytes long (at most %d)", len(s), MaxReasonLen)
	case !utf8.ValidString(s):
		return fieldErr("reason", "is not valid UTF-8")
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return fieldErr("reason", "contains a control character")
		}
	}
	return nil
}

func finalList(t Type) string {
	var out string
	for _, s := range statusOrder[t] {
		if s.Terminal() {
			if out != "" {
				out += ", "
			}
			out += string(s)
		}
	}
	return out
}

// ID is the correction's id, derived from what it asks (not when), so that
// sending the same correction again names the same one and is a no-op.
func (r *CorrectionRequest) ID() string {
	h := sha256.New()
	for _, f := range []string{string(r.EventType), r.EventID, string(r.Action), string(r.Status), r.AgentID, r.Reason, r.AppealID, r.By} {
		h.Write([]byte(strconv.Itoa(len(f))))
		h.Write([]byte{':'})
		h.Write([]byte(f))
	}
	return "cor-" + hex.EncodeToString(h.Sum(nil)[:12])
}

// CorrectionState is what a correction is decided against, loaded by the
// back end in the transaction that writes the plan: the event, the chain
// heads of the agents involved (its current agent and, for a
// re-attribution, the new one; absent when unregistered), and the stored
// correction with the request's id, if one exists.
type CorrectionState struct {
	Event    StoredEvent
	Found    bool
	Heads    map[string]Head
	Existing *Correction
}

// CorrectionPlan is what a decided correction writes, in one transaction.
type CorrectionPlan struct {
	Correction Correction
	// Existing is true when the same correction was stored before: the
	// plan writes nothing.
	Existing bool
	// Records are its chain records: one in the event's current agent's
	// chain, and for a re-attribution a second in the new agent's.
	Records []ChainRecord
	// Heads are the moved heads; every one has Terminal set, since a
	// correction may change its agent's counts.
	Heads []HeadMove
	// Event is the event's row after the correction; LoadedSeq guards the
	// row it was decided on.
	Event     StoredEvent
	LoadedSeq int64
}

// Invalidated returns the agents whose counts the correction changes.
func (p *CorrectionPlan) Invalidated() []string {
	var ids []string
	for _, h := range p.Heads {
		ids = append(ids, h.AgentID)
	}
	return ids
}

// DecideCorrection decides req against st. Errors: ErrInvalid (naming the
// field) for a malformed request or one that changes nothing;
// ErrNotFound for an unknown event; ErrConflict for an event that is not
// final yet (report its final status instead) or was voided.
func DecideCorrection(req CorrectionRequest, st CorrectionState) (CorrectionPlan, error) {
	if err := req.Validate(); err != nil {
		return CorrectionPlan{}, err
	}
	req.At = req.At.UTC().Truncate(Resolution)
	id := req.ID()
	if st.Existing != nil {
		if st.Existing.ID != id {
			return CorrectionPlan{}, fmt.Errorf("correction: the stored correction %s is not %s", st.Existing.ID, id)
		}
		return CorrectionPlan{Correction: *st.Existing, Existing: true}, nil
	}
	if !st.Found {
		return CorrectionPlan{}, fmt.Errorf("%w: %s %q is not in the ledger", errkind.ErrNotFound, req.EventType, req.EventID)
	}
	ev := st.Event
	from, fromStatus := ev.CurrentAgent(), ev.CurrentStatus()
	switch {
	case ev.IsVoided():
		return CorrectionPlan{}, fmt.Errorf("%w: %s %q was voided and cannot be corrected again", errkind.ErrConflict, req.EventType, req.EventID)
	case !fromStatus.Terminal():
		return CorrectionPlan{}, fmt.Errorf("%w: %s %q is %s, not final yet: report its final status instead of correcting it",
			errkind.ErrConflict, req.EventType, req.EventID, fromStatus)
	}
	c := Correction{ID: id, CorrectionRequest: req, FromAgent: from, FromStatus: fromStatus, ToAgent: from, ToStatus: fromStatus}
	after := ev
	cur := Current{AgentID: from, Status: fromStatus}
	switch req.Action {
	case ActionStatus:
		if req.Status == fromStatus {
			return CorrectionPlan{}, fieldErr("status", "%s %q is already %s", req.EventType, req.EventID, fromStatus)
		}
		c.ToStatus, cur.Status = req.Status, req.Status
	case ActionReattribute:
		if req.AgentID == from {
			return CorrectionPlan{}, fieldErr("agent_id", "%s %q already belongs to %s", req.EventType, req.EventID, from)
		}
		c.ToAgent, cur.AgentID = req.AgentID, req.AgentID
	case ActionVoid:
		cur.Voided = true
	}
	after.Corrected = &cur
	plan := CorrectionPlan{Correction: c, LoadedSeq: ev.Seq}
	var chain Chainer
	link := func(agent string) int64 {
		stored, ok := st.Heads[agent]
		h := HeadMove{AgentID: agent, Head: stored, New: !ok}
		rec := ChainRecord{AgentID: agent, Seq: h.Head.Seq + 1, Type: req.EventType, EventID: req.EventID, Status: c.ToStatus, CorrectionID: id}
		hash, _ := chain.LinkCorrection(h.Head.Hash, agent, rec.Seq, &c)
		rec.Hash = hash
		h.Head, h.Terminal = Head{Seq: rec.Seq, Hash: hash}, rec.Seq
		plan.Records = append(plan.Records, rec)
		plan.Heads = append(plan.Heads, h)
		return rec.Seq
	}
	after.Seq = link(from)
	if c.ToAgent != from {
		after.Seq = link(c.ToAgent)
	}
	plan.Event = after
	return plan, nil
}

// Current is an event's state after the corrections that changed it.
type Current struct {
	AgentID string
	Status  Status
	Voided  bool
}

// CurrentAgent is the agent the event counts for now.
func (s *StoredEvent) CurrentAgent() string {
	if s.Corrected != nil {
		return s.Corrected.AgentID
	}
	return s.Event.AgentID
}

// CurrentStatus is the event's status after corrections.
func (s *StoredEvent) CurrentStatus() Status {
	if s.Corrected != nil {
		return s.Corrected.Status
	}
	return s.Event.Status
}

// IsVoided reports whether a correction removed the event from every count.
func (s *StoredEvent) IsVoided() bool { return s.Corrected != nil && s.Corrected.Voided }

// AppendCanonical appends the canonical content of the correction's record
// in the chain of agent at position seq: RFC 8785 canonical JSON of its
// fields. Its members differ from an event record's (it has "correction"
// and no "buyer_id"), so the two kinds of content never coincide.
func (c *Correction) AppendCanonical(dst []byte, agent string, seq int64) []byte {
	dst = append(dst, `{"action":`...)
	dst = jcsstr.Append(dst, string(c.Action))
	dst = append(dst, `,"agent_id":`...)
	dst = jcsstr.Append(dst, agent)
	dst = append(dst, `,"appeal_id":`...)
	dst = jcsstr.Append(dst, c.AppealID)
	dst = append(dst, `,"at":`...)
	dst = appendJSONTime(dst, c.At)
	dst = append(dst, `,"by":`...)
	dst = jcsstr.Append(dst, c.By)
	dst = append(dst, `,"correction":`...)
	dst = jcsstr.Append(dst, c.ID)
	dst = append(dst, `,"event_id":`...)
	dst = jcsstr.Append(dst, c.EventID)
	dst = append(dst, `,"from_agent":`...)
	dst = jcsstr.Append(dst, c.FromAgent)
	dst = append(dst, `,"from_status":`...)
	dst = jcsstr.Append(dst, string(c.FromStatus))
	dst = append(dst, `,"reason":`...)
	dst = jcsstr.Append(dst, c.Reason)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"to_agent":`...)
	dst = jcsstr.Append(dst, c.ToAgent)
	dst = append(dst, `,"to_status":`...)
	dst = jcsstr.Append(dst, string(c.ToStatus))
	dst = append(dst, `,"type":`...)
	dst = jcsstr.Append(dst, string(c.EventType))
	return append(dst, '}')
}

// LinkCorrection returns the chain hash of the correction's record in the
// chain of agent at position seq, whose predecessor's hash is prev.
func (c *Chainer) LinkCorrection(prev Hash, agent string, seq int64, cor *Correction) (Hash, []byte) {
	c.buf = append(c.buf[:0], prev[:]...)
	c.buf = cor.AppendCanonical(c.buf, agent, seq)
	return sha256.Sum256(c.buf), c.buf[HashSize:]
}
