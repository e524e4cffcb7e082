package storetest

import (
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// testCheckpoints: heads by agent id, checkpoints stored in sequence with
// their leaves, record hashes at archived positions, and one agent's chain
// as the walk reads it.
func testCheckpoints(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	// Agent ids whose byte order differs from a case-insensitive one.
	ingest(t, s, "op-a", conduit("c1", "b", ledger.Verified, start, end), conduit("c2", "B", ledger.Running, start, time.Time{}),
		conduit("c2", "B", ledger.Verified, start, end), conduit("c3", "a", ledger.Failed, start, end))
	heads, err := s.Heads(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.CheckLeaves(heads); err != nil || len(heads) != 3 || heads[0].AgentID != "B" || heads[0].Seq != 2 {
		t.Fatalf("heads %+v: %v", heads, err)
	}
	for _, l := range heads {
		a, _ := s.Agent(ctx(t), l.AgentID)
		if a.ChainHead != l.Hash || a.ChainLength != l.Seq {
			t.Errorf("head of %s %+v, agent %+v", l.AgentID, l, a)
		}
	}
	if _, err := s.Checkpoint(ctx(t), 0); errkind.Of(err) != errkind.NotFound {
		t.Errorf("latest of none: %v", err)
	}
	tree, _ := checkpoint.NewTree(heads)
	cp := checkpoint.Checkpoint{Number: 1, Time: base, Agents: tree.Size(), Root: tree.Root(), Environment: "production"}
	if err := s.AddCheckpoint(ctx(t), cp, []byte(`{"checkpoint":1}`), heads); err != nil {
		t.Fatal(err)
	}
	cp2 := cp
	cp2.Number = 3
	wantKind(t, s.AddCheckpoint(ctx(t), cp2, []byte(`{}`), heads), errkind.Conflict)
	cp2.Number = 1
	wantKind(t, s.AddCheckpoint(ctx(t), cp2, []byte(`{}`), heads), errkind.Conflict)
	ingest(t, s, "op-a", conduit("c4", "a", ledger.Verified, start, end))
	heads2, _ := s.Heads(ctx(t))
	cp2.Number = 2
	if err := s.AddCheckpoint(ctx(t), cp2, []byte(`{"checkpoint":2}`), heads2); err != nil {
		t.Fatal(err)
	}
	if doc, err := s.Checkpoint(ctx(t), 0); err != nil || string(doc) != `{"checkpoint":2}` {
		t.Errorf("latest: %s %v", doc, err)
	}
	if doc, err := s.Checkpoint(ctx(t), 1); err != nil || string(doc) != `{"checkpoint":1}` {
		t.Errorf("number 1: %s %v", doc, err)
	}
	if _, err := s.Checkpoint(ctx(t), 9); errkind.Of(err) != errkind.NotFound {
		t.Errorf("number 9: %v", err)
	}
	leaves, err := s.CheckpointLeaves(ctx(t), 1)
	if err != nil || len(leaves) != 3 || leaves[0] != heads[0] || leaves[2] != heads[2] {
		t.Errorf("leaves of 1: %+v %v", leaves, err)
	}
	// The record hashes at the archived positions are the archived heads,
	// even after agent a moved on; an agent without that record is left
	// out.
	want := append(leaves, checkpoint.Leaf{AgentID: "zz", Seq: 1}, checkpoint.Leaf{AgentID: "b", Seq: 9})
	got, err := s.RecordHashes(ctx(t), want)
	if err != nil || len(got) != 3 {
		t.Fatalf("record hashes %+v %v", got, err)
	}
	for i := range got {
		if got[i] != leaves[i] {
			t.Errorf("record hash %+v, want %+v", got[i], leaves[i])
		}
	}
	if err := checkpoint.Extends(cp, got); err != nil {
		t.Errorf("the ledger no longer extends checkpoint 1: %v", err)
	}
	chain, err := s.Chain(ctx(t), "B")
	if err != nil || len(chain) != 2 || chain[1].Record.Seq != 2 || !chain[1].HasEvent || chain[1].Event.Event.ID != "c2" || chain[1].Record.Status != ledger.Verified {
		t.Fatalf("chain of B %+v %v", chain, err)
	}
	if _, err := s.Chain(ctx(t), "nobody"); errkind.Of(err) != errkind.NotFound {
		t.Errorf("chain of nobody: %v", err)
	}
}
