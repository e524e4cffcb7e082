package ledger

import (
	"slices"
	"strings"
	"time"
)

// Ingest is decided here and only written by a back end, in three steps
// inside one write transaction:
//
//	p, err := ledger.Prepare(batch)   // each report on its own
//	state := load(p.Agents, p.Events) // the back end reads what p names
//	plan := p.Decide(state)           // every rule of the ledger
//	write(plan)                       // the back end writes the plan
//
// Decide is pure, so every back end records the same outcomes, the same
// rows and the same chain hashes for the same batch and state.

// EventKey names an event: ids are unique per type.
type EventKey struct {
	Type Type
	ID   string
}

// Head is the last link of an agent's hash chain: its position and hash,
// 0 and the zero Hash for an agent with no record.
type Head struct {
	Seq  int64
	Hash Hash
}

// StoredEvent is an event as the ledger holds it: its current state, the
// operator that first reported it, and the chain position of the record
// that produced that state.
type StoredEvent struct {
	// Event is the event as reported: its agent and its last reported
	// status. Later reports are classified against it.
	Event    Event
	Operator string
	Seq      int64
	// Corrected is its state after corrections, nil when none changed it
	// (CurrentAgent, CurrentStatus and IsVoided read it).
	Corrected *Current
}

// SetReported turns an event row read with its current agent and status in
// se.Event back into the event as reported, with its corrected state: a
// correction keeps the reported agent and status of the row it changes in
// columns of their own (reportedAgent and reportedStatus, nil while no
// correction changed them) and marks a voided row. A row no correction
// touched is left as read.
func (se *StoredEvent) SetReported(reportedAgent, reportedStatus *string, voided bool) {
	if reportedAgent == nil && reportedStatus == nil && !voided {
		return
	}
	se.Corrected = &Current{AgentID: se.Event.AgentID, Status: se.Event.Status, Voided: voided}
	if reportedAgent != nil {
		se.Event.AgentID = *reportedAgent
	}
	if reportedStatus != nil {
		se.Event.Status = Status(*reportedStatus)
	}
}

// State is what a batch is decided against: the chain heads of the
// registered agents among Prepared.Agents, and the stored events among
// Prepared.Events. A missing key means an unregistered agent or an event
// never reported. The back end loads it inside the transaction that then
// writes the Plan, after taking whatever lock keeps other batches from
// moving the same chains.
type State struct {
	Heads  map[string]Head
	Events map[EventKey]StoredEvent
}

// Prepared is a batch whose reports have been checked on their own, before
// the ledger is read: each one is valid and not dated beyond the clock-skew
// allowance, or already rejected.
type Prepared struct {
	batch    Batch
	outcomes []Outcome // rejections so far; the zero Outcome for the others
	// eventOf and agentOf give, for each valid report, the index of its
	// event in Events and of its agent in Agents, so that Decide needs no
	// map of its own.
	eventOf, agentOf []int32
	// Agents lists the agents the valid reports name, sorted, each once:
	// the chain heads to load (and, on PostgreSQL, the rows to lock in
	// this order).
	Agents []string
	// Events lists the events the valid reports name, each once, in the
	// order of their first report: the stored rows to load.
	Events []EventKey
}

// Prepare checks every report of b on its own: Event.Validate, and no time
// later than b.ReceivedAt + b.MaxSkew (when ReceivedAt is set). Reports that
// fail are rejected with a *FieldError (errkind.ErrInvalid) naming the
// field; the others are left for Decide. The error is ErrInvalid for an
// invalid operator name, which rejects the whole batch.
func Prepare(b Batch) (*Prepared, error) {
	if err := CheckID("operator", b.Operator); err != nil {
		return nil, err
	}
	n := len(b.Events)
	p := &Prepared{batch: b, outcomes: make([]Outcome, n), eventOf: make([]int32, n), agentOf: make([]int32, n)}
	events := make(map[EventKey]int32, n)
	agents := make(map[string]int32)
	for i := range b.Events {
		e := &b.Events[i]
		if err := e.Validate(); err != nil {
			p.outcomes[i] = reject(err)
			continue
		}
		if err := b.checkSkew(e); err != nil {
			p.outcomes[i] = reject(err)
			continue
		}
		k := EventKey{e.Type, e.ID}
		ei, ok := events[k]
		if !ok {
			ei = int32(len(p.Events))
			events[k] = ei
			p.Events = append(p.Events, k)
		}
		ai, ok := agents[e.AgentID]
		if !ok {
			ai = int32(len(p.Agents))
			agents[e.AgentID] = ai
			p.Agents = append(p.Agents, e.AgentID)
		}
		p.eventOf[i], p.agentOf[i] = ei, ai
	}
	// Agents in id order, and each report's agent index with them.
	order := make([]int32, len(p.Agents))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(p.Agents[a], p.Agents[b]) })
	rank := make([]int32, len(order))
	sorted := make([]string, len(order))
	for r, i := range order {
		rank[i], sorted[r] = int32(r), p.Agents[i]
	}
	p.Agents = sorted
	for i := range p.agentOf {
		if p.outcomes[i].Status == 0 {
			p.agentOf[i] = rank[p.agentOf[i]]
		}
	}
	return p, nil
}

// checkSkew rejects a report dated after the batch's clock plus the
// allowance: such a report is a clock error or a manipulation, and once
// stored it could never be corrected by a later honest report.
func (b *Batch) checkSkew(e *Event) error {
	if b.ReceivedAt.IsZero() {
		return nil
	}
	limit := b.ReceivedAt.Add(b.MaxSkew)
	field, t := "started_at", e.StartedAt
	if e.EndedAt.After(t) {
		field, t = e.Type.endField(), e.EndedAt
	}
	if t.After(limit) {
		return fieldErr(field, "%s is later than the server's clock (%s) by more than the allowed clock skew of %s",
			FormatTime(t), FormatTime(b.ReceivedAt.UTC().Truncate(time.Second)), b.MaxSkew)
	}
	return nil
}

// IDs returns the ids of the events of type t that p names, in order.
func (p *Prepared) IDs(t Type) []string {
	var ids []string
	for _, k := range p.Events {
		if k.Type == t {
			ids = append(ids, k.ID)
		}
	}
	return ids
}

// Plan is what a decided batch writes, all in one transaction.
type Plan struct {
	// Operator reported the batch; it is registered when the plan writes
	// anything.
	Operator string
	// Outcomes has one entry per report of the batch, same index.
	Outcomes []Outcome
	// Heads are the agents whose chain moved, sorted by id.
	Heads []HeadMove
	// Inserts are the events the batch reported first, in their final
	// state after the batch, in the order of their first report.
	Inserts []EventWrite
	// Updates are the stored events the batch moved, in their final state,
	// in the order of their first move.
	Updates []EventWrite
	// Records are the new chain records, sorted by agent then seq.
	Records []ChainRecord
}

// HeadMove is an agent's chain head after a batch.
type HeadMove struct {
	AgentID string
	Head    Head
	// Terminal is the seq of the batch's last terminal report for the
	// agent, 0 if none. It is the agent's new terminal_seq (the version of
	// its counts: every cache entry read before it is stale).
	Terminal int64
	// New is true when the agent was not registered before the batch.
	New bool
}

// EventWrite is an event row to insert or update.
type EventWrite struct {
	Event    Event
	Operator string // who first reported it
	Seq      int64  // the chain record that produced this state
	// LoadedSeq is the Seq of the row as loaded (updates only). A back end
	// may use it to check that the row it changes is the one decided on.
	LoadedSeq int64
}

// ChainRecord is a record of an agent's hash chain as stored: the event it
// records and the status reported (or, for a correction, the event's status
// after it), and its hash. The rest of its canonical content is in the
// event row (RebuildRecord) or the correction (Correction.AppendCanonical).
type ChainRecord struct {
	AgentID string
	Seq     int64
	Type    Type
	EventID string
	Status  Status
	Hash    Hash
	// CorrectionID names the correction a record records; "" for a report.
	CorrectionID string
	// ReceivedAt is when the report reached the server (Record.ReceivedAt;
	// zero for reports recorded before it was kept, and for corrections,
	// whose content has its own time).
	ReceivedAt time.Time
	// SealedBy names the erasure that last sealed the record: its content
	// named an erased agent, and the walk checks it against that
	// erasure's digests instead of its link (erase.go). "" when unsealed.
	SealedBy string
}

// Empty reports whether the plan writes nothing (every report was a
// duplicate, superseded or rejected).
func (p *Plan) Empty() bool { return len(p.Records) == 0 }

// Invalidated returns the agents with an accepted terminal report, sorted:
// their counts may have changed.
func (p *Plan) Invalidated() []string {
	var ids []string
	for _, h := range p.Heads {
		if h.Terminal > 0 {
			ids = append(ids, h.AgentID)
		}
	}
	return ids
}

// decision is one event's state while a batch is decided.
type decision struct {
	StoredEvent
	loadedSeq int64
	loaded    bool // st was consulted
	known     bool // the event exists (stored, or reported earlier in the batch)
	stored    bool // a row existed before the batch
	moved     bool // the batch changed it: it is written
}

// head is an agent's chain head while a batch is decided.
type head struct {
	HeadMove
	loaded bool
	moved  bool
}

// Decide classifies every valid report in batch order against st, as the
// batch has changed it so far (a later report sees an earlier one), links
// the chain record of each accepted one, and returns the plan. For each
// report: a new event is Accepted (its agent registered); the same content
// again is a Duplicate; an earlier status of a recorded event that agrees
// with it is Superseded; a later allowed status with unchanged immutable
// fields is Accepted (a transition); anything else is Rejected with an
// error matching errkind.ErrConflict naming the field (see Classify).
// Decide modifies neither p nor st, so a back end that must run its
// transaction again (a lost race) decides again from a fresh State.
func (p *Prepared) Decide(st State) Plan {
	b := &p.batch
	plan := Plan{Operator: b.Operator, Outcomes: slices.Clone(p.outcomes)}
	events := make([]decision, len(p.Events))
	heads := make([]head, len(p.Agents))
	var chain Chainer
	received := b.ReceivedAt.UTC().Truncate(Resolution)
	if b.ReceivedAt.IsZero() {
		received = time.Time{}
	}
	var moved []int32    // the events the batch changed, in the order of their first change
	var recAgent []int32 // the agent index of each record, for the sort below
	plan.Records = make([]ChainRecord, 0, len(p.Events))
	for i := range b.Events {
		if plan.Outcomes[i].Status != 0 {
			continue
		}
		e := &b.Events[i]
		d := &events[p.eventOf[i]]
		if !d.loaded {
			d.loaded = true
			if se, ok := st.Events[EventKey{e.Type, e.ID}]; ok {
				d.StoredEvent, d.loadedSeq, d.known, d.stored = se, se.Seq, true, true
			}
		}
		if d.known {
			// An id that exists belongs to the agent that first reported
			// it, so a report naming another agent is a conflict and
			// registers nothing.
			switch dec, err := Classify(&d.Event, d.Operator, e, b.Operator); {
			case err != nil:
				plan.Outcomes[i] = reject(err)
				continue
			case dec == Duplicate:
				plan.Outcomes[i] = Outcome{Status: OutcomeDuplicate}
				continue
			case dec == Superseded:
				plan.Outcomes[i] = Outcome{Status: OutcomeSuperseded}
				continue
			}
		}
		h := &heads[p.agentOf[i]]
		if !h.loaded {
			stored, ok := st.Heads[e.AgentID]
			h.loaded, h.HeadMove = true, HeadMove{AgentID: e.AgentID, Head: stored, New: !ok}
		}
		rec := Record{Event: *e, Operator: b.Operator, Seq: h.Head.Seq + 1, ReceivedAt: received}
		hash, _ := chain.Link(h.Head.Hash, &rec)
		plan.Records = append(plan.Records, ChainRecord{AgentID: e.AgentID, Seq: rec.Seq, Type: e.Type, EventID: e.ID, Status: e.Status, Hash: hash,
			ReceivedAt: received})
		recAgent = append(recAgent, p.agentOf[i])
		h.Head, h.moved = Head{Seq: rec.Seq, Hash: hash}, true
		if e.Status.Terminal() {
			h.Terminal = rec.Seq
		}
		if !d.known {
			d.known, d.Operator = true, b.Operator
		}
		d.Event, d.Seq = *e, rec.Seq
		if !d.moved {
			d.moved = true
			moved = append(moved, p.eventOf[i])
		}
		plan.Outcomes[i] = Outcome{Status: OutcomeAccepted}
	}
	updates := 0
	for _, ei := range moved {
		if events[ei].stored {
			updates++
		}
	}
	plan.Inserts = make([]EventWrite, 0, len(moved)-updates)
	plan.Updates = make([]EventWrite, 0, updates)
	for _, ei := range moved {
		d := &events[ei]
		w := EventWrite{Event: d.Event, Operator: d.Operator, Seq: d.Seq, LoadedSeq: d.loadedSeq}
		if d.stored {
			plan.Updates = append(plan.Updates, w)
		} else {
			plan.Inserts = append(plan.Inserts, w)
		}
	}
	for i := range heads {
		if heads[i].moved {
			plan.Heads = append(plan.Heads, heads[i].HeadMove)
		}
	}
	plan.Records = byAgent(plan.Records, recAgent, len(p.Agents))
	return plan
}

// byAgent returns records ordered by agent then seq, so that a back end
// appending them walks its primary key index forward. Agents are ranked in
// id order and each agent's records were appended in seq order, so a
// counting sort on the rank is enough.
func byAgent(records []ChainRecord, rank []int32, agents int) []ChainRecord {
	start := make([]int, agents+1)
	for _, r := range rank {
		start[r+1]++
	}
	for i := 1; i <= agents; i++ {
		start[i] += start[i-1]
	}
	out := make([]ChainRecord, len(records))
	for i, r := range rank {
		out[start[r]] = records[i]
		start[r]++
	}
	return out
}

// RebuildRecord is the chain record r as it was hashed, rebuilt from what a
// back end stores: the record's own columns (ChainRecord without its hash)
// and the row of the event it names. This works because every other hashed
// field is one the event row keeps as first reported: buyer, amount, start
// and operator never change (Classify refuses a change), and an end time
// belongs to exactly the final status, which never changes either.
func RebuildRecord(r *ChainRecord, row *StoredEvent) Record {
	// The agent is the chain's: an event re-attributed since was reported
	// for the agent whose chain holds the report.
	rec := Record{Seq: r.Seq, Operator: row.Operator, ReceivedAt: r.ReceivedAt, Event: Event{
		Type: r.Type, ID: r.EventID, AgentID: r.AgentID, BuyerID: row.Event.BuyerID, Status: r.Status,
		EscrowAmountCents: row.Event.EscrowAmountCents, StartedAt: row.Event.StartedAt,
	}}
	if r.Status.Terminal() {
		rec.Event.EndedAt = row.Event.EndedAt
	}
	return rec
}

func reject(err error) Outcome { return Outcome{Status: OutcomeRejected, Err: err} }
