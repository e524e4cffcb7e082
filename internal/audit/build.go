package audit

import (
	"fmt"
	"slices"
	"time"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// Source is what Build needs from a ledger, read by the caller.
type Source struct {
	AgentID string
	// AsOf is the end of the window (truncated to the microsecond).
	AsOf time.Time
	// Counts are the store's counts as of AsOf (LedgerStore.Counts): the
	// bundle states them, and Verify recounts them from the records.
	Counts score.Counts
	// Passport is the passport document in force at AsOf, nil for none.
	Passport []byte
	// Chain is the agent's chain as CheckpointStore.Chain returns it.
	Chain []ledger.ChainRow
	// Origins are the chains (CheckpointStore.Chain) of the agents
	// OriginAgents names.
	Origins map[string][]ledger.ChainRow
	// Checkpoint is the latest checkpoint's document and Leaves its
	// stored leaves (CheckpointStore.CheckpointLeaves); nil for none. Read
	// them before Chain, so that the chain read holds every record the
	// checkpoint saw.
	Checkpoint []byte
	Leaves     []checkpoint.Leaf
	// Erasures are the stored erasures (ErasureStore.Erasures), needed
	// when a chain holds an erasure's record or a record one sealed
	// (ledger.ChainRecord.SealedBy); nil otherwise.
	Erasures []ledger.Erasure
	// Sealers are the chains (CheckpointStore.Chain) of the pseudonyms
	// SealerAgents names, by pseudonym.
	Sealers map[string][]ledger.ChainRow
	// Holds are the agent's escrow holds as provider, oldest first, with
	// their steps, and HoldPassports the documents of the passports that
	// priced them, by agent_passport_id (PassportStore). Read them after
	// the agent's head and before Chain, so that the chain holds every
	// report a hold step made. Erasures are needed when a hold names an
	// erased agent.
	Holds         []HoldRows
	HoldPassports map[string][]byte
}

// NeedsErasures reports whether chains hold an erasure's record or a
// sealed record, so that Build needs Source.Erasures.
func NeedsErasures(chains ...[]ledger.ChainRow) bool {
	for _, rows := range chains {
		for i := range rows {
			if r := &rows[i]; r.HasRecord && (r.Record.SealedBy != "" || r.Record.Type == ledger.ErasureType) {
				return true
			}
		}
	}
	return false
}

// SealerAgents returns the pseudonyms whose chains Build needs besides
// chains (the audited one and its origins): those of the erasures that
// sealed a record of chains, when the erasure's record is not in them.
// The erasure's record commits to the digests its sealed records are
// checked against, so the bundle must hold it.
func SealerAgents(erasures []ledger.Erasure, chains ...[]ledger.ChainRow) []string {
	held := map[string]bool{}
	for _, rows := range chains {
		if len(rows) > 0 {
			held[rows[0].AgentID] = true
		}
	}
	var out []string
	for _, id := range sealedBy(chains...) {
		if e := findErasure(erasures, id); e != nil && !held[e.Pseudonym] && !slices.Contains(out, e.Pseudonym) {
			out = append(out, e.Pseudonym)
		}
	}
	slices.Sort(out)
	return out
}

// sealedBy lists the erasures that sealed a record of chains, sorted.
func sealedBy(chains ...[]ledger.ChainRow) []string {
	var out []string
	for _, rows := range chains {
		for i := range rows {
			if id := rows[i].Record.SealedBy; rows[i].HasRecord && id != "" && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

func findErasure(es []ledger.Erasure, id string) *ledger.Erasure {
	for i := range es {
		if es[i].ID == id {
			return &es[i]
		}
	}
	return nil
}

// OriginAgents returns the agents whose chains hold the reports of events
// moved into rows (an agent's chain, CheckpointStore.Chain): the agents
// those events were first reported for, sorted. Build needs their chains.
func OriginAgents(agentID string, rows []ledger.ChainRow) []string {
	var out []string
	for i := range rows {
		r := &rows[i]
		if r.HasRecord && r.Record.CorrectionID != "" && r.HasEvent && r.Event.Event.AgentID != agentID && !slices.Contains(out, r.Event.Event.AgentID) {
			out = append(out, r.Event.Event.AgentID)
		}
	}
	slices.Sort(out)
	return out
}

// Build assembles the bundle of src: the agent's whole chain (from its
// anchor, when a prune removed its first records, with the summary records
// that stand for them), each origin
// chain from its first report of an event moved to the agent up to its
// head, inclusion proofs in the checkpoint for every chain it names at a
// seq the chain holds, and the account of every event as of AsOf, derived
// from the records exactly as Verify derives it. Record contents are
// rebuilt from the rows as the ledger hashes them (ledger.RebuildRecord,
// ledger.Correction.AppendCanonical) and carry the hashes as stored, so
// that a row altered outside the ledger yields a bundle that fails Verify
// where it was altered. Nothing is withheld (Bundle.Withhold).
//
// Errors: ErrInvalid for an invalid agent id, ErrNotFound for an empty
// chain, ErrConflict when the stored rows cannot form a bundle (a record
// whose event or correction row is missing, records that break the
// ledger's rules, an origin chain missing, a checkpoint or leaf list that
// does not parse): `swarmscore ledger verify` names the damage.
func Build(src Source) (*Bundle, error) {
	if err := ledger.CheckID("agent_id", src.AgentID); err != nil {
		return nil, err
	}
	if len(src.Chain) == 0 {
		return nil, fmt.Errorf("%w: agent %q has no chain", errkind.ErrNotFound, src.AgentID)
	}
	res, err := score.Compute(src.Counts)
	if err != nil {
		return nil, fmt.Errorf("%w: the store's counts: %v", errkind.ErrConflict, err)
	}
	b := &Bundle{AgentID: src.AgentID, AsOf: src.AsOf.UTC().Truncate(ledger.Resolution), Counts: src.Counts,
		Score: Score{res.Score, res.Tier, res.Escrow}, Passport: src.Passport, Checkpoint: src.Checkpoint}
	var last *ledger.Summary
	for i := range src.Chain {
		if s := src.Chain[i].Summary; s != nil {
			last = s
		}
	}
	if f := prunedInWindow(b.AsOf, last, Clear(src.AgentID)); f != nil {
		return nil, fmt.Errorf("%w: %s; audit a later as_of", errkind.ErrInvalid, f.Message)
	}
	own, err := segment(src.AgentID, src.Chain, 0, src.Erasures)
	if err != nil {
		return nil, err
	}
	b.Chains = append(b.Chains, own)
	read := [][]ledger.ChainRow{src.Chain}
	for _, o := range OriginAgents(src.AgentID, src.Chain) {
		rows, ok := src.Origins[o]
		if !ok {
			return nil, fmt.Errorf("%w: the chain of agent %q, which events moved to %q were reported for, was not read", errkind.ErrConflict, o, src.AgentID)
		}
		from := firstReport(src.AgentID, o, src.Chain, rows)
		if from < 0 {
			return nil, fmt.Errorf("%w: agent %q's chain holds no report of the events moved from it to %q", errkind.ErrConflict, o, src.AgentID)
		}
		seg, err := segment(o, rows, from, src.Erasures)
		if err != nil {
			return nil, err
		}
		b.Chains = append(b.Chains, seg)
		read = append(read, rows[from:])
	}
	if err := b.seal(src, read); err != nil {
		return nil, err
	}
	if err := b.prove(src.Leaves); err != nil {
		return nil, err
	}
	if err := b.buildHolds(src); err != nil {
		return nil, fmt.Errorf("%w: the stored holds: %v", errkind.ErrConflict, err)
	}
	events, _, err := b.Account()
	if err != nil {
		return nil, fmt.Errorf("%w: the stored records cannot be audited: %v (run 'swarmscore ledger verify')", errkind.ErrConflict, err)
	}
	b.Events = events
	return b, nil
}

// firstReport is the index in rows (agent o's chain) of the first report
// of an event that the audited chain records as moved in from o; -1 if
// none.
func firstReport(audited, o string, chain, rows []ledger.ChainRow) int {
	moved := map[ledger.EventKey]bool{}
	for i := range chain {
		r := &chain[i]
		if r.HasRecord && r.Record.CorrectionID != "" && r.HasEvent && r.Event.Event.AgentID == o {
			moved[ledger.EventKey{Type: r.Record.Type, ID: r.Record.EventID}] = true
		}
	}
	for i := range rows {
		r := &rows[i]
		if r.HasRecord && r.Record.CorrectionID == "" && moved[ledger.EventKey{Type: r.Record.Type, ID: r.Record.EventID}] {
			return i
		}
	}
	return -1
}

// seal adds the segments of the erased agents' chains from their erasure's
// record, for the erasures that sealed a record of read (the chains in the
// bundle) and whose record is not in them, and the digests of every
// erasure that sealed one.
func (b *Bundle) seal(src Source, read [][]ledger.ChainRow) error {
	ids := sealedBy(read...)
	for _, p := range SealerAgents(src.Erasures, read...) {
		rows, ok := src.Sealers[p]
		if !ok {
			return fmt.Errorf("%w: the chain of erased agent %q, whose erasure sealed records of this bundle, was not read", errkind.ErrConflict, p)
		}
		from := slices.IndexFunc(rows, func(r ledger.ChainRow) bool {
			return r.HasRecord && r.Record.Type == ledger.ErasureType && slices.Contains(ids, r.Record.EventID)
		})
		if from < 0 {
			return fmt.Errorf("%w: erased agent %q's chain holds no record of its erasure", errkind.ErrConflict, p)
		}
		seg, err := segment(p, rows, from, src.Erasures)
		if err != nil {
			return err
		}
		b.Chains = append(b.Chains, seg)
	}
	for _, id := range ids {
		e := findErasure(src.Erasures, id)
		if e == nil {
			return fmt.Errorf("%w: records are sealed by erasure %s, which is not stored (run 'swarmscore ledger verify')", errkind.ErrConflict, id)
		}
		b.Sealings = append(b.Sealings, Sealing{ID: e.ID, Digests: e.Digests})
	}
	return nil
}

// segment is agent's chain from rows[from] to its head; erasures give the
// content of erasure records.
func segment(agent string, rows []ledger.ChainRow, from int, erasures []ledger.Erasure) (Chain, error) {
	c := Chain{AgentID: Clear(agent), FromSeq: 1}
	if r := &rows[0]; r.Registered {
		c.Head.Seq = r.HeadSeq
		copy(c.Head.Hash[:], r.HeadHash)
	}
	if !rows[0].HasRecord {
		return c, nil
	}
	c.FromSeq = rows[from].Record.Seq
	switch {
	case from > 0:
		copy(c.Prev[:], rows[from-1].StoredHash)
	case rows[0].Anchor.Seq > 0:
		c.Prev = rows[0].Anchor.Hash // a prune removed the records before it
	}
	var buf []byte
	for i := from; i < len(rows); i++ {
		r := &rows[i]
		switch {
		case r.Record.Type == ledger.SummaryType && r.Summary == nil:
			return Chain{}, fmt.Errorf("%w: agent %q seq %d: the summary record has no stored content", errkind.ErrConflict, agent, r.Record.Seq)
		case r.Record.Type == ledger.SummaryType:
			buf = r.Summary.AppendCanonical(buf[:0])
		case r.Record.Type == ledger.ErasureType:
			e := findErasure(erasures, r.Record.EventID)
			if e == nil {
				return Chain{}, fmt.Errorf("%w: agent %q seq %d: erasure %s has no row", errkind.ErrConflict, agent, r.Record.Seq, r.Record.EventID)
			}
			buf = e.AppendCanonical(buf[:0], r.Record.Seq)
		case r.Record.CorrectionID != "" && !r.HasCorrection:
			return Chain{}, fmt.Errorf("%w: agent %q seq %d: correction %s has no row", errkind.ErrConflict, agent, r.Record.Seq, r.Record.CorrectionID)
		case r.Record.CorrectionID != "":
			buf = r.Correction.AppendCanonical(buf[:0], agent, r.Record.Seq)
		case !r.HasEvent:
			return Chain{}, fmt.Errorf("%w: agent %q seq %d: %s %s has no row", errkind.ErrConflict, agent, r.Record.Seq, r.Record.Type, r.Record.EventID)
		default:
			rec := ledger.RebuildRecord(&r.Record, &r.Event)
			buf = rec.AppendCanonical(buf[:0])
		}
		content, err := contentOf(buf)
		if err != nil {
			return Chain{}, fmt.Errorf("%w: agent %q seq %d: %v", errkind.ErrConflict, agent, r.Record.Seq, err)
		}
		var h ledger.Hash
		copy(h[:], r.StoredHash)
		c.Records = append(c.Records, Record{Hash: h, Content: content, SealedBy: r.Record.SealedBy})
	}
	return c, nil
}

// prove adds each chain's inclusion proof in the checkpoint.
func (b *Bundle) prove(leaves []checkpoint.Leaf) error {
	if b.Checkpoint == nil {
		return nil
	}
	if _, err := checkpoint.Parse(b.Checkpoint); err != nil {
		return fmt.Errorf("%w: the stored checkpoint: %v", errkind.ErrConflict, err)
	}
	tree, err := checkpoint.NewTree(leaves)
	if err != nil {
		return fmt.Errorf("%w: the stored checkpoint leaves: %v", errkind.ErrConflict, err)
	}
	for i := range b.Chains {
		c := &b.Chains[i]
		at, ok := checkpoint.Find(leaves, c.AgentID.S)
		// An erased leaf keeps the hash committed to under the erased id,
		// which a proof for the pseudonym cannot reproduce.
		if !ok || leaves[at].Erased || leaves[at].Seq < c.FromSeq-1 {
			continue
		}
		p, err := tree.Prove(at)
		if err != nil {
			return fmt.Errorf("%w: proving agent %q: %v", errkind.ErrConflict, c.AgentID.S, err)
		}
		c.Proof = &Inclusion{Seq: leaves[at].Seq, Proof: p}
	}
	return nil
}
