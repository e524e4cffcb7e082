package scoretest

import (
	"testing"

	"github.com/swarmscore/swarmscore/score"
)

// TestV11Test checks the test formula against its definition, computed
// here by plain integer arithmetic (small counts cannot overflow int64),
// and that it differs from V1 exactly where a dimension has failures.
func TestV11Test(t *testing.T) {
	if V11Test.Version() != V11TestVersion {
		t.Fatalf("version %q", V11Test.Version())
	}
	oracle := func(total, success, target, max int64) int {
		if total == 0 {
			return 0
		}
		return int(max * success * success / (total * max64(total, target)))
	}
	for total := int64(0); total <= 130; total += 13 {
		for success := int64(0); success <= total; success++ {
			c := score.Counts{ConduitTotal: total, ConduitSuccess: success, AP2Total: total / 2, AP2Success: success / 2}
			got, err := V11Test.Compute(c)
			if err != nil {
				t.Fatal(err)
			}
			conduit := oracle(c.ConduitTotal, c.ConduitSuccess, score.ConduitVolumeTarget, score.ConduitMax)
			ap2 := oracle(c.AP2Total, c.AP2Success, score.AP2VolumeTarget, score.AP2Max)
			if got.Score != conduit+ap2 || got.ConduitContribution != conduit || got.AP2Contribution != ap2 {
				t.Fatalf("%+v: got %d (%d + %d), want %d + %d", c, got.Score, got.ConduitContribution, got.AP2Contribution, conduit, ap2)
			}
			v1, err := score.V1.Compute(c)
			if err != nil {
				t.Fatal(err)
			}
			perfect := c.ConduitSuccess == c.ConduitTotal && c.AP2Success == c.AP2Total
			if perfect && got.Score != v1.Score {
				t.Fatalf("%+v: no failures, yet %d differs from V1's %d", c, got.Score, v1.Score)
			}
		}
	}
	r, err := V11Test.Compute(score.Counts{ConduitTotal: 80, ConduitSuccess: 76})
	if err != nil || r.ConduitContribution != 288 {
		t.Fatalf("80 sessions with 76 successes: %d, %v (want 288)", r.ConduitContribution, err)
	}
}
