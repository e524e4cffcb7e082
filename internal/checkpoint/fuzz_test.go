package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// FuzzParse: Parse never panics, refuses with errkind.ErrInvalid, and what
// it accepts is one reading of the document: its RFC 8785 form (computed by
// gowebpki/jcs from the input bytes) is exactly what MarshalJSON writes for
// the parsed checkpoint.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"checkpoint-hs256.json", "checkpoint-eddsa.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		b = bytes.TrimSpace(b)
		var pretty bytes.Buffer
		_ = json.Indent(&pretty, b, "", " ")
		f.Add(b)
		f.Add(pretty.Bytes())
		f.Add(bytes.Replace(b, []byte(`"agents":5`), []byte(`"agents":5.0`), 1))
		f.Add(bytes.Replace(b, []byte(`"SwarmScore"`), []byte(`"Sw\u0061rm\"<\\>"`), 1))
		f.Add(bytes.Replace(b, []byte(`"SwarmScore"`), []byte(`"\ud83d\ude00"`), 1))
		f.Add(b[:len(b)/2])
	}
	for _, s := range []string{"", "{}", "[]", "null", `{"agents":1,"agents":2}`, `{"issuer":{"signature":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if !errors.Is(err, errkind.ErrInvalid) {
				t.Fatalf("error of another kind: %v", err)
			}
			return
		}
		doc, err := c.MarshalJSON()
		if err != nil {
			t.Fatalf("accepted %q but cannot write it: %v", data, err)
		}
		canonical, err := jcs.Transform(data)
		if err != nil {
			t.Fatalf("accepted %q, which is not JSON to RFC 8785: %v", data, err)
		}
		if !bytes.Equal(doc, canonical) {
			t.Fatalf("accepted %q\nwrites  %s\nRFC 8785 %s", data, doc, canonical)
		}
		again, err := Parse(doc)
		if err != nil || fmt.Sprint(again) != fmt.Sprint(c) {
			t.Fatalf("round trip of %s: %+v, %v", doc, again, err)
		}
		// A document that verifies is one the test key signed: the
		// golden one, or a re-spelling of it.
		if c.Verify(testHMAC(t)) == nil && c.Root != mustGoldenRoot(t) {
			t.Fatalf("a forged root verifies: %s", doc)
		}
	})
}

func mustGoldenRoot(t *testing.T) Hash {
	tr, err := NewTree(testLeaves(5))
	if err != nil {
		t.Fatal(err)
	}
	return tr.Root()
}

// FuzzParseProof: as FuzzParse, for proofs.
func FuzzParseProof(f *testing.F) {
	tr, _ := NewTree(testLeaves(11))
	for _, i := range []int64{0, 6, 10} {
		p, _ := tr.Prove(i)
		b, _ := p.MarshalJSON()
		f.Add(b)
	}
	for _, s := range []string{`{"leaf_index":0,"path":[],"tree_size":1}`, `{"leaf_index":1e0,"path":[],"tree_size":2}`, `{"path":[[]]}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProof(data)
		if err != nil {
			if !errors.Is(err, errkind.ErrInvalid) {
				t.Fatalf("error of another kind: %v", err)
			}
			return
		}
		doc, err := p.MarshalJSON()
		if err != nil {
			t.Fatalf("accepted %q but cannot write it: %v", data, err)
		}
		canonical, err := jcs.Transform(data)
		if err != nil || !bytes.Equal(doc, canonical) {
			t.Fatalf("accepted %q\nwrites  %s\nRFC 8785 %s (%v)", data, doc, canonical, err)
		}
	})
}

// FuzzVerifyInclusion: in a tree of up to 1024 leaves, every leaf's proof
// verifies, and it fails for another index, another size, another leaf, a
// path with a bit flipped and a path one hash short or long. Arbitrary
// proofs never panic.
func FuzzVerifyInclusion(f *testing.F) {
	f.Add(uint16(5), uint16(0), uint16(1), uint16(4), uint16(0), uint16(1))
	f.Add(uint16(1), uint16(0), uint16(0), uint16(2), uint16(0), uint16(0))
	f.Add(uint16(1023), uint16(1000), uint16(7), uint16(1024), uint16(77), uint16(9))
	f.Fuzz(func(t *testing.T, n, m, m2, n2, bit, other uint16) {
		size := int64(n%1024) + 1
		index := int64(m) % size
		leaves := testLeaves(int(size))
		tr, err := NewTree(leaves)
		if err != nil {
			t.Fatal(err)
		}
		root := tr.Root()
		p, err := tr.Prove(index)
		if err != nil {
			t.Fatal(err)
		}
		leaf := leaves[index]
		if err := VerifyInclusion(root, size, leaf, p); err != nil {
			t.Fatalf("leaf %d of %d: %v", index, size, err)
		}
		mustFail := func(what string, l Leaf, q Proof) {
			t.Helper()
			if err := VerifyInclusion(root, size, l, q); !errors.Is(err, ErrProof) {
				t.Fatalf("leaf %d of %d, %s: %v", index, size, what, err)
			}
		}
		if i := int64(m2); i != index {
			mustFail(fmt.Sprintf("at index %d", i), leaf, Proof{Index: i, Size: p.Size, Path: p.Path})
		}
		if s := int64(n2); s != size {
			mustFail(fmt.Sprintf("as size %d", s), leaf, Proof{Index: index, Size: s, Path: p.Path})
		}
		if o := int64(other) % size; o != index {
			mustFail(fmt.Sprintf("for leaf %d", o), leaves[o], p)
		}
		changed := leaf
		changed.Seq += int64(other) + 1
		mustFail("with another seq", changed, p)
		if len(p.Path) > 0 {
			bad := append([]Hash(nil), p.Path...)
			b := int(bit) % (len(bad) * HashSize * 8)
			bad[b/(HashSize*8)][b/8%HashSize] ^= 1 << (b % 8)
			mustFail("with a bit flipped", leaf, Proof{Index: index, Size: size, Path: bad})
			mustFail("one hash short", leaf, Proof{Index: index, Size: size, Path: p.Path[:len(p.Path)-1]})
		}
		mustFail("one hash long", leaf, Proof{Index: index, Size: size, Path: append(append([]Hash(nil), p.Path...), root)})
		// Arbitrary numbers against the same path: no panic, no success
		// but the true one.
		if got, err := rootFromPath(int64(m2)-1, int64(n2)-1, Hash{}, p.Path); err == nil && got == root {
			t.Fatalf("a zero leaf hash reaches the root")
		}
	})
}

// FuzzCanonical: for any platform, number, count and time Sign accepts,
// the signed message and the document are the RFC 8785 form gowebpki/jcs
// gives, and the document reads back and verifies; what Sign refuses is
// errkind.ErrInvalid.
func FuzzCanonical(f *testing.F) {
	f.Add("SwarmScore", int64(17), int64(5), int64(1777636800), "production")
	f.Add("quote \" backslash \\ <&> \u2028 é 😀", int64(1), int64(0), int64(0), "a")
	f.Add("\x00\x1f", int64(MaxInteger), int64(MaxInteger), int64(253402300799), "x.y:z-_")
	f.Fuzz(func(t *testing.T, platform string, number, agents, unix int64, env string) {
		c := Checkpoint{Number: number, Agents: agents, Time: time.Unix(unix, 0), Environment: env, Issuer: Issuer{Platform: platform}}
		if err := c.Sign(testHMAC(t)); err != nil {
			if !errors.Is(err, errkind.ErrInvalid) {
				t.Fatalf("error of another kind: %v", err)
			}
			return
		}
		if msg, _ := c.SignedMessage(); !bytes.Equal(msg, oracle(t, &c, false)) {
			t.Fatalf("message %s\nRFC 8785 %s", msg, oracle(t, &c, false))
		}
		doc := marshal(t, c)
		if want := oracle(t, &c, true); !bytes.Equal(doc, want) {
			t.Fatalf("document %s\nRFC 8785 %s", doc, want)
		}
		back, err := Parse(doc)
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if err := back.Verify(testHMAC(t)); err != nil || back.Issuer.Platform != platform || !back.Time.Equal(c.Time) {
			t.Fatalf("%s reads back as %+v: %v", doc, back, err)
		}
	})
}
