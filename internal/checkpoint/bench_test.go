package checkpoint

import (
	"testing"
)

const benchAgents = 100_000

// BenchmarkCheckpoint is what the service does to publish a checkpoint of
// 100,000 agents once it has read their heads: the tree, the document, its
// HMAC signature and the canonical bytes.
func BenchmarkCheckpoint(b *testing.B) {
	leaves := testLeaves(benchAgents)
	key := testHMAC(b)
	b.ReportAllocs()
	for b.Loop() {
		tr, err := NewTree(leaves)
		if err != nil {
			b.Fatal(err)
		}
		c := Checkpoint{Number: 1, Time: testTime, Agents: tr.Size(), Root: tr.Root(), Environment: "production", Issuer: Issuer{Platform: "SwarmScore"}}
		if err := c.Sign(key); err != nil {
			b.Fatal(err)
		}
		if _, err := c.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExtends is ledger verify --checkpoint's part once the chains are
// recomputed: the tree over 100,000 current leaves against the root.
func BenchmarkExtends(b *testing.B) {
	leaves := testLeaves(benchAgents)
	tr, _ := NewTree(leaves)
	c := Checkpoint{Number: 1, Agents: tr.Size(), Root: tr.Root()}
	b.ReportAllocs()
	for b.Loop() {
		if err := Extends(c, leaves); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProve is one audit bundle's proof from a built tree.
func BenchmarkProve(b *testing.B) {
	tr, _ := NewTree(testLeaves(benchAgents))
	b.ReportAllocs()
	i := int64(0)
	for b.Loop() {
		if _, err := tr.Prove(i); err != nil {
			b.Fatal(err)
		}
		i = (i + 7919) % benchAgents
	}
}

// BenchmarkVerifyInclusion is a verifier checking one agent's proof against
// a checkpoint of 100,000 agents (a path of 17 hashes).
func BenchmarkVerifyInclusion(b *testing.B) {
	leaves := testLeaves(benchAgents)
	tr, _ := NewTree(leaves)
	const index = 54_321
	p, _ := tr.Prove(index)
	root := tr.Root()
	b.ReportAllocs()
	for b.Loop() {
		if err := VerifyInclusion(root, benchAgents, leaves[index], p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseVerify is a verifier reading an archived document and
// checking its signature.
func BenchmarkParseVerify(b *testing.B) {
	ed := testEd25519(b)
	for _, k := range []struct {
		s Signer
		v Verifier
	}{{testHMAC(b), testHMAC(b)}, {ed, ed.Verifier()}} {
		doc := marshal(b, signed(b, k.s))
		b.Run(k.s.Alg(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, err := Parse(doc)
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Verify(k.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
