package postgres

import (
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// appendRecordsSQL is one statement that stores chain records and appends
// each to the transparency log (issue 23): it moves log_state's size past
// them, which takes that row's lock until the transaction ends, numbers the
// records from the old size in their order, and writes their leaves. Every
// writer of chain records runs it as its transaction's last statement but
// the score refreshes, after it has locked the agents it writes: the lock
// on log_state, the one every appender shares, is then held for the
// shortest time, always taken after the agents' locks (no deadlock), and
// indexes are handed out in commit order, without gaps.
const appendRecordsSQL = `WITH n AS (
		UPDATE log_state SET size = size + cardinality($1::text[]) RETURNING size - cardinality($1::text[]) AS first
	), r AS (
		INSERT INTO ledger_records (agent_id, seq, event_type, event_id, status, hash, received_at, correction_id, log_index)
		SELECT u.agent_id, u.seq, u.event_type, u.event_id, u.status, u.hash, u.received_at, nullif(u.correction_id, ''), n.first + u.ord - 1
		FROM n, unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bytea[], $7::timestamptz[], $8::text[])
			WITH ORDINALITY AS u(agent_id, seq, event_type, event_id, status, hash, received_at, correction_id, ord)
		RETURNING log_index, hash, seq
	)
	INSERT INTO log_leaves (idx, hash, seq) SELECT log_index, hash, seq FROM r`

// appendRecordsArgs are appendRecordsSQL's arguments for records.
func appendRecordsArgs(records []ledger.ChainRecord) []any {
	n := len(records)
	ra, rt, ri, rst, rc := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	rs := make([]int64, n)
	rh := make([][]byte, n)
	rr := make([]*time.Time, n)
	for k := range records {
		r := &records[k]
		ra[k], rs[k], rt[k], ri[k], rst[k], rh[k], rr[k], rc[k] = r.AgentID, r.Seq, string(r.Type), r.EventID, string(r.Status), r.Hash[:], optTime(r.ReceivedAt), r.CorrectionID
	}
	return []any{ra, rs, rt, ri, rst, rh, rr, rc}
}
