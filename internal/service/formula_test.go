package service

import (
	"context"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
	"github.com/swarmscore/swarmscore/score/scoretest"
)

// TestVerifyFormulaVersions: Verify accepts the formula versions of
// Config.Formulas, each in its window, and L2 confirms a passport of
// another formula by its counts as it does a V1 one.
func TestVerifyFormulaVersions(t *testing.T) {
	a, c := newUseCases(t)
	ctx := context.Background()
	ingest(t, a, append(conduit("agent-1", "c", 80, 76, t0), ap2("agent-1", "t", 40, 38, t0)...))
	issued := c.t.Add(-time.Hour)
	counts := score.Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38}
	v1 := sign(t, a, "agent-1", counts, issued)
	r, err := scoretest.V11Test.Compute(counts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := passport.NewWith(scoretest.V11Test, "agent-1", "elsewhere.example", r, issued)
	if err != nil {
		t.Fatal(err)
	}
	v11, err := p.Sign(a.cfg.Key)
	if err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	transition := func(effective time.Time) passport.Acceptance {
		acc, err := passport.Transition(scoretest.V11Test, effective, score.V1)
		if err != nil {
			t.Fatal(err)
		}
		return acc
	}
	for _, tc := range []struct {
		name     string
		formulas passport.Acceptance
		doc      []byte
		err      string // the one error, or "" for valid
	}{
		{"V1 by default", passport.Acceptance{}, v1, ""},
		{"1.1-test unknown by default", passport.Acceptance{}, v11, passport.CodeUnsupportedFormulaVersion},
		{"1.1-test in force", transition(issued.Add(-30 * day)), v11, ""},
		{"V1 in its 90 days", transition(issued.Add(-30 * day)), v1, ""},
		{"V1 after its 90 days", transition(issued.Add(-91 * day)), v1, passport.CodeFormulaOutOfWindow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.Verifier.formulas = tc.formulas
			v, err := a.Verifier.Verify(ctx, tc.doc, "agent-1")
			if err != nil {
				t.Fatal(err)
			}
			if tc.err == "" {
				if !v.Valid || len(v.Errors) != 0 || !sameChecks(v.Checks, "ok ok ok confirmed ok") {
					t.Fatalf("%+v", v)
				}
				return
			}
			if v.Valid || v.ScoreValid || !v.SignatureValid || v.DetectedTampering || len(v.Errors) != 1 || v.Errors[0].Code != tc.err ||
				v.Checks.Result(CheckConsistency) != CheckFailed {
				t.Fatalf("want only %s: %+v", tc.err, v)
			}
		})
	}
}
