package audittest

import (
	"testing"

	"github.com/swarmscore/swarmscore/internal/audit"
)

// TestScenario: the scenario's bundle builds and verifies with the
// package's keys, and Run finds every tamper it makes caught.
func TestScenario(t *testing.T) {
	_, src := Scenario(t)
	b, err := audit.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	keys := Keys(t)
	if r := audit.Verify(b, keys); !r.Valid {
		t.Fatalf("the scenario's bundle: %v", r.Discrepancy)
	}
	if len(Tampers()) == 0 {
		t.Fatal("no tampers")
	}
	Run(t, b, keys)
}

// TestHoldScenario: the bundle with escrow holds builds, holds the three
// holds and both passports that priced two of them, verifies, and Run
// finds every tamper caught, the hold tampers included.
func TestHoldScenario(t *testing.T) {
	_, src := HoldScenario(t)
	b, err := audit.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Holds) != 3 || len(b.HoldPassports) != 2 {
		t.Fatalf("%d holds, %d passports", len(b.Holds), len(b.HoldPassports))
	}
	keys := Keys(t)
	if r := audit.Verify(b, keys); !r.Valid || r.Holds != 3 {
		t.Fatalf("the hold scenario's bundle: %+v", r)
	}
	Run(t, b, keys)
}
