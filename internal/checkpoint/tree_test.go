package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// refLeafHash is RFC 6962's leaf hash written out, independent of the
// package's array-based one.
func refLeafHash(data []byte) Hash {
	return sha256.Sum256(append([]byte{0}, data...))
}

func refNodeHash(l, r Hash) Hash {
	return sha256.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
}

// refSplit is the largest power of two below n (n >= 2), by counting up.
func refSplit(n int) int {
	k := 1
	for k*2 < n {
		k *= 2
	}
	return k
}

// refRoot is RFC 6962 §2.1's MTH, recursively, as the RFC states it.
func refRoot(leaves []Hash) Hash {
	switch len(leaves) {
	case 0:
		return sha256.Sum256(nil)
	case 1:
		return leaves[0]
	}
	k := refSplit(len(leaves))
	return refNodeHash(refRoot(leaves[:k]), refRoot(leaves[k:]))
}

// refPath is RFC 6962 §2.1.1's PATH(m, D[n]), recursively.
func refPath(m int, leaves []Hash) []Hash {
	if len(leaves) <= 1 {
		return nil
	}
	k := refSplit(len(leaves))
	if m < k {
		return append(refPath(m, leaves[:k]), refRoot(leaves[k:]))
	}
	return append(refPath(m-k, leaves[k:]), refRoot(leaves[:k]))
}

func mustHex(t testing.TB, s string) Hash {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != HashSize {
		t.Fatalf("bad test hash %q", s)
	}
	return Hash(b)
}

// The reference tree of Certificate Transparency's C++ merkletree_test.cc
// (also in Trillian and transparency-dev/merkle): eight leaves, the root at
// every size and some audit paths, computed by implementations other than
// this one.
var (
	ctLeafInputs = []string{"", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"}
	ctRoots      = []string{
		"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
		"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
		"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
		"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
		"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
		"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
		"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
		"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
	}
	ctPaths = []struct {
		index, size int64
		path        []string
	}{
		{0, 1, nil},
		{0, 8, []string{
			"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
			"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
			"6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
		}},
		{5, 8, []string{
			"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
			"ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
			"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
		}},
		{2, 3, []string{"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"}},
		{1, 5, []string{
			"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
			"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
			"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
		}},
	}
)

func ctLeafHashes(t testing.TB) []Hash {
	var hs []Hash
	for _, s := range ctLeafInputs {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, refLeafHash(b))
	}
	return hs
}

func TestRFC6962Vectors(t *testing.T) {
	if got := (&Tree{levels: [][]Hash{{}}}).Root(); got.String() != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("empty root %s", got)
	}
	hs := ctLeafHashes(t)
	for n := 1; n <= len(hs); n++ {
		tr := newTreeFromHashes(append([]Hash(nil), hs[:n]...))
		if got, want := tr.Root(), mustHex(t, ctRoots[n-1]); got != want {
			t.Errorf("root of %d leaves: %s, want %s", n, got, want)
		}
	}
	for _, c := range ctPaths {
		tr := newTreeFromHashes(append([]Hash(nil), hs[:c.size]...))
		p, err := tr.Prove(c.index)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Path) != len(c.path) {
			t.Fatalf("leaf %d of %d: path of %d hashes, want %d", c.index, c.size, len(p.Path), len(c.path))
		}
		for i, s := range c.path {
			if p.Path[i] != mustHex(t, s) {
				t.Errorf("leaf %d of %d: path[%d] = %s, want %s", c.index, c.size, i, p.Path[i], s)
			}
		}
		root, err := rootFromPath(c.index, c.size, hs[c.index], p.Path)
		if err != nil || root != mustHex(t, ctRoots[c.size-1]) {
			t.Errorf("leaf %d of %d: the vector's path leads to %s, %v", c.index, c.size, root, err)
		}
	}
}

func randomHashes(r *rand.Rand, n int) []Hash {
	hs := make([]Hash, n)
	for i := range hs {
		for j := range hs[i] {
			hs[i][j] = byte(r.Uint32())
		}
	}
	return hs
}

// TestTreeAgainstReference checks roots and paths against the recursive
// definition for every size up to 300 (every leaf up to 130) and a few
// larger ones, and that every path verifies.
func TestTreeAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1000, 1023, 1024, 1025, 4097}
	for n := 0; n <= 300; n++ {
		sizes = append(sizes, n)
	}
	for _, n := range sizes {
		hs := randomHashes(r, n)
		tr := newTreeFromHashes(append([]Hash(nil), hs...))
		if tr.Size() != int64(n) {
			t.Fatalf("size %d, want %d", tr.Size(), n)
		}
		if got, want := tr.Root(), refRoot(hs); got != want {
			t.Fatalf("root of %d leaves: %s, want %s", n, got, want)
		}
		ms := []int{}
		if n <= 130 {
			for m := range n {
				ms = append(ms, m)
			}
		} else {
			ms = append(ms, 0, n-1, n/2, r.IntN(n))
		}
		for _, m := range ms {
			p, err := tr.Prove(int64(m))
			if err != nil {
				t.Fatal(err)
			}
			want := refPath(m, hs)
			if len(p.Path) != len(want) || p.Index != int64(m) || p.Size != int64(n) {
				t.Fatalf("leaf %d of %d: proof %d/%d with %d hashes, want %d", m, n, p.Index, p.Size, len(p.Path), len(want))
			}
			for i := range want {
				if p.Path[i] != want[i] {
					t.Fatalf("leaf %d of %d: path[%d] differs", m, n, i)
				}
			}
			if got, err := rootFromPath(p.Index, p.Size, hs[m], p.Path); err != nil || got != tr.Root() {
				t.Fatalf("leaf %d of %d: path leads to %s, %v", m, n, got, err)
			}
		}
	}
}

// TestPathFixesLeafAndIndex: in a tree of n leaves, a path verifies for its
// own leaf at its own index and for nothing else: every other index, a
// flipped bit in any hash, a hash dropped or added.
func TestPathFixesLeafAndIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= 40; n++ {
		hs := randomHashes(r, n)
		tr := newTreeFromHashes(append([]Hash(nil), hs...))
		root := tr.Root()
		for m := range n {
			p, _ := tr.Prove(int64(m))
			for m2 := range n {
				if m2 == m {
					continue
				}
				if got, err := rootFromPath(int64(m2), int64(n), hs[m], p.Path); err == nil && got == root {
					t.Fatalf("path of leaf %d of %d verifies at index %d", m, n, m2)
				}
				if got, err := rootFromPath(int64(m), int64(n), hs[m2], p.Path); err == nil && got == root {
					t.Fatalf("path of leaf %d of %d verifies for leaf %d", m, n, m2)
				}
			}
			for i := range p.Path {
				bad := append([]Hash(nil), p.Path...)
				bad[i][r.IntN(HashSize)] ^= 1 << r.IntN(8)
				if got, err := rootFromPath(int64(m), int64(n), hs[m], bad); err == nil && got == root {
					t.Fatalf("leaf %d of %d: path with hash %d altered verifies", m, n, i)
				}
			}
			for _, bad := range [][]Hash{append(append([]Hash(nil), p.Path...), root), p.Path[:max(0, len(p.Path)-1)]} {
				if len(bad) == len(p.Path) {
					continue
				}
				if _, err := rootFromPath(int64(m), int64(n), hs[m], bad); !errors.Is(err, ErrProof) {
					t.Fatalf("leaf %d of %d: path of %d hashes (want %d): %v", m, n, len(bad), len(p.Path), err)
				}
			}
		}
	}
}

// TestSizeIsNotFixedByThePath shows why VerifyInclusion takes the tree size
// from the checkpoint rather than from the proof: the path of leaf 0 of 4
// also leads to the root of 4 when read as leaf 0 of 3.
func TestSizeIsNotFixedByThePath(t *testing.T) {
	leaves := testLeaves(4)
	tr, err := NewTree(leaves)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tr.Prove(0)
	lh, _ := leaves[0].MerkleHash()
	if got, err := rootFromPath(0, 3, lh, p.Path); err != nil || got != tr.Root() {
		t.Fatalf("expected the size-3 reading to reach the size-4 root: %s, %v", got, err)
	}
	p.Size = 3
	if err := VerifyInclusion(tr.Root(), 4, leaves[0], p); !errors.Is(err, ErrProof) {
		t.Fatalf("proof claiming size 3 against a checkpoint of 4: %v", err)
	}
}

func TestProveAndVerifyInclusion(t *testing.T) {
	leaves := testLeaves(37)
	tr, err := NewTree(leaves)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range leaves {
		idx, ok := Find(leaves, l.AgentID)
		if !ok || idx != int64(i) {
			t.Fatalf("Find(%s) = %d, %v", l.AgentID, idx, ok)
		}
		p, err := tr.Prove(idx)
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyInclusion(tr.Root(), tr.Size(), l, p); err != nil {
			t.Fatalf("leaf %d: %v", i, err)
		}
		other := l
		other.Seq++
		if err := VerifyInclusion(tr.Root(), tr.Size(), other, p); !errors.Is(err, ErrProof) || !errors.Is(err, errkind.ErrInvalid) {
			t.Fatalf("leaf %d with another seq: %v", i, err)
		}
		other = l
		other.Hash[0] ^= 1
		if err := VerifyInclusion(tr.Root(), tr.Size(), other, p); !errors.Is(err, ErrProof) {
			t.Fatalf("leaf %d with another hash: %v", i, err)
		}
		if err := VerifyInclusion(tr.Root(), tr.Size(), leaves[(i+1)%len(leaves)], p); !errors.Is(err, ErrProof) {
			t.Fatalf("leaf %d's proof for the next leaf: %v", i, err)
		}
		if err := VerifyInclusion(EmptyRoot, tr.Size(), l, p); !errors.Is(err, ErrProof) {
			t.Fatalf("leaf %d against another root: %v", i, err)
		}
	}
	if _, ok := Find(leaves, "absent"); ok {
		t.Fatal("Find found an absent agent")
	}
	for _, idx := range []int64{-1, tr.Size()} {
		if _, err := tr.Prove(idx); !errors.Is(err, errkind.ErrInvalid) {
			t.Errorf("Prove(%d): %v", idx, err)
		}
	}
	p, _ := tr.Prove(0)
	if err := VerifyInclusion(tr.Root(), tr.Size(), Leaf{AgentID: "bad id", Seq: 1}, p); !errors.Is(err, errkind.ErrInvalid) || errors.Is(err, ErrProof) {
		t.Errorf("invalid leaf: %v", err)
	}
	for _, bad := range []Proof{{Index: -1, Size: 37, Path: p.Path}, {Index: 37, Size: 37, Path: p.Path}, {Index: 0, Size: 0}} {
		if err := VerifyInclusion(tr.Root(), bad.Size, leaves[0], bad); !errors.Is(err, ErrProof) {
			t.Errorf("proof %d of %d: %v", bad.Index, bad.Size, err)
		}
	}
}

func TestEmptyAndSingleTree(t *testing.T) {
	tr, err := NewTree(nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Size() != 0 || tr.Root() != EmptyRoot {
		t.Fatalf("empty tree: %d leaves, root %s", tr.Size(), tr.Root())
	}
	if _, err := tr.Prove(0); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("proof in an empty tree: %v", err)
	}
	leaves := testLeaves(1)
	tr, _ = NewTree(leaves)
	if lh, _ := leaves[0].MerkleHash(); tr.Root() != lh {
		t.Fatal("the root of one leaf is not its leaf hash")
	}
	p, _ := tr.Prove(0)
	if len(p.Path) != 0 || VerifyInclusion(tr.Root(), 1, leaves[0], p) != nil {
		t.Fatalf("single leaf proof %+v", p)
	}
}

func TestHashText(t *testing.T) {
	h := refLeafHash([]byte("x"))
	b, _ := h.MarshalText()
	if string(b) != h.String() || len(b) != 64 {
		t.Fatalf("MarshalText %s, String %s", b, h)
	}
	var back Hash
	if err := back.UnmarshalText(b); err != nil || back != h {
		t.Fatalf("round trip: %v", err)
	}
	for _, bad := range []string{"", h.String()[:62], h.String() + "00", fmt.Sprintf("%X", h[:]), "zz" + h.String()[2:]} {
		if err := back.UnmarshalText([]byte(bad)); !errors.Is(err, errkind.ErrInvalid) {
			t.Errorf("UnmarshalText(%q): %v", bad, err)
		}
	}
}
