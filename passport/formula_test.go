package passport

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/score"
	"github.com/swarmscore/swarmscore/score/scoretest"
)

// signedWith issues and signs the example counts with formula f at computedAt.
func signedWith(t testing.TB, f score.Formula, computedAt time.Time) []byte {
	t.Helper()
	r, err := f.Compute(testExample)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewWith(f, "agent-7", "swarmsync.ai", r, computedAt)
	if err != nil {
		t.Fatal(err)
	}
	if p.FormulaVersion != f.Version() {
		t.Fatalf("New gave formula_version %q, want %q", p.FormulaVersion, f.Version())
	}
	doc, err := p.Sign(testKey(t))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func mustAcceptance(t testing.TB, ws ...FormulaWindow) Acceptance {
	t.Helper()
	a, err := NewAcceptance(ws...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestIssueWithAnotherFormula(t *testing.T) {
	doc := signedWith(t, scoretest.V11Test, testComputedAt)
	for _, want := range []string{`"formula_version":"1.1-test"`, `"value":721`, `"conduit_contribution":288`, `"actual_contribution":288`} {
		if !strings.Contains(string(doc), want) {
			t.Fatalf("document lacks %s:\n%s", want, doc)
		}
	}
	keys := []Key{testKey(t)}

	// Verify implements V1 only: genuine, but nothing can be recomputed.
	v, _ := verifyBoth(t, doc, keys, testComputedAt)
	if v.Valid || !v.SignatureValid || v.ScoreValid || !hasCode(v.Errors, CodeUnsupportedFormulaVersion) || len(v.Errors) != 1 {
		t.Fatalf("V1 verifier: %+v", v)
	}
	// A verifier handed the formula recomputes with it, on the slow path.
	acc := mustAcceptance(t, FormulaWindow{Formula: score.V1}, FormulaWindow{Formula: scoretest.V11Test})
	v, fast := verifyBothWith(t, doc, keys, testComputedAt, acc)
	if !v.Valid || fast || len(v.Errors) != 0 || len(v.Warnings) != 0 {
		t.Fatalf("1.1-test verifier (fast %v): %+v", fast, v)
	}
	if v.Passport.Score.Value != 721 || v.Passport.FormulaVersion != scoretest.V11TestVersion {
		t.Fatalf("passport read as %+v", v.Passport)
	}
	// ... and with it, not V1: V1's numbers under the 1.1-test label are
	// mismatches.
	relabelled := decodeTree(t, signedExample(t))
	relabelled["formula_version"] = scoretest.V11TestVersion
	v, _ = verifyBothWith(t, resign(t, relabelled), keys, testComputedAt, acc)
	if v.Valid || !v.SignatureValid || !hasCode(v.Errors, CodeScoreMismatch) || !hasCode(v.Errors, CodeContributionMismatch) {
		t.Fatalf("V1 numbers labelled 1.1-test: %+v", v.Errors)
	}
	// V1 passports still take the fast path under the same acceptance.
	if v, fast := verifyBothWith(t, signedExample(t), keys, testComputedAt, acc); !v.Valid || !fast {
		t.Fatalf("V1 passport (fast %v): %+v", fast, v.Errors)
	}
}

func TestSignRefusesRelabelledFormula(t *testing.T) {
	r, _ := scoretest.V11Test.Compute(testExample)
	p, err := NewWith(scoretest.V11Test, "agent-7", "swarmsync.ai", r, testComputedAt)
	if err != nil {
		t.Fatal(err)
	}
	p.FormulaVersion = score.FormulaVersion // V1's label on 1.1-test numbers
	if _, err := p.Sign(testKey(t)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), CodeUnsupportedFormulaVersion) {
		t.Fatalf("Sign = %v", err)
	}
	// NewWith checks the result against the formula that claims it.
	v1, _ := score.Compute(testExample)
	if _, err := New("agent-7", "swarmsync.ai", r, testComputedAt); !errors.Is(err, ErrInvalid) {
		t.Fatalf("New (V1) of a 1.1-test result = %v", err)
	}
	if _, err := NewWith(scoretest.V11Test, "agent-7", "swarmsync.ai", v1, testComputedAt); !errors.Is(err, ErrInvalid) {
		t.Fatalf("NewWith(1.1-test) of a V1 result = %v", err)
	}
	if _, err := NewWith(nil, "agent-7", "swarmsync.ai", v1, testComputedAt); !errors.Is(err, ErrInvalid) {
		t.Fatalf("NewWith(nil) = %v", err)
	}
}

// TestTransitionWindow is §10.3 stage 5: the previous version (V1) is
// accepted for 90 days after the current one takes effect, judged by
// computed_at (ERRATA E40).
func TestTransitionWindow(t *testing.T) {
	keys := []Key{testKey(t)}
	v1doc := signedExample(t) // computed at testComputedAt
	day := 24 * time.Hour
	for _, tc := range []struct {
		name      string
		effective time.Time
		wantOK    bool
	}{
		{"before the current version", testComputedAt.Add(day), true},
		{"30 days in", testComputedAt.Add(-30 * day), true},
		{"last second of the window", testComputedAt.Add(-TransitionPeriod + time.Second), true},
		{"window's end", testComputedAt.Add(-TransitionPeriod), false},
		{"91 days in", testComputedAt.Add(-91 * day), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acc, err := Transition(scoretest.V11Test, tc.effective, score.V1)
			if err != nil {
				t.Fatal(err)
			}
			v, fast := verifyBothWith(t, v1doc, keys, testComputedAt, acc)
			if !fast {
				t.Error("a V1 passport left the fast path")
			}
			if v.Valid != tc.wantOK || v.ScoreValid != tc.wantOK || !v.SignatureValid {
				t.Fatalf("valid %v score_valid %v, want %v: %+v", v.Valid, v.ScoreValid, tc.wantOK, v.Errors)
			}
			if !tc.wantOK {
				if len(v.Errors) != 1 || v.Errors[0].Code != CodeFormulaOutOfWindow || v.Checks.Consistency != CheckFailed || v.DetectedTampering {
					t.Fatalf("errors %+v, checks %+v", v.Errors, v.Checks)
				}
				if !strings.Contains(v.Errors[0].Message, `"1.0"`) || !strings.Contains(v.Errors[0].Message, "2026-03-17T14:30:00Z") {
					t.Fatalf("message %q", v.Errors[0].Message)
				}
			}
		})
	}

	// The current version is accepted from its effective date on.
	effective := testComputedAt.Add(day)
	acc, _ := Transition(scoretest.V11Test, effective, score.V1)
	early := signedWith(t, scoretest.V11Test, testComputedAt)
	if v, _ := verifyBothWith(t, early, keys, testComputedAt, acc); v.Valid || !hasCode(v.Errors, CodeFormulaOutOfWindow) {
		t.Fatalf("1.1-test passport computed before its effective date: %+v", v.Errors)
	}
	if v, _ := verifyBothWith(t, signedWith(t, scoretest.V11Test, effective), keys, effective, acc); !v.Valid {
		t.Fatalf("1.1-test passport computed at its effective date: %+v", v.Errors)
	}

	// Without a previous version, V1 is simply unknown.
	only, _ := Transition(scoretest.V11Test, effective, nil)
	if v, _ := verifyBothWith(t, v1doc, keys, testComputedAt, only); v.Valid || !hasCode(v.Errors, CodeUnsupportedFormulaVersion) {
		t.Fatalf("V1 under a 1.1-test-only acceptance: %+v", v.Errors)
	}
	// An unknown version is unsupported under any acceptance.
	other := decodeTree(t, v1doc)
	other["formula_version"] = "2.0"
	if v, _ := verifyBothWith(t, resign(t, other), keys, testComputedAt, acc); v.Valid || len(v.Errors) != 1 || v.Errors[0].Code != CodeUnsupportedFormulaVersion {
		t.Fatalf("formula 2.0: %+v", v.Errors)
	}
}

func TestAcceptanceConstruction(t *testing.T) {
	at := testComputedAt
	for name, ws := range map[string][]FormulaWindow{
		"no formula":    {{From: at}},
		"twice":         {{Formula: score.V1}, {Formula: score.V1, From: at}},
		"empty window":  {{Formula: score.V1, From: at, Until: at}},
		"inverted":      {{Formula: score.V1, From: at, Until: at.Add(-time.Second)}},
		"twice, mixed":  {{Formula: scoretest.V11Test}, {Formula: score.V1}, {Formula: scoretest.V11Test}},
		"nil among two": {{Formula: score.V1}, {}},
	} {
		if _, err := NewAcceptance(ws...); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: NewAcceptance = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := Transition(score.V1, at, score.V1); !errors.Is(err, ErrInvalid) {
		t.Errorf("Transition from V1 to V1 = %v", err)
	}
	zero, err := NewAcceptance()
	if err != nil || zero.String() != "1.0" {
		t.Fatalf("NewAcceptance() = %v, %v", zero, err)
	}
	acc, _ := Transition(scoretest.V11Test, at, score.V1)
	if got, want := acc.String(), "1.1-test@2026-03-17T14:30:00Z..,1.0@..2026-06-15T14:30:00Z"; got != want {
		t.Fatalf("String = %s, want %s", got, want)
	}
	// Windows is a copy.
	ws := acc.Windows()
	ws[0].Formula = score.V1
	if acc.Windows()[0].Formula != scoretest.V11Test {
		t.Fatal("Windows shares the acceptance's slice")
	}
	// The zero Acceptance is Verify.
	doc := signedExample(t)
	if a, b := mustMarshal(t, Acceptance{}.Verify(doc, []Key{testKey(t)}, at)), mustMarshal(t, Verify(doc, []Key{testKey(t)}, at)); string(a) != string(b) {
		t.Fatalf("Acceptance{}.Verify %s, Verify %s", a, b)
	}
}
