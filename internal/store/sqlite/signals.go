package sqlite

import (
	"context"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/signal"
)

// signalQuery computes every figure of internal/signal in one statement.
// ?1 and ?2 bound the window, ?3 is the agent asked about (empty for all):
// with one agent, only that agent and its buyers are read, since a
// reciprocal pair needs its buyers' own largest buyers. ?4 is the burst
// interval in microseconds: burst counts, for each session, the sessions
// of the same agent and buyer ending in [its end, its end + ?4), one
// window function over the sessions sorted by agent, buyer and end.
//
// The counted sessions and transactions are grouped once, by agent and
// buyer (pair: nc sessions, b empty for none; na transactions; pn the pair's
// events with a buyer), and every buyer figure is read from that smaller
// set: the totals and the largest pair by agent (agg), the largest buyer
// as the smallest buyer id among the pairs of that size, the top five AP2
// buyers by one ranking of the pairs with transactions. Sessions without a
// buyer are a pair of their own that only the Conduit totals count.
const signalQuery = `
WITH
scope AS (SELECT ?3 AS a UNION SELECT buyer_id FROM conduit_sessions WHERE agent_id = ?3 AND buyer_id IS NOT NULL
          UNION SELECT buyer_id FROM ap2_transactions WHERE provider_id = ?3),
pair AS MATERIALIZED (
  SELECT a, b, SUM(nc) AS nc, SUM(na) AS na, SUM(v) AS v, SUM(h) AS h, SUM(p) AS p, CASE WHEN b <> '' THEN SUM(nc) ELSE 0 END + SUM(na) AS pn FROM (
    SELECT s.agent_id AS a, COALESCE(s.buyer_id, '') AS b, 1 AS nc, 0 AS na, s.status = 'VERIFIED' AS v,
      s.status = 'VERIFIED' AND s.proof_hash IS NOT NULL AS h,
      CASE WHEN s.status = 'VERIFIED' AND s.proof_hash IS NOT NULL THEN EXISTS (SELECT 1 FROM conduit_proofs p
        WHERE p.event_id = s.id AND p.outcome = 'proof_matched' AND p.expected = s.proof_hash) ELSE 0 END AS p
    FROM conduit_sessions s
    WHERE s.status IN ('VERIFIED', 'FAILED') AND s.voided_at IS NULL AND s.completed_at BETWEEN ?1 AND ?2
      AND (?3 = '' OR s.agent_id IN (SELECT a FROM scope))
    UNION ALL
    SELECT provider_id, buyer_id, 0, 1, 0, 0, 0 FROM ap2_transactions
    WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at BETWEEN ?1 AND ?2
      AND (?3 = '' OR provider_id IN (SELECT a FROM scope)))
  GROUP BY a, b),
agg AS MATERIALIZED (SELECT a, SUM(nc) AS ct, MAX(CASE WHEN b <> '' THEN nc ELSE 0 END) AS ctop, SUM(na) AS at,
    SUM(na > 0) AS buyers, SUM(CASE WHEN a = b THEN pn ELSE 0 END) AS self, MAX(pn) AS tn, SUM(v) AS v, SUM(h) AS h, SUM(p) AS p
  FROM pair GROUP BY a),
topb AS MATERIALIZED (SELECT p.a, MIN(p.b) AS b, g.tn AS n FROM agg g JOIN pair p ON p.a = g.a AND p.pn = g.tn WHERE g.tn > 0 GROUP BY p.a),
recip AS (SELECT x.a, x.n FROM topb x JOIN topb y ON y.a = x.b AND y.b = x.a WHERE x.a <> x.b),
ap AS (SELECT a, SUM(na) AS top5 FROM (SELECT a, na, ROW_NUMBER() OVER (PARTITION BY a ORDER BY na DESC) AS rn FROM pair WHERE na > 0)
       WHERE rn <= 5 GROUP BY a),
off AS (SELECT agent_id AS a, COUNT(*) AS decided, SUM(status = 'ACCEPTED') AS accepted FROM task_offers
        WHERE status IN ('ACCEPTED', 'DECLINED') AND voided_at IS NULL AND decided_at BETWEEN ?1 AND ?2 AND (?3 = '' OR agent_id = ?3)
        GROUP BY agent_id),
ends AS (SELECT agent_id AS a, seq, completed_at AS t FROM conduit_sessions
         WHERE status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at BETWEEN ?1 AND ?2 AND (?3 = '' OR agent_id = ?3)
         UNION ALL
         SELECT provider_id, seq, settled_at FROM ap2_transactions
         WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at BETWEEN ?1 AND ?2 AND (?3 = '' OR provider_id = ?3)),
lag AS (SELECT e.a, MAX(r.received_at - e.t) AS lag FROM ends e JOIN ledger_records r ON r.agent_id = e.a AND r.seq = e.seq
        WHERE r.received_at IS NOT NULL GROUP BY e.a),
burst AS (SELECT a, MAX(n) AS n FROM (
          SELECT agent_id AS a, COUNT(*) OVER (PARTITION BY agent_id, buyer_id ORDER BY completed_at
            RANGE BETWEEN CURRENT ROW AND ?4 - 1 FOLLOWING) AS n
          FROM conduit_sessions
          WHERE status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at BETWEEN ?1 AND ?2 AND buyer_id IS NOT NULL
            AND (?3 = '' OR agent_id = ?3))
        GROUP BY a),
who AS (SELECT a FROM agg UNION SELECT a FROM off)
SELECT w.a, COALESCE(g.ct, 0), COALESCE(g.ctop, 0), COALESCE(g.at, 0), COALESCE(ap.top5, 0), COALESCE(g.buyers, 0),
  COALESCE(g.self, 0), COALESCE(recip.n, 0), COALESCE(off.decided, 0), COALESCE(off.accepted, 0), COALESCE(lag.lag, 0),
  k.agent_id IS NOT NULL, COALESCE(burst.n, 0), COALESCE(g.v, 0), COALESCE(g.h, 0), COALESCE(g.p, 0)
FROM who w
LEFT JOIN agg g ON g.a = w.a LEFT JOIN ap ON ap.a = w.a LEFT JOIN recip ON recip.a = w.a
LEFT JOIN off ON off.a = w.a LEFT JOIN lag ON lag.a = w.a LEFT JOIN chain_breaks k ON k.agent_id = w.a
LEFT JOIN burst ON burst.a = w.a
WHERE ?3 = '' OR w.a = ?3
ORDER BY w.a`

// SignalFigures implements service.SignalStore.
func (s *Store) SignalFigures(ctx context.Context, asOf time.Time, agentID string, burst time.Duration) ([]signal.Figures, error) {
	lo, hi := ledger.Bounds(asOf)
	rows, err := s.r.QueryContext(ctx, signalQuery, micros(lo), micros(hi), agentID, max(burst.Microseconds(), 1))
	if err != nil {
		return nil, dbErr("compute signals", err)
	}
	defer rows.Close()
	var out []signal.Figures
	for rows.Next() {
		var f signal.Figures
		var lag int64
		if err := rows.Scan(&f.AgentID, &f.ConduitTotal, &f.ConduitTopBuyer, &f.AP2Total, &f.AP2Top5, &f.AP2Buyers,
			&f.SelfDealt, &f.Reciprocal, &f.OffersDecided, &f.OffersAccepted, &lag, &f.ChainBroken, &f.ConduitBurst,
			&f.VerifiedTotal, &f.VerifiedHashed, &f.VerifiedProven); err != nil {
			return nil, dbErr("compute signals", err)
		}
		f.MaxReportLag = time.Duration(max(lag, 0)) * time.Microsecond
		out = append(out, f)
	}
	return out, dbErr("compute signals", rows.Err())
}

// SetChainBreaks implements service.SignalStore.
func (s *Store) SetChainBreaks(ctx context.Context, at time.Time, broken []ledger.BrokenLink) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return dbErr("begin chain breaks", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM chain_breaks`); err != nil {
		return dbErr("record chain breaks", err)
	}
	for _, b := range broken {
		if _, err := tx.ExecContext(ctx, `INSERT INTO chain_breaks (agent_id, found_at, seq, reason) VALUES (?, ?, ?, ?)
		  ON CONFLICT (agent_id) DO NOTHING`, b.AgentID, micros(at), b.Seq, b.Reason); err != nil {
			return dbErr("record chain breaks", err)
		}
	}
	return dbErr("commit chain breaks", tx.Commit())
}
