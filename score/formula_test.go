package score_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/score"
	"github.com/swarmscore/swarmscore/score/scoretest"
)

func TestV1IsCompute(t *testing.T) {
	c := score.Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38}
	want, _ := score.Compute(c)
	got, err := score.V1.Compute(c)
	if err != nil || got != want {
		t.Fatalf("V1.Compute = %+v, %v; want %+v", got, err, want)
	}
	if score.V1.Version() != score.FormulaVersion || got.FormulaVersion() != "1.0" {
		t.Fatalf("V1 version %q, result version %q", score.V1.Version(), got.FormulaVersion())
	}
	if _, err := score.V1.Compute(score.Counts{ConduitTotal: 1, ConduitSuccess: 2}); !errors.Is(err, score.ErrInvalid) {
		t.Fatalf("V1.Compute of impossible counts: %v", err)
	}
}

func TestDefinedFormula(t *testing.T) {
	f := scoretest.V11Test
	c := score.Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38}
	r, err := f.Compute(c)
	if err != nil {
		t.Fatal(err)
	}
	// 400·0.95²·0.8 = 288.8, 600·0.95²·0.8 = 433.2.
	if r.ConduitContribution != 288 || r.AP2Contribution != 433 || r.Score != 721 || r.Tier != score.TierStandard || r.Escrow != score.EscrowModifier(721) {
		t.Fatalf("V11Test = %+v", r)
	}
	if r.Counts != c || f.Version() != scoretest.V11TestVersion {
		t.Fatalf("result counts %+v, version %q", r.Counts, f.Version())
	}
	v1, _ := score.Compute(c)
	if r == v1 {
		t.Fatal("the test formula gives V1's result")
	}
	// Without failures the rate is 1 either way.
	perfect := score.Counts{ConduitTotal: 100, ConduitSuccess: 100, AP2Total: 50, AP2Success: 50}
	a, _ := f.Compute(perfect)
	b, _ := score.Compute(perfect)
	if a != b {
		t.Fatalf("perfect counts: %+v vs %+v", a, b)
	}
	if _, err := f.Compute(score.Counts{AP2Total: -1}); !errors.Is(err, score.ErrInvalid) {
		t.Fatalf("impossible counts: %v", err)
	}
}

// A Result has nine scalar fields, as many as amd64 and arm64 return in
// registers: Compute returns it without touching memory. A tenth (say, the
// formula that made it) made Compute a third slower (docs/BENCHMARKS.md).
func TestResultFitsInRegisters(t *testing.T) {
	var count func(reflect.Type) int
	count = func(typ reflect.Type) int {
		if typ.Kind() != reflect.Struct {
			return 1
		}
		n := 0
		for i := range typ.NumField() {
			n += count(typ.Field(i).Type)
		}
		return n
	}
	if n := count(reflect.TypeFor[score.Result]()); n != 9 {
		t.Fatalf("Result has %d scalar fields, want 9", n)
	}
}

func TestDefineRefuses(t *testing.T) {
	ok := func(score.Counts) (score.Result, error) { return score.Result{}, nil }
	for _, tc := range []struct {
		version string
		compute func(score.Counts) (score.Result, error)
	}{
		{"1.0", ok},                   // V1 is frozen
		{"", ok},                      // empty
		{"1.1 beta", ok},              // space
		{`1.1"`, ok},                  // would need escaping in JSON
		{strings.Repeat("9", 33), ok}, // too long
		{"1.1", nil},                  // no function
	} {
		if f, err := score.Define(tc.version, tc.compute); !errors.Is(err, score.ErrInvalid) {
			t.Errorf("Define(%q) = %v, %v; want ErrInvalid", tc.version, f, err)
		}
	}
}

func TestFormulasLookup(t *testing.T) {
	b := score.Builtin()
	if f, ok := b.Lookup("1.0"); !ok || f != score.V1 {
		t.Fatalf("Builtin().Lookup(1.0) = %v, %v", f, ok)
	}
	if _, ok := b.Lookup(scoretest.V11TestVersion); ok {
		t.Fatal("the built-in set knows the test formula")
	}
	with := append(b, scoretest.V11Test)
	if f, ok := with.Lookup(scoretest.V11TestVersion); !ok || f != scoretest.V11Test {
		t.Fatalf("Lookup in an extended set = %v, %v", f, ok)
	}
	if got := strings.Join(with.Versions(), ","); got != "1.0,1.1-test" {
		t.Fatalf("Versions = %s", got)
	}
	// Each caller gets its own set: extending one leaks into no other.
	if _, ok := score.Builtin().Lookup(scoretest.V11TestVersion); ok {
		t.Fatal("extending a set changed Builtin")
	}
}
