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
scope AS (SELECT $3::text AS a UNION SELECT buyer_id FROM conduit_sessions WHERE agent_id = $3 AND buyer_id IS NOT NULL
          UNION SELECT buyer_id FROM ap2_transactions WHERE provider_id = $3),
pair AS MATERIALIZED (
  SELECT a, b, sum(nc) AS nc, sum(na) AS na, sum(v) AS v, sum(h) AS h, sum(p) AS p,
    CASE WHEN b <> '' THEN sum(nc) ELSE 0 END + sum(na) AS pn FROM (
    SELECT s.agent_id AS a, coalesce(s.buyer_id, '') AS b, 1 AS nc, 0 AS na, (s.status = 'VERIFIED')::int AS v,
      (s.status = 'VERIFIED' AND s.proof_hash IS NOT NULL)::int AS h,
      CASE WHEN s.status = 'VERIFIED' AND s.proof_hash IS NOT NULL AND EXISTS (SELECT 1 FROM conduit_proofs p
        WHERE p.event_id = s.id AND p.outcome = 'proof_matched' AND p.expected = s.proof_hash) THEN 1 ELSE 0 END AS p
    FROM conduit_sessions s
    WHERE s.status IN ('VERIFIED', 'FAILED') AND s.voided_at IS NULL AND s.completed_at BETWEEN $1 AND $2
      AND ($3 = '' OR s.agent_id IN (SELECT a FROM scope))
    UNION ALL
    SELECT provider_id, buyer_id, 0, 1, 0, 0, 0 FROM ap2_transactions
    WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at BETWEEN $1 AND $2
      AND ($3 = '' OR provider_id IN (SELECT a FROM scope))) x
  GROUP BY a, b),
agg AS MATERIALIZED (SELECT a, sum(nc) AS ct, max(nc) FILTER (WHERE b <> '') AS ctop, sum(na) AS at, count(*) FILTER (WHERE na > 0) AS buyers,
    sum(pn) FILTER (WHERE a = b) AS self, max(pn) AS tn, sum(v) AS v, sum(h) AS h, sum(p) AS p
  FROM pair GROUP BY a),
topb AS MATERIALIZED (SELECT p.a, min(p.b COLLATE "C") AS b, min(g.tn) AS n FROM pair p JOIN agg g ON g.a = p.a AND p.pn = g.tn WHERE p.pn > 0 GROUP BY p.a),
recip AS (SELECT x.a, x.n FROM topb x JOIN topb y ON y.a = x.b AND y.b = x.a WHERE x.a <> x.b),
ap AS (SELECT a, sum(na) AS top5 FROM (SELECT a, na, row_number() OVER (PARTITION BY a COLLATE "C" ORDER BY na DESC) AS rn FROM pair WHERE na > 0) x
       WHERE rn <= 5 GROUP BY a),
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
who AS (SELECT a FROM agg UNION SELECT a FROM off)
SELECT w.a, coalesce(g.ct, 0)::bigint, coalesce(g.ctop, 0)::bigint, coalesce(g.at, 0)::bigint, coalesce(ap.top5, 0)::bigint,
  coalesce(g.buyers, 0)::bigint, coalesce(g.self, 0)::bigint, coalesce(recip.n, 0)::bigint, coalesce(off.decided, 0)::bigint,
  coalesce(off.accepted, 0)::bigint, coalesce((extract(epoch FROM lag.lag) * 1000000)::bigint, 0), k.agent_id IS NOT NULL,
  coalesce(burst.n, 0)::bigint, coalesce(g.v, 0)::bigint, coalesce(g.h, 0)::bigint, coalesce(g.p, 0)::bigint
FROM who w
LEFT JOIN agg g ON g.a = w.a LEFT JOIN ap ON ap.a = w.a LEFT JOIN recip ON recip.a = w.a
LEFT JOIN off ON off.a = w.a LEFT JOIN lag ON lag.a = w.a LEFT JOIN chain_breaks k ON k.agent_id = w.a
LEFT JOIN burst ON burst.a = w.a
WHERE $3 = '' OR w.a = $3
ORDER BY w.a COLLATE "C"`

// SignalFigures computes the gaming signals' figures; see
// service.SignalStore.
func (s *Store) SignalFigures(ctx context.Context, asOf time.Time, agentID string, burst time.Duration) ([]signal.Figures, error) {
	lo, hi := ledger.Bounds(asOf)
	var out []signal.Figures
	// The planner's estimates for the joined CTEs are far too high, so it
	// JIT-compiles the statement: seconds of compilation (a third of the
	// statement at 10^6 events, docs/BENCHMARKS.md) for no faster run.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, signalQuery, lo, hi, agentID, max(burst.Microseconds(), 1))
		if err != nil {
			return err
		}
		var (
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
		return err
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
