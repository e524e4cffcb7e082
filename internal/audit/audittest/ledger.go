package audittest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// Ledger keeps a ledger in memory the way the stores do, deciding every
// write with the ledger package (Prepare/Decide, DecideCorrection), and
// reads chains back as CheckpointStore.Chain does, so that bundles can be
// built and tampered with quickly and without a database. The store-backed
// tests (internal/service) check the same against both back ends.
type Ledger struct {
	heads       map[string]ledger.Head
	events      map[ledger.EventKey]ledger.StoredEvent
	records     map[string][]ledger.ChainRecord
	corrections map[string]ledger.Correction
	// holds are the escrow holds, oldest first, and passports the
	// documents that priced them, by id.
	holds     []audit.HoldRows
	passports map[string][]byte
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{heads: map[string]ledger.Head{}, events: map[ledger.EventKey]ledger.StoredEvent{},
		records: map[string][]ledger.ChainRecord{}, corrections: map[string]ledger.Correction{}, passports: map[string][]byte{}}
}

// Hold places a hold priced by the passport doc (nil: no passport, score
// 0) and applies the changes after, each by op-1, recording their
// ap2_transaction events as the stores do.
func (m *Ledger) Hold(tb testing.TB, doc []byte, create ledger.HoldRequest, changes ...ledger.HoldRequest) {
	tb.Helper()
	if doc != nil {
		p, err := passport.Parse(doc)
		if err != nil {
			tb.Fatal(err)
		}
		create.Price = ledger.HoldPrice{Score: p.Score.Value, Tier: p.Score.Tier, PassportID: p.AgentPassportID, KID: p.Issuer.KID}
		m.passports[p.AgentPassportID] = doc
	}
	var cur *ledger.Hold
	var steps []ledger.HoldStep
	for _, req := range append([]ledger.HoldRequest{create}, changes...) {
		req.TransactionID, req.Operator = create.TransactionID, "op-1"
		ch, err := ledger.DecideHold(cur, &req)
		if err != nil {
			tb.Fatalf("hold %s: %v", create.TransactionID, err)
		}
		if ch.Event != nil {
			m.Ingest(tb, "op-1", *ch.Event)
		}
		cur, steps = &ch.Hold, append(steps, ch.Step)
	}
	m.holds = append(m.holds, audit.HoldRows{Hold: *cur, Steps: steps})
}

// correctHold applies a correction to the hold of its transaction, as the
// stores do.
func (m *Ledger) correctHold(tb testing.TB, c *ledger.Correction) {
	for i := range m.holds {
		if hr := &m.holds[i]; c.EventType == ledger.AP2Transaction && hr.Hold.TransactionID == c.EventID {
			ch, err := ledger.CorrectHold(&hr.Hold, c)
			if err != nil {
				tb.Fatal(err)
			}
			hr.Hold, hr.Steps = ch.Hold, append(hr.Steps, ch.Step)
		}
	}
}

// Ingest records a batch of op, every report of which must be accepted.
func (m *Ledger) Ingest(tb testing.TB, op string, evs ...ledger.Event) {
	tb.Helper()
	p, err := ledger.Prepare(ledger.Batch{Operator: op, Events: evs})
	if err != nil {
		tb.Fatal(err)
	}
	st := ledger.State{Heads: map[string]ledger.Head{}, Events: map[ledger.EventKey]ledger.StoredEvent{}}
	for _, a := range p.Agents {
		if h, ok := m.heads[a]; ok {
			st.Heads[a] = h
		}
	}
	for _, k := range p.Events {
		if e, ok := m.events[k]; ok {
			st.Events[k] = e
		}
	}
	plan := p.Decide(st)
	for i, o := range plan.Outcomes {
		if o.Status != ledger.OutcomeAccepted {
			tb.Fatalf("event %d (%s): %v %v", i, evs[i].ID, o.Status, o.Err)
		}
	}
	for _, h := range plan.Heads {
		m.heads[h.AgentID] = h.Head
	}
	m.records = appendRecords(m.records, plan.Records)
	for _, w := range append(plan.Inserts, plan.Updates...) {
		m.events[ledger.EventKey{Type: w.Event.Type, ID: w.Event.ID}] = ledger.StoredEvent{Event: w.Event, Operator: w.Operator, Seq: w.Seq}
	}
}

func appendRecords(to map[string][]ledger.ChainRecord, recs []ledger.ChainRecord) map[string][]ledger.ChainRecord {
	for _, r := range recs {
		to[r.AgentID] = append(to[r.AgentID], r)
	}
	return to
}

// Correct records a correction, which must be decided.
func (m *Ledger) Correct(tb testing.TB, req ledger.CorrectionRequest) ledger.Correction {
	tb.Helper()
	k := ledger.EventKey{Type: req.EventType, ID: req.EventID}
	st := ledger.CorrectionState{Heads: map[string]ledger.Head{}}
	st.Event, st.Found = m.events[k]
	for _, a := range []string{st.Event.CurrentAgent(), req.AgentID} {
		if h, ok := m.heads[a]; ok {
			st.Heads[a] = h
		}
	}
	plan, err := ledger.DecideCorrection(req, st)
	if err != nil {
		tb.Fatalf("correct %s %s: %v", req.EventType, req.EventID, err)
	}
	for _, h := range plan.Heads {
		m.heads[h.AgentID] = h.Head
	}
	m.records = appendRecords(m.records, plan.Records)
	m.events[k] = plan.Event
	m.corrections[plan.Correction.ID] = plan.Correction
	m.correctHold(tb, &plan.Correction)
	return plan.Correction
}

// Chain reads agent's chain as CheckpointStore.Chain returns it.
func (m *Ledger) Chain(agent string) []ledger.ChainRow {
	h := m.heads[agent]
	var rows []ledger.ChainRow
	for _, r := range m.records[agent] {
		row := ledger.ChainRow{AgentID: agent, Registered: true, HeadSeq: h.Seq, HeadHash: h.Hash[:], HasRecord: true, Record: r,
			StoredHash: append([]byte(nil), r.Hash[:]...)}
		row.Event, row.HasEvent = m.events[ledger.EventKey{Type: r.Type, ID: r.EventID}]
		if r.CorrectionID != "" {
			row.Correction, row.HasCorrection = m.corrections[r.CorrectionID]
		}
		rows = append(rows, row)
	}
	return rows
}

// Counts counts as the stores' SQL does, from the event rows: an oracle
// independent of the chain replay.
func (m *Ledger) Counts(agent string, asOf time.Time) score.Counts {
	var c score.Counts
	for _, e := range m.events {
		if e.CurrentAgent() != agent || e.IsVoided() || !e.CurrentStatus().CountsTotal() || !ledger.InWindow(e.Event.EndedAt, asOf) {
			continue
		}
		ok := e.CurrentStatus().CountsSuccess()
		if e.Event.Type == ledger.ConduitSession {
			c.ConduitTotal++
			if ok {
				c.ConduitSuccess++
			}
		} else {
			c.AP2Total++
			if ok {
				c.AP2Success++
			}
		}
	}
	return c
}

// Leaves are every agent's head, as a checkpoint commits to them.
func (m *Ledger) Leaves() []checkpoint.Leaf {
	var out []checkpoint.Leaf
	for a, h := range m.heads {
		out = append(out, checkpoint.Leaf{AgentID: a, Seq: h.Seq, Hash: h.Hash})
	}
	slices.SortFunc(out, func(a, b checkpoint.Leaf) int { return strings.Compare(a.AgentID, b.AgentID) })
	return out
}

// Source is what the export use case reads, from m.
func (m *Ledger) Source(agent string, asOf time.Time, passportDoc, ckpt []byte, leaves []checkpoint.Leaf) audit.Source {
	src := audit.Source{AgentID: agent, AsOf: asOf, Counts: m.Counts(agent, asOf), Passport: passportDoc, Chain: m.Chain(agent),
		Origins: map[string][]ledger.ChainRow{}, Checkpoint: ckpt, Leaves: leaves, HoldPassports: m.passports}
	for _, h := range m.holds {
		if h.Hold.ProviderID == agent {
			src.Holds = append(src.Holds, audit.HoldRows{Hold: h.Hold, Steps: slices.Clone(h.Steps)})
		}
	}
	for _, o := range audit.OriginAgents(agent, src.Chain) {
		src.Origins[o] = m.Chain(o)
	}
	return src
}

// Secret is the HMAC key of the passports and checkpoints signed here.
const Secret = "0123456789abcdef0123456789abcdef-audit-test"

// Keys returns the keys that verify them.
func Keys(tb testing.TB) audit.Keys {
	tb.Helper()
	k, err := audit.NewKeys([]byte(Secret), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// SignPassport issues a passport for the counts m gives as of at.
func (m *Ledger) SignPassport(tb testing.TB, agent string, at time.Time) []byte {
	tb.Helper()
	r, err := score.Compute(m.Counts(agent, at))
	if err != nil {
		tb.Fatal(err)
	}
	p, err := passport.New(agent, "test.example", r, at)
	if err != nil {
		tb.Fatal(err)
	}
	k, err := passport.NewKey([]byte(Secret))
	if err != nil {
		tb.Fatal(err)
	}
	doc, err := p.Sign(k)
	if err != nil {
		tb.Fatal(err)
	}
	return doc
}

// SignCheckpoint signs checkpoint n over leaves with an HS256 key of
// Secret.
func SignCheckpoint(tb testing.TB, n int64, at time.Time, leaves []checkpoint.Leaf) []byte {
	tb.Helper()
	tree, err := checkpoint.NewTree(leaves)
	if err != nil {
		tb.Fatal(err)
	}
	c := checkpoint.Checkpoint{Number: n, Time: at.Truncate(time.Second), Agents: int64(len(leaves)), Root: tree.Root(),
		Environment: "test", Issuer: checkpoint.Issuer{Platform: "test.example"}}
	k, err := checkpoint.NewHMACKey("ckpt-1", []byte(Secret))
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Sign(k); err != nil {
		tb.Fatal(err)
	}
	doc, err := c.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return doc
}
