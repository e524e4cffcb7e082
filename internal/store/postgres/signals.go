package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/signal"
)

// signalQuery computes every figure of internal/signal in one statement.
// $1 and $2 bound the window, $3 is the agent asked about (empty for all):
// with one agent, only that agent and its buyers are read, since a
// reciprocal pair needs its buyers' own largest buyers. $4 is the burst
// interval in microseconds: burst counts, for each session, the sessions
// of the same agent and buyer ending in [its end, its end + $4), one
// window function over the sessions sorted by agent, buyer and end.
const signalQuery = `
WITH
scope AS (SELECT $3::text AS a UNION SELECT buyer_id FROM conduit_sessions WHERE agent_id = $3 AND buyer_id IS NOT NULL
          UNION SELECT buyer_id FROM ap2_transactions WHERE provider_id = $3),
cb AS (SELECT agent_id AS a, coalesce(buyer_id, '') AS b, count(*) AS n FROM conduit_sessions
       WHERE status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at BETWEEN $1 AND $2
         AND ($3 = '' OR agent_id IN (SELECT a FROM scope))
       GROUP BY 1, 2),
ab AS (SELECT provider_id AS a, buyer_id AS b, count(*) AS n FROM ap2_transactions
       WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at BETWEEN $1 AND $2
         AND ($3 = '' OR provider_id IN (SELECT a FROM scope))
       GROUP BY 1, 2),
c AS (SELECT a, sum(n) AS total, max(CASE WHEN b <> '' THEN n ELSE 0 END) AS top FROM cb GROUP BY a),
ar AS (SELECT a, n, row_number() OVER (PARTITION BY a ORDER BY n DESC, b) AS rn FROM ab),
ap AS (SELECT a, sum(n) AS total, sum(n) FILTER (WHERE rn <= 5) AS top5, count(*) AS buyers FROM ar GROUP BY a),
pair AS (SELECT a, b, sum(n) AS n FROM (SELECT a, b, n FROM cb WHERE b <> '' UNION ALL SELECT a, b, n FROM ab) x GROUP BY a, b),
topb AS (SELECT a, b, n FROM (SELECT a, b, n, row_number() OVER (PARTITION BY a ORDER BY n DESC, b COLLATE "C") AS rn FROM pair) x WHERE rn = 1),
self AS (SELECT a, n FROM pair WHERE a = b),
recip AS (SELECT x.a, x.n FROM topb x JOIN topb y ON y.a = x.b AND y.b = x.a WHERE x.a <> x.b),
off AS (SELECT agent_id AS a, count(*) AS decided, count(*) FILTER (WHERE status = 'ACCEPTED') AS accepted FROM task_offers
        WHERE status IN ('ACCEPTED', 'DECLINED') AND voided_at IS NULL AND decided_at BETWEEN $1 AND $2 AND ($3 = '' OR agent_id = $3)
        GROUP BY agent_id),
ends AS (SELECT agent_id AS a, seq, completed_at AS t FROM conduit_sessions
         WHERE status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at BETWEEN $1 AND $2 AND ($3 = '' OR agent_id = $3)
         UNION ALL
         SELECT provider_id, seq, settled_at FROM ap2_transactions
         WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at BETWEEN $1 AND $2 AND ($3 = '' OR provider_id = $3)),
lag AS (SELECT e.a, max(r.received_at - e.t) AS lag FROM ends e JOIN ledger_records r ON r.agent_id = e.a AND r.seq = e.seq
        WHERE r.received_at IS NOT NULL GROUP BY e.a),
burst AS (SELECT a, max(n) AS n FROM (
          SELECT agent_id AS a, count(*) OVER (PARTITION BY agent_id, buyer_id ORDER BY completed_at
            RANGE BETWEEN CURRENT ROW AND ($4::bigint - 1) * interval '1 microsecond' FOLLOWING) AS n
          FROM conduit_sessions
          WHERE status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at BETWEEN $1 AND $2 AND buyer_id IS NOT NULL
            AND ($3 = '' OR agent_id = $3)) x
        GROUP BY a),
pv AS (SELECT s.agent_id AS a, count(*) AS verified, count(s.proof_hash) AS hashed,
         count(*) FILTER (WHERE EXISTS (SELECT 1 FROM conduit_proofs p WHERE p.event_id = s.id AND p.outcome = 'proof_matched' AND p.expected = s.proof_hash)) AS proven
       FROM conduit_sessions s
       WHERE s.status = 'VERIFIED' AND s.voided_at IS NULL AND s.completed_at BETWEEN $1 AND $2 AND ($3 = '' OR s.agent_id = $3)
       GROUP BY s.agent_id),
who AS (SELECT a FROM c UNION SELECT a FROM ap UNION SELECT a FROM off)
SELECT w.a, coalesce(c.total, 0)::bigint, coalesce(c.top, 0)::bigint, coalesce(ap.total, 0)::bigint, coalesce(ap.top5, 0)::bigint,
  coalesce(ap.buyers, 0)::bigint, coalesce(self.n, 0)::bigint, coalesce(recip.n, 0)::bigint, coalesce(off.decided, 0)::bigint,
  coalesce(off.accepted, 0)::bigint, coalesce((extract(epoch FROM lag.lag) * 1000000)::bigint, 0), k.agent_id IS NOT NULL,
  coalesce(burst.n, 0)::bigint, coalesce(pv.verified, 0)::bigint, coalesce(pv.hashed, 0)::bigint, coalesce(pv.proven, 0)::bigint
FROM who w
LEFT JOIN c ON c.a = w.a LEFT JOIN ap ON ap.a = w.a LEFT JOIN self ON self.a = w.a LEFT JOIN recip ON recip.a = w.a
LEFT JOIN off ON off.a = w.a LEFT JOIN lag ON lag.a = w.a LEFT JOIN chain_breaks k ON k.agent_id = w.a
LEFT JOIN burst ON burst.a = w.a LEFT JOIN pv ON pv.a = w.a
WHERE $3 = '' OR w.a = $3
ORDER BY w.a COLLATE "C"`

// SignalFigures computes the gaming signals' figures; see
// service.SignalStore.
func (s *Store) SignalFigures(ctx context.Context, asOf time.Time, agentID string, burst time.Duration) ([]signal.Figures, error) {
	lo, hi := ledger.Bounds(asOf)
	rows, err := s.pool.Query(ctx, signalQuery, lo, hi, agentID, max(burst.Microseconds(), 1))
	if err != nil {
		return nil, fmt.Errorf("postgres: compute signals: %w", classify(err))
	}
	var (
		out []signal.Figures
		f   signal.Figures
		lag int64
	)
	_, err = pgx.ForEachRow(rows, []any{&f.AgentID, &f.ConduitTotal, &f.ConduitTopBuyer, &f.AP2Total, &f.AP2Top5, &f.AP2Buyers,
		&f.SelfDealt, &f.Reciprocal, &f.OffersDecided, &f.OffersAccepted, &lag, &f.ChainBroken, &f.ConduitBurst,
		&f.VerifiedTotal, &f.VerifiedHashed, &f.VerifiedProven}, func() error {
		g := f
		g.MaxReportLag = time.Duration(max(lag, 0)) * time.Microsecond
		out = append(out, g)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: compute signals: %w", classify(err))
	}
	return out, nil
}

// SetChainBreaks records the breaks of the latest walk; see
// service.SignalStore.
func (s *Store) SetChainBreaks(ctx context.Context, at time.Time, broken []ledger.BrokenLink) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM chain_breaks`); err != nil {
			return err
		}
		for _, b := range broken {
			if _, err := tx.Exec(ctx, `INSERT INTO chain_breaks (agent_id, found_at, seq, reason) VALUES ($1, $2, $3, $4)
				ON CONFLICT (agent_id) DO NOTHING`, b.AgentID, at, b.Seq, b.Reason); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: record chain breaks: %w", err)
	}
	return nil
}
