package passport

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"testing"

	"github.com/swarmscore/swarmscore/score"
)

// The issue aims at sign and verify within 1.5× a bare HMAC-SHA256 over the
// same canonical bytes; compare BenchmarkSign and BenchmarkVerify with
// BenchmarkHMACBare (docs/BENCHMARKS.md has the numbers and the ratio).

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

// BenchmarkVerifySpecOrder is Verify on the fast path for a document in §6.1
// member order (as json.Marshal writes a Passport, and as this package issued
// passports before it published the canonical form): the general scan and
// the message reassembled in a buffer.
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

// BenchmarkCanonicalize is the RFC 8785 step alone (jcs.Transform on the
// received bytes minus the signature), the largest share of Verify.
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

// BenchmarkVerifySlow is Verify on its slow path (token walk, then
// canonicalization), which documents with unknown members take.
func BenchmarkVerifySlow(b *testing.B) {
	doc := signedExample(b)
	keys := []Key{testKey(b)}
	slowOnly = true
	defer func() { slowOnly = false }()
	b.ReportAllocs()
	for b.Loop() {
		if v := Verify(doc, keys, testComputedAt); !v.Valid {
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
	var ns numbers
	ns.fill(p)
	msg, _ := appendMessage(nil, p, &ns)
	buf := make([]byte, 0, 2*len(doc))
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := p.check(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("numbers", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ns.fill(p)
		}
	})
	b.Run("message", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = appendMessage(buf[:0], p, &ns)
		}
	})
	b.Run("mac", func(b *testing.B) {
		b.ReportAllocs()
		var sum [32]byte
		for b.Loop() {
			k.mac(sum[:0], msg)
		}
	})
	// The allocation and copy of the returned document alone, as Sign
	// makes it: what allocating costs on this machine.
	b.Run("document", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			docSink = bytes.Join([][]byte{doc[:500], doc[500:], doc[:64]}, nil)
		}
	})
}

// docSink makes the document step allocate as Sign does.
var docSink []byte

// BenchmarkVerifyGeneral is Verify on the general fast path, which an
// issued document takes only when the issued path is skipped.
func BenchmarkVerifyGeneral(b *testing.B) {
	doc := signedExample(b)
	keys := []Key{testKey(b)}
	noIssuedPath = true
	defer func() { noIssuedPath = false }()
	b.ReportAllocs()
	for b.Loop() {
		if v := Verify(doc, keys, testComputedAt); !v.Valid {
			b.Fatal(v.Errors)
		}
	}
}

// BenchmarkVerifyParts measures the steps of Verify's issued path, and of
// the general fast path's scan.
func BenchmarkVerifyParts(b *testing.B) {
	doc := signedExample(b)
	keys := []Key{testKey(b)}
	var d issued
	c := cursor{doc: doc}
	if !d.read(&c) {
		b.Fatal("the issued path does not read the document")
	}
	msg := append(append([]byte(nil), doc[:d.sigStart]...), doc[d.sigEnd:d.msgEnd]...)
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d = issued{}
			if c := (cursor{doc: doc}); !d.read(&c) {
				b.Fatal("not read")
			}
		}
	})
	b.Run("fill", func(b *testing.B) {
		b.ReportAllocs()
		var p Passport
		var gaps [maxGaps]score.Gap
		for b.Loop() {
			p.QualificationGaps = gaps[:0]
			if !d.fill(&c, &p) {
				b.Fatal("not consistent")
			}
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
	b.Run("generalScan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			g := fastDoc{doc: doc}
			if !g.scan() {
				b.Fatal("not scanned")
			}
		}
	})
}

// resultSink makes the allocs step allocate as Verify does.
var resultSink *fastResult
