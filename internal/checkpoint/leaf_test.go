package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// testLeaves returns n valid leaves in agent id order with distinct seqs
// and hashes.
func testLeaves(n int) []Leaf {
	leaves := make([]Leaf, n)
	for i := range leaves {
		id := fmt.Sprintf("agent-%08d", i)
		leaves[i] = Leaf{AgentID: id, Seq: int64(i%97 + 1), Hash: sha256.Sum256([]byte(id))}
	}
	return leaves
}

func TestLeafEncoding(t *testing.T) {
	l := Leaf{AgentID: "ab", Seq: 258, Hash: ledger.Hash(bytes.Repeat([]byte{0x11}, 32))}
	got, err := l.AppendBinary([]byte("prefix"))
	if err != nil {
		t.Fatal(err)
	}
	want := "prefix" + "\x00\x02" + "ab" + "\x00\x00\x00\x00\x00\x00\x01\x02" + strings.Repeat("\x11", 32)
	if string(got) != want {
		t.Fatalf("encoding\n%x\nwant\n%x", got, want)
	}
	h, err := l.MerkleHash()
	if err != nil {
		t.Fatal(err)
	}
	if want := refLeafHash(got[len("prefix"):]); h != want {
		t.Fatalf("MerkleHash %s, want SHA-256(0x00 || encoding) %s", h, want)
	}
	// The longest id fills the array merkleHash assembles in.
	long := Leaf{AgentID: strings.Repeat("x", maxAgentIDLen), Seq: 1<<63 - 1}
	enc, _ := long.AppendBinary(nil)
	if h, _ := long.MerkleHash(); len(enc) != maxLeafSize || h != refLeafHash(enc) {
		t.Fatalf("longest leaf: %d bytes, hash %s", len(enc), h)
	}
}

// TestLeafEncodingInjective: leaves whose fields would run together without
// the length prefix encode differently.
func TestLeafEncodingInjective(t *testing.T) {
	var h ledger.Hash
	h[0] = 'z'
	leaves := []Leaf{
		{AgentID: "a", Seq: 1},
		{AgentID: "a", Seq: 1, Hash: h},
		{AgentID: "a", Seq: 256},
		{AgentID: "a\x00", Seq: 1},
		{AgentID: "ab", Seq: 1},
		{AgentID: "b", Seq: 1},
		{AgentID: "a", Seq: 0},
	}
	seen := map[string]int{}
	for i, l := range leaves {
		// Encoded without validation: "a\x00" is no valid id, yet the
		// encoding must still not collide.
		enc := string(l.appendBinary(nil))
		if j, ok := seen[enc]; ok {
			t.Fatalf("leaves %d and %d encode alike: %s", i, j, hex.EncodeToString([]byte(enc)))
		}
		seen[enc] = i
	}
}

func TestLeafValidate(t *testing.T) {
	for _, l := range []Leaf{{AgentID: "", Seq: 1}, {AgentID: "a b", Seq: 1}, {AgentID: strings.Repeat("x", 129), Seq: 1}, {AgentID: "é", Seq: 1}, {AgentID: "a", Seq: -1}} {
		if err := l.Validate(); !errors.Is(err, errkind.ErrInvalid) {
			t.Errorf("Validate(%+v): %v", l, err)
		}
		if b, err := l.AppendBinary([]byte("x")); !errors.Is(err, errkind.ErrInvalid) || string(b) != "x" {
			t.Errorf("AppendBinary(%+v) = %q, %v", l, b, err)
		}
		if _, err := l.MerkleHash(); !errors.Is(err, errkind.ErrInvalid) {
			t.Errorf("MerkleHash(%+v): %v", l, err)
		}
		if _, err := NewTree([]Leaf{l}); !errors.Is(err, errkind.ErrInvalid) {
			t.Errorf("NewTree(%+v): %v", l, err)
		}
	}
	if err := (Leaf{AgentID: "a", Seq: 0}).Validate(); err != nil {
		t.Errorf("an agent without records: %v", err)
	}
}

func TestLeafOrder(t *testing.T) {
	cases := []struct {
		ids  []string
		want string // "" when valid
	}{
		{[]string{"a", "b", "c"}, ""},
		{[]string{"A", "Z", "a"}, ""}, // byte order: upper case first
		{[]string{"a", "a."}, ""},     // a prefix sorts first
		{[]string{"a", "c", "b"}, "sorts before"},
		{[]string{"a", "b", "b"}, "has two leaves"},
		{[]string{"b", "a"}, "sorts before"},
	}
	for _, c := range cases {
		leaves := make([]Leaf, len(c.ids))
		for i, id := range c.ids {
			leaves[i] = Leaf{AgentID: id, Seq: 1}
		}
		_, treeErr := NewTree(leaves)
		for _, err := range []error{CheckLeaves(leaves), treeErr} {
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%v: %v", c.ids, err)
			case c.want != "" && (!errors.Is(err, errkind.ErrInvalid) || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%v: %v, want %q", c.ids, err, c.want)
			}
		}
	}
}

// TestTreeKeepsNoLeaves: the tree's root does not change when the caller
// reuses the leaves slice.
func TestTreeKeepsNoLeaves(t *testing.T) {
	leaves := testLeaves(5)
	tr, _ := NewTree(leaves)
	root := tr.Root()
	leaves[2].Seq = 1000
	if tr.Root() != root {
		t.Fatal("the tree changed with its input")
	}
}
