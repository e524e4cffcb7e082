package checkpoint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// ErrDiverged is matched by every Divergence: a ledger (or a stored leaf
// list) that no longer commits to what an archived checkpoint signed. It
// matches errkind.ErrConflict: the data conflicts with the signed record.
var ErrDiverged = fmt.Errorf("%w: the ledger does not extend the checkpoint", errkind.ErrConflict)

// Divergence is how a list of leaves differs from a checkpoint, as far as
// the checkpoint alone can tell: it holds only a count and a root, so a
// count says how many agents are missing or extra, and a root only that
// some leaf differs, not which (Diff names them, given the leaves the
// checkpoint was built from). As an error it matches ErrDiverged.
type Divergence struct {
	Checkpoint int64
	// Agents is the checkpoint's count, Leaves the list's.
	Agents, Leaves int64
	// Root is the checkpoint's root, LeavesRoot the list's.
	Root, LeavesRoot Hash
}

func (d *Divergence) Error() string {
	switch {
	case d.Leaves < d.Agents:
		return fmt.Sprintf("checkpoint %d committed to %d agents, the leaves name %d: %s dropped",
			d.Checkpoint, d.Agents, d.Leaves, agents(d.Agents-d.Leaves))
	case d.Leaves > d.Agents:
		return fmt.Sprintf("checkpoint %d committed to %d agents, the leaves name %d: %s it did not name added",
			d.Checkpoint, d.Agents, d.Leaves, agents(d.Leaves-d.Agents))
	}
	return fmt.Sprintf("checkpoint %d committed to root %s over %d agents, the leaves give root %s: "+
		"at least one agent's chain was rewritten or truncated before its checkpointed seq, or an agent was replaced by another",
		d.Checkpoint, d.Root, d.Agents, d.LeavesRoot)
}

func agents(n int64) string {
	if n == 1 {
		return "1 agent"
	}
	return fmt.Sprintf("%d agents", n)
}

// Unwrap returns ErrDiverged.
func (d *Divergence) Unwrap() error { return ErrDiverged }

// Extends reports whether leaves still commit to what c signed: nil when
// they are exactly c.Agents leaves whose tree has root c.Root, a
// *Divergence (matching ErrDiverged and errkind.ErrConflict) otherwise.
// Leaves that fail CheckLeaves match errkind.ErrInvalid.
//
// For the question "does the current ledger extend the checkpoint", leaves
// is, for every agent the checkpoint named, its chain as it is now, cut at
// the checkpointed seq: the chain hash at that seq recomputed from the
// current records, or the current head where the chain is now shorter. An
// agent that has disappeared from the ledger has no leaf. For the question
// "is this the leaf list c was built from", leaves is the stored list.
//
// c's signature is not checked here: Verify it first.
func Extends(c Checkpoint, leaves []Leaf) error {
	t, err := NewTree(leaves)
	if err != nil {
		return err
	}
	if t.Size() == c.Agents && t.Root() == c.Root {
		return nil
	}
	return &Divergence{Checkpoint: c.Number, Agents: c.Agents, Leaves: t.Size(), Root: c.Root, LeavesRoot: t.Root()}
}

// ChangeKind says how an agent's chain differs from a checkpoint.
type ChangeKind string

// The kinds of change.
const (
	// Dropped: the checkpoint named the agent; the ledger has no chain
	// for it.
	Dropped ChangeKind = "dropped"
	// Truncated: the agent's chain now ends before the checkpointed seq.
	// Whether the records it kept were also rewritten cannot be told: the
	// checkpoint holds no hash at the seq it now ends at.
	Truncated ChangeKind = "truncated"
	// Rewritten: the chain reaches the checkpointed seq, but its hash there
	// differs: some record up to that seq was altered, removed or inserted.
	Rewritten ChangeKind = "rewritten"
	// Added: the list names an agent the checkpoint did not.
	Added ChangeKind = "added"
)

// Change is one agent whose chain no longer matches a checkpoint.
type Change struct {
	AgentID string
	Kind    ChangeKind
	// ArchivedSeq and ArchivedHash are the checkpoint's leaf (zero for
	// Added); CurrentSeq and CurrentHash the current one (zero for
	// Dropped).
	ArchivedSeq  int64
	ArchivedHash ledger.Hash
	CurrentSeq   int64
	CurrentHash  ledger.Hash
}

func (ch Change) String() string {
	switch ch.Kind {
	case Dropped:
		return fmt.Sprintf("agent %s: dropped (checkpointed at seq %d, no chain now)", ch.AgentID, ch.ArchivedSeq)
	case Truncated:
		return fmt.Sprintf("agent %s: truncated (checkpointed at seq %d, the chain now ends at seq %d)", ch.AgentID, ch.ArchivedSeq, ch.CurrentSeq)
	case Rewritten:
		return fmt.Sprintf("agent %s: rewritten (chain hash at seq %d was %x, is %x)", ch.AgentID, ch.ArchivedSeq, ch.ArchivedHash, ch.CurrentHash)
	}
	return fmt.Sprintf("agent %s: %s (at seq %d, not in the checkpoint)", ch.AgentID, ch.Kind, ch.CurrentSeq)
}

// Diff names the agents whose chains no longer match checkpoint c, given
// archived, the leaf list c was built from (as the store kept it), and
// current, the current ledger cut at the archived seqs as Extends takes it.
//
// Diff first checks archived against c (Extends): only then does a leaf
// list the operator stored say what the signed root committed to. If it
// does not match, the error is that *Divergence, wrapped, and nothing is
// compared: the stored list was altered, and c alone cannot say how.
// Otherwise it returns the changes in agent id order, none when current
// matches archived exactly. A list that fails CheckLeaves, or a current
// leaf past its archived seq (not cut as Extends requires), matches
// errkind.ErrInvalid.
func Diff(c Checkpoint, archived, current []Leaf) ([]Change, error) {
	if err := Extends(c, archived); err != nil {
		return nil, fmt.Errorf("the stored leaves of checkpoint %d: %w", c.Number, err)
	}
	// Erased leaves keep their place in the tree (and cut leaves follow
	// it); compare in id order.
	byID := func(a, b Leaf) int { return strings.Compare(a.AgentID, b.AgentID) }
	if !slices.IsSortedFunc(archived, byID) {
		archived = slices.SortedFunc(slices.Values(archived), byID)
	}
	if !slices.IsSortedFunc(current, byID) {
		current = slices.SortedFunc(slices.Values(current), byID)
	}
	if err := CheckLeaves(current); err != nil {
		return nil, fmt.Errorf("current leaves: %w", err)
	}
	var changes []Change
	i, j := 0, 0
	for i < len(archived) || j < len(current) {
		switch {
		case j == len(current) || i < len(archived) && archived[i].AgentID < current[j].AgentID:
			a := &archived[i]
			changes = append(changes, Change{AgentID: a.AgentID, Kind: Dropped, ArchivedSeq: a.Seq, ArchivedHash: a.Hash})
			i++
		case i == len(archived) || current[j].AgentID < archived[i].AgentID:
			b := &current[j]
			changes = append(changes, Change{AgentID: b.AgentID, Kind: Added, CurrentSeq: b.Seq, CurrentHash: b.Hash})
			j++
		default:
			a, b := &archived[i], &current[j]
			ch := Change{AgentID: a.AgentID, ArchivedSeq: a.Seq, ArchivedHash: a.Hash, CurrentSeq: b.Seq, CurrentHash: b.Hash}
			switch {
			case b.Seq > a.Seq:
				return nil, fmt.Errorf("%w: current leaf of agent %s is at seq %d, past its checkpointed seq %d: cut each chain at the checkpointed seq",
					errkind.ErrInvalid, a.AgentID, b.Seq, a.Seq)
			case b.Seq < a.Seq:
				ch.Kind = Truncated
				changes = append(changes, ch)
			case b.Hash != a.Hash:
				ch.Kind = Rewritten
				changes = append(changes, ch)
			}
			i++
			j++
		}
	}
	return changes, nil
}
