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
