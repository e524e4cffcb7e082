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
const signalQuery = `
WITH
scope AS (SELECT ?3 AS a UNION SELECT buyer_id FROM conduit_sessions WHERE agent_id = ?3 AND buyer_id IS NOT NULL
          UNION SELECT buyer_id FROM ap2_transactions WHERE provider_id = ?3),
cb AS (SELECT agent_id AS a, COALESCE(buyer_id, '') AS b, COUNT(*) AS n FROM conduit_sessions
       WHERE status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at BETWEEN ?1 AND ?2
         AND (?3 = '' OR agent_id IN (SELECT a FROM scope))
       GROUP BY agent_id, COALESCE(buyer_id, '')),
ab AS (SELECT provider_id AS a, buyer_id AS b, COUNT(*) AS n FROM ap2_transactions
       WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at BETWEEN ?1 AND ?2
         AND (?3 = '' OR provider_id IN (SELECT a FROM scope))
       GROUP BY provider_id, buyer_id),
c AS (SELECT a, SUM(n) AS total, MAX(CASE WHEN b <> '' THEN n ELSE 0 END) AS top FROM cb GROUP BY a),
ar AS (SELECT a, n, ROW_NUMBER() OVER (PARTITION BY a ORDER BY n DESC, b) AS rn FROM ab),
ap AS (SELECT a, SUM(n) AS total, SUM(CASE WHEN rn <= 5 THEN n ELSE 0 END) AS top5, COUNT(*) AS buyers FROM ar GROUP BY a),
pair AS (SELECT a, b, SUM(n) AS n FROM (SELECT a, b, n FROM cb WHERE b <> '' UNION ALL SELECT a, b, n FROM ab) GROUP BY a, b),
topb AS (SELECT a, b, n FROM (SELECT a, b, n, ROW_NUMBER() OVER (PARTITION BY a ORDER BY n DESC, b) AS rn FROM pair) WHERE rn = 1),
self AS (SELECT a, n FROM pair WHERE a = b),
recip AS (SELECT x.a, x.n FROM topb x JOIN topb y ON y.a = x.b AND y.b = x.a WHERE x.a <> x.b),
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
pv AS (SELECT s.agent_id AS a, COUNT(*) AS verified, COUNT(s.proof_hash) AS hashed,
         SUM(EXISTS (SELECT 1 FROM conduit_proofs p WHERE p.event_id = s.id AND p.outcome = 'proof_matched' AND p.expected = s.proof_hash)) AS proven
       FROM conduit_sessions s
       WHERE s.status = 'VERIFIED' AND s.voided_at IS NULL AND s.completed_at BETWEEN ?1 AND ?2 AND (?3 = '' OR s.agent_id = ?3)
       GROUP BY s.agent_id),
who AS (SELECT a FROM c UNION SELECT a FROM ap UNION SELECT a FROM off)
SELECT w.a, COALESCE(c.total, 0), COALESCE(c.top, 0), COALESCE(ap.total, 0), COALESCE(ap.top5, 0), COALESCE(ap.buyers, 0),
  COALESCE(self.n, 0), COALESCE(recip.n, 0), COALESCE(off.decided, 0), COALESCE(off.accepted, 0), COALESCE(lag.lag, 0),
  k.agent_id IS NOT NULL, COALESCE(burst.n, 0), COALESCE(pv.verified, 0), COALESCE(pv.hashed, 0), COALESCE(pv.proven, 0)
FROM who w
LEFT JOIN c ON c.a = w.a LEFT JOIN ap ON ap.a = w.a LEFT JOIN self ON self.a = w.a LEFT JOIN recip ON recip.a = w.a
LEFT JOIN off ON off.a = w.a LEFT JOIN lag ON lag.a = w.a LEFT JOIN chain_breaks k ON k.agent_id = w.a
LEFT JOIN burst ON burst.a = w.a LEFT JOIN pv ON pv.a = w.a
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
