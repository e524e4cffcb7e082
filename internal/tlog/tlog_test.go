package tlog

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

func TestTilePaths(t *testing.T) {
	for _, tc := range []struct {
		t    Tile
		path string
	}{
		{Tile{0, 0, 256}, "tile/0/000"},
		{Tile{0, 1234, 256}, "tile/0/x001/234"},
		{Tile{2, 1234067, 8}, "tile/2/x001/x234/067.p/8"},
		{Tile{1, 999, 255}, "tile/1/999.p/255"},
	} {
		if got := tc.t.Path(); got != tc.path {
			t.Errorf("%+v: %s, want %s", tc.t, got, tc.path)
		}
		if got, err := ParseTilePath(tc.path); err != nil || got != tc.t {
			t.Errorf("%s: %+v %v", tc.path, got, err)
		}
	}
	for _, bad := range []string{"tile/0/0", "tile/0/x000/001", "tile/0/001/002", "tile/64/000", "tile/01/000", "tile/0/000.p/0",
		"tile/0/000.p/256", "tile/0/000.p/07", "tile/entries/000", "tile/0/x1234/000", "tile/0/", "tiles/0/000", "tile/0/+12"} {
		if _, err := ParseTilePath(bad); errkind.Of(err) != errkind.Invalid {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// FuzzTilePath: a path is read only in its canonical form, which Path
// writes back byte for byte.
func FuzzTilePath(f *testing.F) {
	for _, s := range []string{"tile/0/000", "tile/0/x001/234", "tile/3/x001/x002/003.p/17", "tile/0/000.p/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		tile, err := ParseTilePath(p)
		if err != nil {
			return
		}
		if tile.Path() != p || tile.Width < 1 || tile.Width > TileWidth || tile.Level > MaxTileLevel {
			t.Fatalf("%q read as %+v, written %q", p, tile, tile.Path())
		}
	})
}

// memory is a log held in memory, with its subtree hashes integrated.
type memory struct {
	levels map[int][][]byte
}

func (m *memory) Hashes(_ context.Context, level int, from, to uint64) ([][]byte, error) {
	hs := m.levels[level]
	if to > uint64(len(hs)) {
		return nil, fmt.Errorf("%w: level %d holds %d", errkind.ErrNotFound, level, len(hs))
	}
	return hs[from:to], nil
}
func (m *memory) Count(_ context.Context, level int) (uint64, error) {
	return uint64(len(m.levels[level])), nil
}
func (m *memory) Add(_ context.Context, level int, from uint64, hashes [][]byte) error {
	if from != uint64(len(m.levels[level])) {
		hashes = hashes[uint64(len(m.levels[level]))-from:]
	}
	m.levels[level] = append(m.levels[level], hashes...)
	return nil
}

// TestProofs: roots, consistency and inclusion proofs over integrated
// subtrees verify with transparency-dev/merkle at sizes around the tile
// boundaries, and a false one does not.
func TestProofs(t *testing.T) {
	ctx := context.Background()
	m := &memory{levels: map[int][][]byte{}}
	roots := map[uint64][]byte{0: EmptyRoot()}
	const n = 256*256 + 300
	for i := range n {
		d := sha256.Sum256(fmt.Appendf(nil, "leaf %d", i))
		m.levels[0] = append(m.levels[0], LeafHash(d[:]))
		size := uint64(i + 1)
		if size%997 == 0 || size == 255 || size == 256 || size == 257 || size == 256*256 || size == n {
			if err := Integrate(ctx, m, size); err != nil {
				t.Fatal(err)
			}
			r, err := RootHash(ctx, m, size)
			if err != nil {
				t.Fatal(err)
			}
			roots[size] = r
		}
	}
	if len(m.levels[1]) != 256+1 || len(m.levels[2]) != 1 {
		t.Fatalf("integrated %d and %d subtrees", len(m.levels[1]), len(m.levels[2]))
	}
	for _, pair := range [][2]uint64{{0, n}, {255, 257}, {256, 256 * 256}, {257, n}, {997, 256 * 256}, {256 * 256, n}, {n, n}} {
		p, err := ConsistencyProof(ctx, m, pair[0], pair[1])
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyConsistency(pair[0], pair[1], p, roots[pair[0]], roots[pair[1]]); err != nil {
			t.Errorf("%v: %v", pair, err)
		}
		if len(p) > 0 {
			p[0] = make([]byte, HashSize)
			if VerifyConsistency(pair[0], pair[1], p, roots[pair[0]], roots[pair[1]]) == nil {
				t.Errorf("%v: a false proof verifies", pair)
			}
		}
	}
	for _, idx := range []uint64{0, 255, 256, 65535, n - 1} {
		p, err := InclusionProof(ctx, m, idx, n)
		if err != nil {
			t.Fatal(err)
		}
		d := sha256.Sum256(fmt.Appendf(nil, "leaf %d", idx))
		if err := VerifyInclusion(idx, n, d[:], p, roots[n]); err != nil {
			t.Errorf("leaf %d: %v", idx, err)
		}
		if VerifyInclusion(idx, n, []byte("another"), p, roots[n]) == nil {
			t.Errorf("leaf %d: another leaf verifies", idx)
		}
	}
	if _, err := ConsistencyProof(ctx, m, 5, 4); errkind.Of(err) != errkind.Invalid {
		t.Errorf("backwards: %v", err)
	}
	if _, err := InclusionProof(ctx, m, 4, 4); errkind.Of(err) != errkind.Invalid {
		t.Errorf("past the end: %v", err)
	}
	tile, err := ReadTile(ctx, m, Tile{Level: 1, Index: 1, Width: 1}, n)
	if err != nil || string(tile) != string(m.levels[1][256]) {
		t.Fatalf("tile 1/001.p/1: %v", err)
	}
	if _, err := ReadTile(ctx, m, Tile{Level: 1, Index: 1, Width: 2}, n); errkind.Of(err) != errkind.NotFound {
		t.Fatalf("tile 1/001.p/2: %v", err)
	}
}

// TestNotes: a note signs and opens with sumdb/note; another key, a
// signature named otherwise than the origin, a malformed checkpoint and
// a bad origin are refused; cosignature lines are appended after it.
func TestNotes(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	pub := priv.Public().(ed25519.PublicKey)
	sign := func(m []byte) ([]byte, error) { return ed25519.Sign(priv, m), nil }
	s, err := Ed25519Signer("example.com/log", pub, sign)
	if err != nil {
		t.Fatal(err)
	}
	c := Checkpoint{Origin: "example.com/log", Size: 7, Root: make([]byte, 32)}
	b, err := Sign(c, s)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := Ed25519Verifier("example.com/log", pub)
	if _, got, err := Open(b, note.VerifierList(v)); err != nil || got.Size != 7 || got.Origin != c.Origin {
		t.Fatalf("open: %+v %v", got, err)
	}
	otherSeed := sha256.Sum256([]byte("another key"))
	otherPriv := ed25519.NewKeyFromSeed(otherSeed[:])
	ov, _ := Ed25519Verifier("example.com/log", otherPriv.Public().(ed25519.PublicKey))
	if _, _, err := Open(b, note.VerifierList(ov)); !errors.Is(err, ErrSignature) {
		t.Errorf("another key: %v", err)
	}
	misnamed, _ := Ed25519Signer("elsewhere", pub, sign)
	mb, _ := note.Sign(&note.Note{Text: c.Text()}, misnamed)
	mv, _ := Ed25519Verifier("elsewhere", pub)
	if _, _, err := Open(mb, note.VerifierList(mv)); !errors.Is(err, ErrSignature) {
		t.Errorf("signed under another name: %v", err)
	}
	for _, text := range []string{"example.com/log\n07\n" + strings.Repeat("A", 43) + "=\n", "example.com/log\n7\nAAAA\n", "example.com/log\n7\n"} {
		nb, _ := note.Sign(&note.Note{Text: text}, s)
		if _, _, err := Open(nb, note.VerifierList(v)); errkind.Of(err) != errkind.Invalid || errors.Is(err, ErrSignature) {
			t.Errorf("%q: %v", text, err)
		}
	}
	for _, o := range []string{"", "a b", "a+b", strings.Repeat("a", 257)} {
		if err := CheckOrigin(o); errkind.Of(err) != errkind.Invalid {
			t.Errorf("origin %q: %v", o, err)
		}
	}
	line := "— witness.example " + base64.StdEncoding.EncodeToString(make([]byte, 4+64))
	cos, err := AppendSignatures(b, []string{line})
	if err != nil || !strings.HasSuffix(string(cos), "\n"+line+"\n") {
		t.Fatalf("append: %q %v", cos, err)
	}
	if n, _, err := Open(cos, note.VerifierList(v)); err != nil || len(n.UnverifiedSigs) != 1 {
		t.Fatalf("cosigned: %v", err)
	}
	if _, err := AppendSignatures(b, []string{"not a line"}); errkind.Of(err) != errkind.Invalid {
		t.Errorf("bad line: %v", err)
	}
}
