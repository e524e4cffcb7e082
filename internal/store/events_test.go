package store_test

import (
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

func TestEventSQL(t *testing.T) {
	if got, want := store.EventSelect(ledger.AP2Transaction), "SELECT id, provider_id, COALESCE(buyer_id, ''), operator_id, status, escrow_amount_cents, started_at, settled_at, seq,\n\t\treported_agent_id, reported_status, voided_at IS NOT NULL FROM ap2_transactions"; got != want {
		t.Errorf("EventSelect(AP2):\n%s\nwant\n%s", got, want)
	}
	if got := store.EventSelect(ledger.TaskOffer); !strings.Contains(got, "CAST(0 AS BIGINT), started_at, decided_at") {
		t.Errorf("EventSelect(task offer): %s", got)
	}
	if got := store.Involves(sqliteLike, ledger.ConduitSession); !strings.HasPrefix(got, "e.completed_at BETWEEN ?2 AND ?3 AND (e.agent_id = ?1 OR") {
		t.Errorf("Involves: %s", got)
	}
	if got := store.EventLinks(); strings.Count(got, "UNION ALL") != len(ledger.Types)-1 || !strings.Contains(got, "r.agent_id = e.provider_id") {
		t.Errorf("EventLinks: %s", got)
	}
}
