package witnesstest

import (
	"context"
	"testing"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

// TestLog: the in-memory log's notes open with its verifier, name its
// size, and its consistency proofs verify with transparency-dev/merkle.
func TestLog(t *testing.T) {
	l := NewLog(t, "example.test/log")
	l.Append("a", "b", "c")
	old := l.Root(3)
	l.Append("d", "e")
	b, size, err := l.LatestNote(context.Background())
	if err != nil || size != 5 {
		t.Fatalf("LatestNote: %d %v", size, err)
	}
	if _, err := note.Open(b, note.VerifierList(l.Verifier(t))); err != nil {
		t.Fatalf("the note does not open: %v\n%s", err, b)
	}
	p, err := l.ConsistencyProof(context.Background(), 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, 3, 5, p, old, l.Root(5)); err != nil {
		t.Errorf("consistency 3 -> 5: %v", err)
	}
	fork := l.Fork(t)
	fork.Append("x", "y", "z")
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, 3, 5, p, fork.Root(3), l.Root(5)); err == nil {
		t.Error("the proof verified from a fork's root")
	}
	s := &Sink{}
	if n, err := s.LastWitnessed(context.Background(), "w"); n != 0 || err != nil {
		t.Errorf("empty sink: %d %v", n, err)
	}
	if err := s.StoreCosignature(context.Background(), 4, "w", "— w AAAA"); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.LastWitnessed(context.Background(), "w"); n != 4 || len(s.Cosignatures("w")) != 1 {
		t.Errorf("after one cosignature: %d %v", n, s.Cosignatures("w"))
	}
}
