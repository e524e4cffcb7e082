package passport

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/score"
	"github.com/swarmscore/swarmscore/score/scoretest"
)

// The target is Verify, of a document in any member order, within 3× a bare
// HMAC-SHA256 over the same canonical bytes: compare BenchmarkVerify and
// BenchmarkVerifySpecOrder with BenchmarkHMACBare, run by run
// (docs/BENCHMARKS.md has the command, the numbers and the ratios).

func BenchmarkSign(b *testing.B) {
	p := newPassport(b, testExample)
	k := testKey(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Sign(k); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	doc := signedExample(b)
	keys := []Key{testKey(b)}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if v := Verify(doc, keys, testComputedAt); !v.Valid {
			b.Fatal(v.Errors)
		}
	}
}

// BenchmarkVerifyTransition is Verify of a V1 passport during a §10.3
// transition: the acceptance lists a new version and V1 with its window.
func BenchmarkVerifyTransition(b *testing.B) {
	doc := signedExample(b)
	keys := []Key{testKey(b)}
	acc, err := Transition(scoretest.V11Test, testComputedAt.Add(-24*time.Hour), score.V1)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if v := acc.Verify(doc, keys, testComputedAt); !v.Valid {
			b.Fatal(v.Errors)
		}
	}
}

// BenchmarkVerifySpecOrder is Verify of a document in §6.1 member order (as
// json.Marshal writes a Passport, and as this package issued passports
// before it published the canonical form).
func BenchmarkVerifySpecOrder(b *testing.B) {
	p, err := Parse(signedExample(b))
	if err != nil {
		b.Fatal(err)
	}
	doc := mustMarshal(b, p)
	keys := []Key{testKey(b)}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if v := Verify(doc, keys, testComputedAt); !v.Valid {
			b.Fatal(v.Errors)
		}
	}
}

// BenchmarkHMACBare is the floor: HMAC-SHA256 over the canonical message,
// keyed afresh each time as a minimal verifier would.
func BenchmarkHMACBare(b *testing.B) {
	msg := naiveMessage(b, decodeTree(b, signedExample(b)))
	key := []byte(testSecret)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	var sum [32]byte
	for b.Loop() {
		m := hmac.New(sha256.New, key)
		m.Write(msg)
		m.Sum(sum[:0])
	}
}

// The Ed25519 target (issue 13): signing and verifying a passport cost
// little more than ed25519.Sign and ed25519.Verify over the same canonical
// bytes: compare BenchmarkSignEd25519 with BenchmarkEd25519SignBare and
// BenchmarkVerifyEd25519 with BenchmarkEd25519VerifyBare, run by run.

func BenchmarkSignEd25519(b *testing.B) {
	p := newPassport(b, testExample)
	k := testEdKey(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Sign(k); err != nil {
			b.Fatal(err)
		}
	}
}

// edSigned is an Ed25519 passport, its canonical message and its raw
// signature.
func edSigned(b *testing.B) (doc, msg, sig []byte) {
	doc, err := newPassport(b, testExample).Sign(testEdKey(b))
	if err != nil {
		b.Fatal(err)
	}
	tree := decodeTree(b, doc)
	sig, err = hex.DecodeString(tree["issuer"].(map[string]any)["signature"].(string))
	if err != nil {
		b.Fatal(err)
	}
	return doc, naiveMessage(b, tree), sig
}

// BenchmarkEd25519SignBare is ed25519.Sign over the canonical message that
// Sign signs (with issuer.kid and issuer.alg).
func BenchmarkEd25519SignBare(b *testing.B) {
	_, msg, _ := edSigned(b)
	priv := ed25519.NewKeyFromSeed(mustHexB(b, testEdSeed))
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		ed25519.Sign(priv, msg)
	}
}

func BenchmarkVerifyEd25519(b *testing.B) {
	doc, _, _ := edSigned(b)
	keys := []Key{testEdPublic(b)}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if v := Verify(doc, keys, testComputedAt); !v.Valid {
			b.Fatal(v.Errors)
		}
	}
}

// BenchmarkEd25519VerifyBare is ed25519.Verify of the same passport's
// signature over its canonical message.
func BenchmarkEd25519VerifyBare(b *testing.B) {
	_, msg, sig := edSigned(b)
	pub := testEdKey(b).Public()
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("not verified")
		}
	}
}

// BenchmarkVerifyKeyID is Verify of an HMAC passport naming its key in a
// ring of three (the server's case after two rotations).
func BenchmarkVerifyKeyID(b *testing.B) {
	doc, err := newPassport(b, testExample).Sign(testIDKey(b))
	if err != nil {
		b.Fatal(err)
	}
	other, _ := NewKey([]byte("another-signing-key-0123456789abcdef"))
	other, _ = other.WithID("hs-old")
	keys := []Key{testEdPublic(b), other, testIDKey(b)}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if v := Verify(doc, keys, testComputedAt); !v.Valid {
			b.Fatal(v.Errors)
		}
	}
}

func mustHexB(b *testing.B, s string) []byte {
	out, err := hex.DecodeString(s)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkCanonicalize is the RFC 8785 step alone (jcs.Transform on the
// received bytes minus the signature), the largest share of verifySlow.
func BenchmarkCanonicalize(b *testing.B) {
	doc := signedExample(b)
	var ps parser
	ps.parse(doc)
	buf := make([]byte, 0, len(doc))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canonicalize(doc, &ps.sig, &buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse is the token walk alone.
func BenchmarkParse(b *testing.B) {
	doc := signedExample(b)
	b.ReportAllocs()
	for b.Loop() {
		var ps parser
		ps.parse(doc)
		if ps.fatal != nil {
			b.Fatal(ps.fatal)
		}
	}
}

// BenchmarkVerifySlow is Verify's slow path (token walk, then
// canonicalization), which documents with unknown members take.
func BenchmarkVerifySlow(b *testing.B) {
	doc := signedExample(b)
	keys := []Key{testKey(b)}
	b.ReportAllocs()
	for b.Loop() {
		if v := verifySlow(doc, keys, testComputedAt, Acceptance{}); !v.Valid {
			b.Fatal(v.Errors)
		}
	}
}

// BenchmarkSignParts measures the steps of Sign, to see what bounds it.
func BenchmarkSignParts(b *testing.B) {
	p := newPassport(b, testExample)
	k := testKey(b)
	doc, err := p.Sign(k)
	if err != nil {
		b.Fatal(err)
	}
	msg, _ := appendMessage(nil, p)
	buf := make([]byte, 0, 2*len(doc))
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := p.check(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("message", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = appendMessage(buf[:0], p)
		}
	})
	b.Run("mac", func(b *testing.B) {
		b.ReportAllocs()
		var sum [32]byte
		for b.Loop() {
			k.mac(sum[:0], msg)
		}
	})
}

// BenchmarkVerifyParts measures the steps of Verify's fast path.
func BenchmarkVerifyParts(b *testing.B) {
	doc := signedExample(b)
	keys := []Key{testKey(b)}
	d := fastDoc{doc: doc}
	if !d.scan() {
		b.Fatal("not scanned")
	}
	msg := d.message(nil)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d := (fastDoc{doc: doc}); !d.scan() {
				b.Fatal("not scanned")
			}
		}
	})
	p, err := Parse(doc)
	if err != nil {
		b.Fatal(err)
	}
	spec := mustMarshal(b, p)
	b.Run("scanSpecOrder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d := (fastDoc{doc: spec}); !d.scan() {
				b.Fatal("not scanned")
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		var p Passport
		var gaps [maxGaps]score.Gap
		for b.Loop() {
			p.QualificationGaps = gaps[:]
			if _, ok := d.passport(&p); !ok {
				b.Fatal("not read")
			}
		}
	})
	b.Run("message", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 2*len(doc))
		for b.Loop() {
			buf = d.message(buf[:0])
		}
	})
	b.Run("mac", func(b *testing.B) {
		b.ReportAllocs()
		var sum [32]byte
		for b.Loop() {
			keys[0].mac(sum[:0], msg)
		}
	})
	b.Run("allocs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := new(fastResult)
			r.v.Document = doc
			resultSink = r
		}
	})
}

// resultSink makes the allocs step allocate as Verify does.
var resultSink *fastResult

// BenchmarkAgainstFloor measures each path against its floor in
// alternating blocks, so that both see the same load on a shared machine
// (separate benchmarks seconds apart do not): per block pair it takes the
// ratio path/floor, and reports the median ratio ("x-floor") and the median
// ns per operation of each ("path-ns", "floor-ns"). One b.N iteration is
// one pair of blocks.
func BenchmarkAgainstFloor(b *testing.B) {
	doc := signedExample(b)
	hsMsg := naiveMessage(b, decodeTree(b, doc))
	spec := mustMarshal(b, mustParse(b, doc))
	keys := []Key{testKey(b)}
	p := newPassport(b, testExample)
	edDoc, edMsg, edSig := edSigned(b)
	edKeys := []Key{testEdPublic(b)}
	priv := ed25519.NewKeyFromSeed(mustHexB(b, testEdSeed))
	pub := priv.Public().(ed25519.PublicKey)
	hmacBare := func() {
		var sum [32]byte
		m := hmac.New(sha256.New, []byte(testSecret))
		m.Write(hsMsg)
		m.Sum(sum[:0])
	}
	verify := func(d []byte, keys []Key) func() {
		return func() {
			if v := Verify(d, keys, testComputedAt); !v.Valid {
				b.Fatal(v.Errors)
			}
		}
	}
	sign := func(k Key) func() {
		return func() {
			if _, err := p.Sign(k); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name        string
		block       int
		path, floor func()
	}{
		{"Verify/HMAC", 100, verify(doc, keys), hmacBare},
		{"VerifySpecOrder/HMAC", 100, verify(spec, keys), hmacBare},
		{"Sign/HMAC", 100, sign(testKey(b)), hmacBare},
		{"SignEd25519/ed25519.Sign", 10, sign(testEdKey(b)), func() { ed25519.Sign(priv, edMsg) }},
		{"VerifyEd25519/ed25519.Verify", 10, verify(edDoc, edKeys), func() {
			if !ed25519.Verify(pub, edMsg, edSig) {
				b.Fatal("not verified")
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var ratios, paths, floors []float64
			timed := func(f func()) float64 {
				start := time.Now()
				for range c.block {
					f()
				}
				return float64(time.Since(start).Nanoseconds()) / float64(c.block)
			}
			for b.Loop() {
				pt, ft := timed(c.path), timed(c.floor)
				ratios, paths, floors = append(ratios, pt/ft), append(paths, pt), append(floors, ft)
			}
			b.ReportMetric(median(ratios), "x-floor")
			b.ReportMetric(median(paths), "path-ns")
			b.ReportMetric(median(floors), "floor-ns")
		})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func mustParse(b *testing.B, doc []byte) *Passport {
	p, err := Parse(doc)
	if err != nil {
		b.Fatal(err)
	}
	return p
}
