package service

import (
	"crypto/rand"
	"slices"
	"testing"

	"github.com/swarmscore/swarmscore/internal/audit"
)

func TestAuditErasedSQLite(t *testing.T)   { testAuditErased(t, sqliteAudit(t)) }
func TestAuditErasedPostgres(t *testing.T) { testAuditErased(t, postgresAudit(t)) }

// testAuditErased: after agent b's erasure, the audit bundles of its
// pseudonym and of the agents whose records named it (a: moves to and from
// b; c: a move to b) verify, their sealed records checked against the
// erasure's digests; a sealed record altered, a digest altered or the
// digests left out fail; a bundle withholding identifiers omits the
// digests and still verifies.
func testAuditErased(t *testing.T, be auditBackend) {
	u, _ := auditLedger(t, be)
	r, err := u.Rights.EraseAgent(t.Context(), OperatorCaller("op-1"), "b", "")
	if err != nil {
		t.Fatal(err)
	}
	p := r.Pseudonym
	keys := auditKeys(t)
	check := func(b *audit.Bundle, what string) *audit.Report {
		t.Helper()
		rep := audit.Verify(b, keys)
		if !rep.Valid {
			t.Fatalf("%s: %v", what, rep.Discrepancy)
		}
		if !slices.ContainsFunc(rep.Warnings, func(f audit.Finding) bool { return f.Code == audit.WarnSealed }) {
			t.Errorf("%s: no sealed warning: %+v", what, rep.Warnings)
		}
		return rep
	}
	for _, agent := range []string{p, "a", "c"} {
		b := exportBundle(t, u, agent, AuditQuery{})
		if len(b.Sealings) != 1 || b.Sealings[0].ID != r.ID {
			t.Fatalf("%s: sealings %+v", agent, b.Sealings)
		}
		check(b, agent)
	}
	// A checkpoint after the erasure anchors the pseudonym's chain; the one
	// before holds b's leaf as erased, which no proof is made from.
	makeCheckpoint(t, u, 2)
	b := exportBundle(t, u, p, AuditQuery{})
	if rep := check(b, "after checkpoint 2"); rep.Checkpoint != 2 || rep.Anchored == 0 {
		t.Errorf("anchoring: %+v", rep)
	}

	tampered := func(what, code string, edit func(b *audit.Bundle)) {
		t.Helper()
		b := exportBundle(t, u, p, AuditQuery{})
		edit(b)
		if rep := audit.Verify(b, keys); rep.Valid || rep.Discrepancy.Code != code {
			t.Errorf("%s: %+v", what, rep.Discrepancy)
		}
	}
	tampered("a sealed record altered", audit.CodeChainLink, func(b *audit.Bundle) {
		for i := range b.Chains[0].Records {
			if rec := &b.Chains[0].Records[i]; rec.SealedBy != "" {
				for k := range rec.Content {
					if rec.Content[k].Name == "started_at" {
						rec.Content[k].Str = audit.Clear("2020-01-01T00:00:00Z")
						return
					}
				}
			}
		}
		t.Fatal("no sealed report")
	})
	tampered("a record's seal removed", audit.CodeChainLink, func(b *audit.Bundle) {
		b.Chains[0].Records[0].SealedBy = ""
	})
	tampered("the digests left out", audit.CodeChainContent, func(b *audit.Bundle) { b.Sealings = nil })
	tampered("a digest not sealed", audit.CodeChainContent, func(b *audit.Bundle) {
		b.Sealings[0].Digests = append(b.Sealings[0].Digests[:len(b.Sealings[0].Digests):len(b.Sealings[0].Digests)], [32]byte{0xff})
	})

	w := exportBundle(t, u, "a", AuditQuery{})
	if _, err := w.Withhold(audit.Categories, rand.Reader); err != nil {
		t.Fatal(err)
	}
	back, err := audit.Parse(w.AppendJSON(nil))
	if err != nil {
		t.Fatal(err)
	}
	if back.Sealings != nil {
		t.Error("a withholding bundle keeps the erasure's digests")
	}
	check(back, "withheld")
}
