package checkpoint

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// fakeLedger holds each agent's records (canonical bytes) and chains them
// as the ledger does, so that the scenarios below alter records, not
// hashes.
type fakeLedger map[string][][]byte

func newFakeLedger(lengths map[string]int) fakeLedger {
	l := fakeLedger{}
	for id, n := range lengths {
		l[id] = [][]byte{}
		for range n {
			l.append(id)
		}
	}
	return l
}

func (l fakeLedger) append(id string) {
	l[id] = append(l[id], fmt.Appendf(nil, `{"agent_id":%q,"seq":%d}`, id, len(l[id])+1))
}

// chainHash is the agent's chain hash at seq, recomputed from its records.
func (l fakeLedger) chainHash(id string, seq int) ledger.Hash {
	var h ledger.Hash
	for _, rec := range l[id][:seq] {
		h = ledger.Link(h, rec)
	}
	return h
}

// heads are the leaves of a checkpoint taken now.
func (l fakeLedger) heads() []Leaf {
	var leaves []Leaf
	for _, id := range slices.Sorted(maps.Keys(l)) {
		n := len(l[id])
		leaves = append(leaves, Leaf{AgentID: id, Seq: int64(n), Hash: l.chainHash(id, n)})
	}
	return leaves
}

// cut is the current ledger cut at archived's seqs, as the store recomputes
// it: every archived agent still present, at min(archived seq, its length).
func (l fakeLedger) cut(archived []Leaf) []Leaf {
	var leaves []Leaf
	for _, a := range archived {
		recs, ok := l[a.AgentID]
		if !ok {
			continue
		}
		seq := min(int(a.Seq), len(recs))
		leaves = append(leaves, Leaf{AgentID: a.AgentID, Seq: int64(seq), Hash: l.chainHash(a.AgentID, seq)})
	}
	return leaves
}

func (l fakeLedger) clone() fakeLedger {
	c := fakeLedger{}
	for id, recs := range l {
		c[id] = slices.Clone(recs)
	}
	return c
}

func checkpointOf(t *testing.T, leaves []Leaf) Checkpoint {
	t.Helper()
	tr, err := NewTree(leaves)
	if err != nil {
		t.Fatal(err)
	}
	c := Checkpoint{Number: 3, Time: testTime, Agents: tr.Size(), Root: tr.Root(), Environment: "test", Issuer: Issuer{Platform: "test"}}
	if err := c.Sign(testHMAC(t)); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExtendsAndDiff(t *testing.T) {
	base := newFakeLedger(map[string]int{"alice": 4, "bob": 3, "carol": 5, "dave": 2, "erin": 1, "frank": 0})
	archived := base.heads()
	c := checkpointOf(t, archived)

	cases := []struct {
		name  string
		edit  func(fakeLedger)
		count int64  // the divergence's leaf count; 0 when Extends holds
		root  bool   // a root-only divergence
		diff  string // Diff's changes, joined
	}{
		{name: "untouched", edit: func(fakeLedger) {}},
		{name: "records appended after the checkpoint", edit: func(l fakeLedger) { l.append("alice"); l.append("frank"); l.append("zoe") }},
		{name: "a record after the checkpointed seq rewritten", edit: func(l fakeLedger) {
			l.append("bob")
			l["bob"][3] = []byte("forged")
		}},
		{name: "a chain rewritten", edit: func(l fakeLedger) { l["bob"][1] = []byte("forged") }, root: true,
			diff: "agent bob: rewritten"},
		{name: "a record inserted", edit: func(l fakeLedger) {
			l["carol"] = slices.Insert(l["carol"], 2, []byte("inserted"))
		}, root: true, diff: "agent carol: rewritten"},
		{name: "a history truncated", edit: func(l fakeLedger) { l["carol"] = l["carol"][:2] }, root: true,
			diff: "agent carol: truncated (checkpointed at seq 5, the chain now ends at seq 2)"},
		{name: "truncated and regrown past the checkpoint", edit: func(l fakeLedger) {
			l["dave"] = l["dave"][:1]
			l["dave"] = append(l["dave"], []byte("other"), []byte("more"))
		}, root: true, diff: "agent dave: rewritten"},
		{name: "an agent dropped", edit: func(l fakeLedger) { delete(l, "erin") }, count: 5,
			diff: "agent erin: dropped (checkpointed at seq 1, no chain now)"},
		{name: "an agent without records dropped", edit: func(l fakeLedger) { delete(l, "frank") }, count: 5,
			diff: "agent frank: dropped"},
		{name: "two agents damaged", edit: func(l fakeLedger) { delete(l, "alice"); l["erin"][0] = []byte("x") }, count: 5,
			diff: "agent alice: dropped (checkpointed at seq 4, no chain now); agent erin: rewritten"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := base.clone()
			tc.edit(now)
			current := now.cut(archived)
			err := Extends(c, current)
			var d *Divergence
			switch {
			case tc.count == 0 && !tc.root:
				if err != nil {
					t.Fatalf("Extends: %v", err)
				}
			case !errors.As(err, &d) || !errors.Is(err, ErrDiverged) || errkind.Of(err) != errkind.Conflict:
				t.Fatalf("Extends: %v, want a divergence", err)
			case tc.root && (d.Leaves != c.Agents || d.LeavesRoot == c.Root || !strings.Contains(err.Error(), "rewritten or truncated")):
				t.Fatalf("Extends: %+v (%v), want another root over %d agents", d, err, c.Agents)
			case tc.count != 0 && (d.Leaves != tc.count || !strings.Contains(err.Error(), "dropped")):
				t.Fatalf("Extends: %+v (%v), want %d leaves", d, err, tc.count)
			}
			changes, err := Diff(c, archived, current)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ch := range changes {
				got = append(got, ch.String())
			}
			if s := strings.Join(got, "; "); (tc.diff == "") != (s == "") || !strings.HasPrefix(s, tc.diff) {
				t.Fatalf("Diff: %q, want %q", s, tc.diff)
			}
		})
	}
}

// TestAddedAgent: a current list naming an agent the checkpoint did not
// (the store recomputed from an altered list) is refused by Extends and
// named by Diff.
func TestAddedAgent(t *testing.T) {
	archived := testLeaves(4)
	c := checkpointOf(t, archived)
	current := slices.Insert(slices.Clone(archived), 2, Leaf{AgentID: "agent-00000001x", Seq: 2})
	var d *Divergence
	if err := Extends(c, current); !errors.As(err, &d) || d.Leaves != 5 || !strings.Contains(err.Error(), "1 agent it did not name added") {
		t.Fatalf("Extends: %v", err)
	}
	changes, err := Diff(c, archived, current)
	if err != nil || len(changes) != 1 || changes[0].Kind != Added || changes[0].AgentID != "agent-00000001x" || changes[0].CurrentSeq != 2 {
		t.Fatalf("Diff: %v, %v", changes, err)
	}
	// One agent swapped for another keeps the count: the root tells.
	swapped := slices.Clone(archived)
	swapped[3].AgentID = "agent-00000003x"
	if err := Extends(c, swapped); !errors.As(err, &d) || d.Leaves != 4 || !strings.Contains(err.Error(), "replaced by another") {
		t.Fatalf("Extends of a swapped agent: %v", err)
	}
	changes, err = Diff(c, archived, swapped)
	if err != nil || len(changes) != 2 || changes[0].Kind != Dropped || changes[1].Kind != Added {
		t.Fatalf("Diff of a swapped agent: %v, %v", changes, err)
	}
}

// TestDiffRefusesAlteredStoredLeaves: a stored leaf list that does not give
// the signed root is reported, not compared.
func TestDiffRefusesAlteredStoredLeaves(t *testing.T) {
	archived := testLeaves(6)
	c := checkpointOf(t, archived)
	for name, edit := range map[string]func([]Leaf) []Leaf{
		"a seq lowered to hide a truncation": func(l []Leaf) []Leaf { l[2].Seq--; return l },
		"an agent removed":                   func(l []Leaf) []Leaf { return slices.Delete(l, 1, 2) },
	} {
		stored := edit(slices.Clone(archived))
		_, err := Diff(c, stored, stored)
		var d *Divergence
		if !errors.As(err, &d) || !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), "stored leaves of checkpoint 3") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestExtendsDiffRefuseInvalidInput(t *testing.T) {
	archived := testLeaves(3)
	c := checkpointOf(t, archived)
	unsorted := []Leaf{archived[1], archived[0], archived[2]}
	past := slices.Clone(archived)
	past[1].Seq++
	for name, err := range map[string]error{
		"Extends unsorted":          Extends(c, unsorted),
		"Extends duplicate":         Extends(c, []Leaf{archived[0], archived[0]}),
		"Diff unsorted archived":    errOf(Diff(c, unsorted, archived)),
		"Diff duplicate current":    errOf(Diff(c, archived, []Leaf{archived[0], archived[1], archived[1]})),
		"Diff current past archive": errOf(Diff(c, archived, past)),
	} {
		if !errors.Is(err, errkind.ErrInvalid) || errors.Is(err, ErrDiverged) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func errOf(_ []Change, err error) error { return err }

// TestErasedLeaf: an erased agent's leaf keeps its place and leaf hash
// under the pseudonym, so the signed root still holds, the leaf still
// proves inclusion, and Diff compares the pseudonym's chain there.
func TestErasedLeaf(t *testing.T) {
	archived := testLeaves(4)
	c := checkpointOf(t, archived)
	erased := slices.Clone(archived)
	orig, err := archived[1].MerkleHash()
	if err != nil {
		t.Fatal(err)
	}
	erased[1].AgentID, erased[1].Erased, erased[1].ErasedHash = "zz-erased-1", true, orig
	if err := Extends(c, erased); err != nil {
		t.Fatalf("the root over an erased leaf: %v", err)
	}
	tree, err := NewTree(erased)
	if err != nil {
		t.Fatal(err)
	}
	i, ok := Find(erased, "zz-erased-1")
	if !ok || i != 1 {
		t.Fatalf("Find erased leaf: %d %v", i, ok)
	}
	if j, ok := Find(erased, archived[2].AgentID); !ok || j != 2 {
		t.Fatalf("Find after an erased leaf: %d %v", j, ok)
	}
	p, err := tree.Prove(i)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.VerifyInclusion(erased[1], p); err != nil {
		t.Errorf("inclusion of the erased leaf: %v", err)
	}
	// The current ledger cut at the archived seqs, in the archived order.
	current := slices.Clone(erased)
	current[1].Erased = false
	if ch, err := Diff(c, erased, current); err != nil || len(ch) != 0 {
		t.Errorf("unchanged: %v %v", ch, err)
	}
	current[1].Hash[0] ^= 1
	if ch, err := Diff(c, erased, current); err != nil || len(ch) != 1 || ch[0].AgentID != "zz-erased-1" || ch[0].Kind != Rewritten {
		t.Errorf("the pseudonym's chain rewritten: %v %v", ch, err)
	}
	// A forged erased hash does not hold the root.
	erased[1].ErasedHash[0] ^= 1
	if err := Extends(c, erased); !errors.Is(err, ErrDiverged) {
		t.Errorf("forged erased hash: %v", err)
	}
}

func TestExtendsEmptyLedger(t *testing.T) {
	c := checkpointOf(t, nil)
	if c.Root != EmptyRoot || c.Agents != 0 {
		t.Fatalf("checkpoint of nothing: %+v", c)
	}
	if err := Extends(c, nil); err != nil {
		t.Fatal(err)
	}
	var d *Divergence
	if err := Extends(c, testLeaves(2)); !errors.As(err, &d) || d.Leaves != 2 || !strings.Contains(err.Error(), "2 agents it did not name added") {
		t.Fatalf("an agent appearing in an empty checkpoint: %v", err)
	}
	if changes, err := Diff(c, nil, nil); err != nil || len(changes) != 0 {
		t.Fatalf("Diff: %v, %v", changes, err)
	}
}
