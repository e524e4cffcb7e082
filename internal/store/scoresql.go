package store

import (
	"fmt"
	"strings"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// ScoreSQL returns SQL expressions (valid in SQLite and PostgreSQL) computing
// the §3 formula from four integer count expressions, for set-based
// recomputation. They use only integer arithmetic (integer division of
// non-negative values is a floor), exactly as score.Compute does; the
// conformance suite checks every cached row against score.Compute.
func ScoreSQL(conduitTotal, conduitSuccess, ap2Total, ap2Success string) (conduit, ap2, total, tier, modifierBP string) {
	contribution := func(t, s string, target, max int) string {
		return fmt.Sprintf("(CASE WHEN %[1]s = 0 THEN 0 WHEN %[1]s <= %[3]d THEN %[4]d * %[2]s ELSE (%[5]d * %[2]s) / %[1]s END)",
			t, s, target, max/target, max)
	}
	conduit = contribution(conduitTotal, conduitSuccess, score.ConduitVolumeTarget, score.ConduitMax)
	ap2 = contribution(ap2Total, ap2Success, score.AP2VolumeTarget, score.AP2Max)
	total = "(" + conduit + " + " + ap2 + ")"
	tier = fmt.Sprintf("(CASE WHEN %[1]s >= %[4]d AND %[2]s >= %[5]d AND %[3]s >= %[6]d THEN %[10]d"+
		" WHEN %[1]s >= %[7]d AND %[2]s >= %[8]d AND %[3]s >= %[9]d THEN %[11]d ELSE %[12]d END)",
		total, conduitTotal, ap2Total,
		score.EliteScore, score.EliteConduit, score.EliteAP2,
		score.StandardScore, score.StandardConduit, score.StandardAP2,
		int(score.TierElite), int(score.TierStandard), int(score.TierNone))
	// 10000 − 8·score reaches the 2500 floor above score 937; it never
	// exceeds 10000 because the score is never negative.
	floorAt := (int(score.ModifierOne) - int(score.ModifierFloor) + 7) / 8
	modifierBP = fmt.Sprintf("(CASE WHEN %[1]s >= %[2]d THEN %[3]d ELSE %[4]d - 8 * %[1]s END)",
		total, floorAt, int(score.ModifierFloor), int(score.ModifierOne))
	return conduit, ap2, total, tier, modifierBP
}

// TierNameSQL maps a numeric tier expression (as ScoreSQL's tier) to the
// name stored in swarmscore_cache.tier: NONE, STANDARD or ELITE.
func TierNameSQL(tierExpr string) string {
	var b strings.Builder
	b.WriteString("(CASE " + tierExpr)
	for _, t := range []score.Tier{score.TierNone, score.TierStandard, score.TierElite} {
		fmt.Fprintf(&b, " WHEN %d THEN '%s'", int(t), t)
	}
	b.WriteString(" END)")
	return b.String()
}

// RankKeySQL is the expression of a ranking's key (ledger.RankBy.Key) over
// the score cache's columns, prefixed by prefix (a table alias and a dot):
// the stored score, or a contribution computed from the stored counts as
// ScoreSQL computes it.
func RankKeySQL(by ledger.RankBy, prefix string) string {
	if by == ledger.RankScore {
		return prefix + "score"
	}
	conduit, ap2, _, _, _ := ScoreSQL(prefix+"conduit_sessions_90d", prefix+"conduit_successful_90d", prefix+"ap2_sessions_90d", prefix+"ap2_successful_90d")
	if by == ledger.RankConduit {
		return conduit
	}
	return ap2
}
