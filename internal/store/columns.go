package store

import (
	"strings"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Load SQL both back ends share word for word.

// AppealColumns are an appeal row's columns in the order the back ends
// scan them.
const AppealColumns = `id, agent_id, passport_id, passport_computed_at, grounds, statement, state, filed_by, filed_at,
	acknowledged_at, decided_at, escalated_at, decision, reissued_at`

// CorrectionColumns are a correction row's columns in the order the back
// ends scan them.
const CorrectionColumns = `id, event_type, event_id, action, from_agent, to_agent, from_status, to_status, reason, appeal_id, actor, created_at, reissued_at`

// PassportColumns are an issued passport row's columns in the order the
// back ends scan them.
const PassportColumns = `id, agent_id, computed_at, expires_at, key_id, signature, document, revoked_at`

// ErasureScope returns the queries that read an erasure's scope, given the
// back end's chain walk (chainSelect: ledger_records r joined to the event
// tables c, t and o and to the corrections k): the agent's chain (parameter
// 1), then the records of other chains whose content may name it, a
// superset that ledger.ChainRow.NamesAgent filters exactly. A report names
// its buyer; a correction names the agents of its AgentRef columns and
// may name any in its AgentText ones (ledger.Catalogue).
func ErasureScope(d Dialect, chainSelect string) []string {
	x := d.Param(1)
	names := []string{"COALESCE(c.buyer_id, t.buyer_id, o.buyer_id) = " + x}
	k, _ := ledger.CatalogueTable("corrections")
	for _, c := range k.With(ledger.AgentRef) {
		names = append(names, "k."+c+" = "+x)
	}
	for _, c := range k.With(ledger.AgentText) {
		names = append(names, d.Contains("k."+c, x))
	}
	return []string{
		chainSelect + ` WHERE r.agent_id = ` + x + ` ORDER BY r.seq`,
		chainSelect + ` WHERE r.agent_id <> ` + x + ` AND (` + strings.Join(names, "\n\t    OR ") + `)
	  ORDER BY r.agent_id, r.seq`,
	}
}

// HoldColumns are an escrow hold row's columns in the order the back ends
// scan them (scanHold).
const HoldColumns = `transaction_id, provider_id, buyer_id, operator_id, amount_cents, currency, score, tier, escrow_modifier_bp,
	passport_id, kid, hold_cents, released_cents, state, payout_cents, fee_cents, refund_cents, reason, created_at, updated_at, seq, hash,
	correction_id`

// HoldStepColumns are an escrow hold step row's columns in scan order.
const HoldStepColumns = `transaction_id, seq, action, state, at, actor, payout_cents, fee_cents, refund_cents, reason, correction_id, hash`

// HoldStatsSQL counts the holds by state with what each state holds.
const HoldStatsSQL = `SELECT state, COUNT(*), CAST(COALESCE(SUM(hold_cents), 0) AS BIGINT) FROM escrow_holds GROUP BY state`
