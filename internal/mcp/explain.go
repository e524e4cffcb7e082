package mcp

import (
	"fmt"
	"strings"

	"github.com/swarmscore/swarmscore/score"
)

// explain says in words where r's score comes from, what the next tier
// needs and what would lose the current one.
func explain(agentID string, r *score.Result) Explanation {
	x := Explanation{AgentID: agentID, Score: r.Score, Tier: r.Tier.String(), Gaps: []Gap{}}
	var b strings.Builder
	c, a := r.Conduit(), r.AP2()
	fmt.Fprintf(&b, "%s scores %d of 1000 and is %s. ", agentID, r.Score, r.Tier)
	fmt.Fprintf(&b, "Conduit: %d of %d sessions verified in the last 90 days, %d of %d points. ", c.Success, c.Total, c.Contribution, c.MaxContribution)
	fmt.Fprintf(&b, "AP2: %d of %d transactions settled, %d of %d points. ", a.Success, a.Total, a.Contribution, a.MaxContribution)
	if c.Total < score.ConduitVolumeTarget || a.Total < score.AP2VolumeTarget {
		fmt.Fprintf(&b, "Volume scales each dimension until %d Conduit sessions and %d AP2 transactions; ", score.ConduitVolumeTarget, score.AP2VolumeTarget)
		fmt.Fprintf(&b, "below them every further success adds points even at the same success rate. ")
	}
	fmt.Fprintf(&b, "A payment to it is %s held in escrow. ", percent(r.Escrow))
	gaps := r.Gaps()
	if len(gaps) > 0 {
		x.NextTier = gaps[0].Tier.String()
		parts := make([]string, len(gaps))
		for i, g := range gaps {
			x.Gaps = append(x.Gaps, Gap{Tier: g.Tier.String(), Requirement: g.Requirement, Required: g.Required, Actual: g.Actual})
			parts[i] = gapWords(g)
		}
		fmt.Fprintf(&b, "To reach %s it needs %s. ", x.NextTier, strings.Join(parts, ", "))
	} else {
		b.WriteString("ELITE is the highest tier. ")
	}
	switch r.Tier {
	case score.TierElite:
		fmt.Fprintf(&b, "It stays ELITE while its score is at least %d with at least %d Conduit sessions and %d AP2 transactions in the window; ",
			score.EliteScore, score.EliteConduit, score.EliteAP2)
	case score.TierStandard:
		fmt.Fprintf(&b, "It stays STANDARD while its score is at least %d with at least %d Conduit sessions and %d AP2 transactions in the window; ",
			score.StandardScore, score.StandardConduit, score.StandardAP2)
	}
	if r.Tier != score.TierNone {
		b.WriteString("FAILED sessions, DISPUTED or REFUNDED payments, and events leaving the 90-day window can take it below. ")
	}
	x.Explanation = strings.TrimSpace(b.String())
	return x
}

// gapWords is one unmet requirement in words.
func gapWords(g score.Gap) string {
	n := g.Required - g.Actual
	switch g.Requirement {
	case score.RequirementScore:
		return fmt.Sprintf("%d more points (a score of %d; it has %d)", n, g.Required, g.Actual)
	case score.RequirementConduit:
		return fmt.Sprintf("%d more Conduit sessions (%d in 90 days; it has %d)", n, g.Required, g.Actual)
	case score.RequirementAP2:
		return fmt.Sprintf("%d more AP2 transactions (%d in 90 days; it has %d)", n, g.Required, g.Actual)
	}
	return fmt.Sprintf("%s of %d (it has %d)", g.Requirement, g.Required, g.Actual)
}

// percent renders a modifier as a percentage, e.g. 39.2%.
func percent(m score.Modifier) string {
	bp := int64(m) // basis points
	s := fmt.Sprintf("%d.%02d", bp/100, bp%100)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
}

// formulaText is the swarmscore://formula resource.
var formulaText = fmt.Sprintf(`# SwarmScore V1 (formula %s)

A marketplace reports each agent's Conduit sessions (browser-verified task
executions: VERIFIED or FAILED) and AP2 payment transactions in which the
agent is the provider (SETTLED, DISPUTED or REFUNDED). Only events that ended
in the 90 days before the score's instant count (both ends inclusive, UTC).

## Score (0 to 1000)

- Conduit: rate = verified / sessions; volume = min(1, sessions / %d);
  conduit points = floor(%d x rate x volume).
- AP2: rate = settled / transactions; volume = min(1, transactions / %d);
  AP2 points = floor(%d x rate x volume).
- score = conduit points + AP2 points. An agent with no events scores 0.

Volume means a new agent earns its points as it works: 50 perfect sessions
give half the Conduit points that 100 give.

## Tiers

- ELITE: score at least %d, at least %d Conduit sessions and %d AP2
  transactions in the window.
- STANDARD: score at least %d, at least %d Conduit sessions and %d AP2
  transactions.
- NONE: otherwise.

## Escrow

escrow modifier = max(0.25, min(1, 1 - score / 1250)): the share of each
payment to the agent held in escrow. The hold is the amount times the
modifier, in whole cents, rounded up in the buyer's favour; the rest is
released to the agent at once. A provider with no history has the whole
payment held.

## Passports

A score is published as a signed Execution Passport, valid for 7 days, that
anyone can verify (verify_passport): its signature, that its score follows
from its counts, and, on the issuing server, that the ledger gives those
counts.
`, score.FormulaVersion, score.ConduitVolumeTarget, score.ConduitMax, score.AP2VolumeTarget, score.AP2Max,
	score.EliteScore, score.EliteConduit, score.EliteAP2, score.StandardScore, score.StandardConduit, score.StandardAP2)
