package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// The tampering helpers: edits an attacker with database access could make,
// written once for both back ends on Tamperer.Exec.

// quote renders s as an SQL string literal.
func quote(s string) string {
	q := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			q = append(q, '\'')
		}
		q = append(q, s[i])
	}
	return string(append(q, '\''))
}

// setEndedAt overwrites an event row's completed_at/settled_at
// (back-dating, §15.2).
func setEndedAt(t *testing.T, h Harness, s service.Backend, typ ledger.Type, id string, at time.Time) {
	tab := ledger.EventTable(typ)
	h.Tamper.Exec(t, s, fmt.Sprintf("UPDATE %s SET %s = %s WHERE id = %s", tab.Name, tab.Ends, h.Tamper.Time(at), quote(id)))
}

// deleteEvent deletes an event row.
func deleteEvent(t *testing.T, h Harness, s service.Backend, typ ledger.Type, id string) {
	h.Tamper.Exec(t, s, fmt.Sprintf("DELETE FROM %s WHERE id = %s", ledger.EventTable(typ).Name, quote(id)))
}

// setRecordContent makes chain record (agent, seq) hash as r: a record keeps
// only its event reference and status, and the other hashed fields live in
// its event row (ledger.RebuildRecord), so they are edited there, as
// nothing else would change what verification hashes.
func setRecordContent(t *testing.T, h Harness, s service.Backend, r ledger.Record) {
	t.Helper()
	e := &r.Event
	h.Tamper.Exec(t, s, fmt.Sprintf("UPDATE ledger_records SET event_type = %s, event_id = %s, status = %s WHERE agent_id = %s AND seq = %d",
		quote(string(e.Type)), quote(e.ID), quote(string(e.Status)), quote(e.AgentID), r.Seq))
	tab := ledger.EventTable(e.Type)
	buyer := "NULL"
	if e.BuyerID != "" || e.Type == ledger.AP2Transaction {
		buyer = quote(e.BuyerID)
	}
	set := fmt.Sprintf("buyer_id = %s, operator_id = %s, started_at = %s", buyer, quote(r.Operator), h.Tamper.Time(e.StartedAt))
	if e.Type == ledger.AP2Transaction {
		set += fmt.Sprintf(", escrow_amount_cents = %d", e.EscrowAmountCents)
	}
	// An end time the content omits (a non-terminal record) is not the
	// row's to lose.
	if !e.EndedAt.IsZero() {
		set += fmt.Sprintf(", %s = %s", tab.Ends, h.Tamper.Time(e.EndedAt))
	}
	h.Tamper.Exec(t, s, fmt.Sprintf("UPDATE %s SET %s WHERE id = %s", tab.Name, set, quote(e.ID)))
}

// setCacheVersion overwrites the ledger_seq and valid_until of the agent's
// cache entry: what a refresh that read the ledger before a concurrent
// batch committed writes over that batch's invalidation.
func setCacheVersion(t *testing.T, h Harness, s service.Backend, agentID string, ledgerSeq int64, validUntil time.Time) {
	h.Tamper.Exec(t, s, fmt.Sprintf("UPDATE swarmscore_cache SET ledger_seq = %d, valid_until = %s WHERE agent_id = %s",
		ledgerSeq, h.Tamper.Time(validUntil), quote(agentID)))
}

// testVerifyTamperingLayout edits the stored layout directly, field by field
// (each hashed field lives in exactly one place, the record or its event
// row), and checks that VerifyLedger reports the first broken link of each
// affected chain.
func testVerifyTamperingLayout(t *testing.T, h Harness) {
	start, end := base.Add(-48*time.Hour), base.Add(-24*time.Hour)
	zero := h.Tamper.Bytes(make([]byte, ledger.HashSize))
	cases := []struct {
		name   string
		tamper string
		want   map[string]int64 // agent -> first broken seq
	}{
		{"event row buyer", "UPDATE ap2_transactions SET buyer_id = 'buyer-2' WHERE id = 'b-t1'", map[string]int64{"b": 3}},
		{"event row escrow", "UPDATE ap2_transactions SET escrow_amount_cents = 1 WHERE id = 'b-t1'", map[string]int64{"b": 3}},
		{"event row started_at", "UPDATE conduit_sessions SET started_at = " + h.Tamper.Time(start.Add(-time.Microsecond)) + " WHERE id = 'b-c1'", map[string]int64{"b": 1}},
		{"event row absent buyer", "UPDATE conduit_sessions SET buyer_id = NULL WHERE id = 'b-c2'", map[string]int64{"b": 4}},
		{"event row operator", "UPDATE conduit_sessions SET operator_id = 'op-z' WHERE id = 'b-c2'", map[string]int64{"b": 4}},
		{"event row status", "UPDATE conduit_sessions SET status = 'VERIFIED' WHERE id = 'b-c2'", map[string]int64{"b": 4}},
		{"event row completion removed", "UPDATE conduit_sessions SET completed_at = NULL WHERE id = 'b-c2'", map[string]int64{"b": 4}},
		{"event row rolled back", "UPDATE conduit_sessions SET seq = 1, status = 'RUNNING', completed_at = NULL WHERE id = 'b-c1'", map[string]int64{"b": 2}},
		{"event row moved to another agent", "UPDATE conduit_sessions SET agent_id = 'a' WHERE id = 'b-c2'", map[string]int64{"a": 4, "b": 4}},
		{"event row deleted", "DELETE FROM conduit_sessions WHERE id = 'b-c1'", map[string]int64{"b": 1}},
		{"record status", "UPDATE ledger_records SET status = 'PENDING' WHERE agent_id = 'b' AND seq = 1", map[string]int64{"b": 1}},
		{"record hash", "UPDATE ledger_records SET hash = " + zero + " WHERE agent_id = 'b' AND seq = 2", map[string]int64{"b": 2}},
		{"record event", "UPDATE ledger_records SET event_id = 'b-c2' WHERE agent_id = 'b' AND seq = 1", map[string]int64{"b": 1}},
		{"records reordered", `UPDATE ledger_records SET seq = 100 WHERE agent_id = 'b' AND seq = 3;
		  UPDATE ledger_records SET seq = 3 WHERE agent_id = 'b' AND seq = 4; UPDATE ledger_records SET seq = 4 WHERE agent_id = 'b' AND seq = 100`, map[string]int64{"b": 3}},
		{"record deleted", "DELETE FROM ledger_records WHERE agent_id = 'b' AND seq = 2", map[string]int64{"b": 2}},
		{"last record deleted", "DELETE FROM ledger_records WHERE agent_id = 'b' AND seq = 4", map[string]int64{"b": 3}},
		{"every record deleted", "DELETE FROM ledger_records WHERE agent_id = 'b'", map[string]int64{"b": 0}},
		{"head moved", "UPDATE agents SET head_hash = " + zero + " WHERE id = 'b'", map[string]int64{"b": 4}},
		{"head seq moved", "UPDATE agents SET head_seq = 3 WHERE id = 'b'", map[string]int64{"b": 4}},
		{"agent deleted", "DELETE FROM swarmscore_cache WHERE agent_id = 'b'; DELETE FROM agents WHERE id = 'b'", map[string]int64{"b": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := h.Open(t)
			for _, a := range []string{"a", "b", "c"} {
				wantOutcomes(t, ingest(t, s, "op-a",
					conduit(a+"-c1", a, ledger.Running, start, time.Time{}),
					conduit(a+"-c1", a, ledger.Verified, start, end),
					ap2(a+"-t1", a, ledger.Settled, start, end),
					conduit(a+"-c2", a, ledger.Failed, start, end),
				), ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted)
			}
			if r := mustVerify(t, s); r.Records != 12 || r.Events != 9 || r.Agents != 3 {
				t.Fatalf("before tampering: %+v", r)
			}
			h.Tamper.Exec(t, s, tc.tamper)
			r, err := s.VerifyLedger(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, b := range r.Broken {
				got[b.AgentID] = b.Seq
				if b.Reason == "" {
					t.Errorf("break %+v without a reason", b)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("broken %+v, want first breaks %v", r.Broken, tc.want)
			}
		})
	}
}
