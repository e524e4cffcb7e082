package score_test

import (
	"fmt"

	"github.com/swarmscore/swarmscore/score"
)

func ExampleCompute() {
	r, err := score.Compute(score.Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38})
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Score, r.Tier, r.ConduitContribution, r.AP2Contribution, r.Escrow)
	for _, g := range r.Gaps() {
		fmt.Printf("%s needs %s >= %d (has %d)\n", g.Tier, g.Requirement, g.Required, g.Actual)
	}
	// Output:
	// 760 STANDARD 304 456 0.392
	// ELITE needs score >= 850 (has 760)
	// ELITE needs conduit_sessions_90d >= 100 (has 80)
	// ELITE needs ap2_sessions_90d >= 50 (has 40)
}

func ExampleHoldCents() {
	hold, released, _ := score.HoldCents(100000, 700) // $1,000.00 at score 700
	fmt.Println(hold, released)
	// Output: 44000 56000
}
