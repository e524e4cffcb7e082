package store

import (
	"strings"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// The event tables' SQL both back ends read with, generated from their
// entries in ledger.Catalogue (table, agent column, end column).

// EventSelect reads an event row of type t, as ingest, corrections and
// retention load it: id, current agent, buyer (” when none), operator,
// current status, escrow cents (0 but for AP2), start, end (NULL until
// final), the seq of the record that produced the row, the reported agent
// and status (NULL unless a correction changed them) and whether it is
// voided. The caller appends an alias or a WHERE clause.
func EventSelect(t ledger.Type) string { return eventSelects[t] }

var eventSelects = func() map[ledger.Type]string {
	out := map[ledger.Type]string{}
	for _, t := range ledger.Types {
		out[t] = eventSelect(t)
	}
	return out
}()

func eventSelect(t ledger.Type) string {
	tab := ledger.EventTable(t)
	escrow := "CAST(0 AS BIGINT)"
	if _, ok := tab.Column("escrow_amount_cents"); ok {
		escrow = "escrow_amount_cents"
	}
	return "SELECT id, " + tab.Owner + ", COALESCE(buyer_id, ''), operator_id, status, " + escrow + ", started_at, " + tab.Ends +
		", seq,\n\t\treported_agent_id, reported_status, voided_at IS NOT NULL FROM " + tab.Name
}

// EventLinks reads every event row as (type, id, agent, seq) with whether
// the chain record its seq names exists and that record's type and event
// id (” when it does not): what ledger.VerifyChains checks event rows
// against.
func EventLinks() string {
	var parts []string
	for _, t := range ledger.Types {
		tab := ledger.EventTable(t)
		parts = append(parts, "SELECT '"+string(t)+"', e.id, e."+tab.Owner+
			", e.seq, r.event_type IS NOT NULL, COALESCE(r.event_type, ''), COALESCE(r.event_id, '')\n\t\tFROM "+tab.Name+
			" e LEFT JOIN ledger_records r ON r.agent_id = e."+tab.Owner+" AND r.seq = e.seq")
	}
	return strings.Join(parts, "\n\t\tUNION ALL\n\t\t")
}

// Involves is a condition on an event table of type t aliased e: the
// events that are or were the agent's (parameter 1) and ended in the
// closed interval of parameters 2 and 3. An event's end never changes, so
// the events of a window as it stood at any time are among these.
func Involves(d Dialect, t ledger.Type) string {
	tab := ledger.EventTable(t)
	agent, lo, hi := d.Param(1), d.Param(2), d.Param(3)
	return "e." + tab.Ends + " BETWEEN " + lo + " AND " + hi + " AND (e." + tab.Owner + " = " + agent + " OR e.reported_agent_id = " + agent +
		"\n\t    OR e.id IN (SELECT k.event_id FROM corrections k WHERE k.event_type = " + quote(string(t)) +
		" AND (k.from_agent = " + agent + " OR k.to_agent = " + agent + ")))"
}
