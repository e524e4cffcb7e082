// Package scoretest holds a second formula version for tests: it proves that
// issuing and verifying go through score.Formula values, not through V1
// directly. No production code imports it, so production builds implement V1
// only.
package scoretest

import (
	"math/big"

	"github.com/swarmscore/swarmscore/score"
)

// V11TestVersion is the formula_version of V11Test.
const V11TestVersion = "1.1-test"

// V11Test is V1 with each success rate squared: contribution =
// floor(max · (s/t)² · min(1, t/N)), so it gives other scores than V1 for
// any dimension with failures (80 sessions with 76 successes: 288 instead of
// 304), and the same ones otherwise. Tiers and the escrow modifier follow
// from the score as in V1.
var V11Test = func() score.Formula {
	f, err := score.Define(V11TestVersion, func(c score.Counts) (score.Result, error) {
		conduit := squared(c.ConduitTotal, c.ConduitSuccess, score.ConduitVolumeTarget, score.ConduitMax)
		ap2 := squared(c.AP2Total, c.AP2Success, score.AP2VolumeTarget, score.AP2Max)
		s := conduit + ap2
		tier := score.TierNone
		switch {
		case s >= score.EliteScore && c.ConduitTotal >= score.EliteConduit && c.AP2Total >= score.EliteAP2:
			tier = score.TierElite
		case s >= score.StandardScore && c.ConduitTotal >= score.StandardConduit && c.AP2Total >= score.StandardAP2:
			tier = score.TierStandard
		}
		return score.Result{Score: s, ConduitContribution: conduit, AP2Contribution: ap2, Escrow: score.EscrowModifier(s), Tier: tier}, nil
	})
	if err != nil {
		panic(err)
	}
	return f
}()

// squared is floor(max · s² / (t · max(t, target))), exactly.
func squared(t, s, target, max int64) int {
	if t == 0 {
		return 0
	}
	num := new(big.Int).Mul(big.NewInt(s), big.NewInt(s))
	num.Mul(num, big.NewInt(max))
	den := new(big.Int).Mul(big.NewInt(t), big.NewInt(max64(t, target)))
	return int(num.Quo(num, den).Int64())
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
