package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// Partitions (migration 00020). The event tables and ledger_records are
// partitioned by period: rows go to the current partition (the columns'
// default), and RotatePartitions opens the next one. Retention (Prune)
// then works in two steps:
//
//  1. Each chain's prefix is pruned as before (one short transaction per
//     chain: anchor, summary record, head), but the prefix's rows that lie
//     in a droppable partition (closed at or before the cutoff) are left
//     where they are: they are dead, at or before their chain's anchor,
//     and every reader skips them (the walk, a chain's listing, a
//     correction). Rows in other partitions (late reports, long-lived
//     events) are deleted as before.
//  2. Each droppable partition is detached from all four tables in one
//     short transaction, its live rows (past their chain's anchor: an
//     event still open, moved to another agent, or reported after a
//     record that stops the prefix) are copied into the current
//     partition, and the detached tables are dropped.
//
// A rotation and a drop hold their locks for milliseconds but wait for
// them at most lockTimeout, and report ErrUnavailable when they could not
// get them (a long query in the way); the next run tries again.

// PartitionSpan is how long a partition stays current: Prune rotates when
// the current one was opened longer ago than this.
const PartitionSpan = 30 * 24 * time.Hour

// lockTimeout bounds how long a rotation or a drop waits for its locks
// (while it waits, statements queued behind it wait too).
const lockTimeout = "2s"

// partitioned are the partitioned tables, with the column naming the chain
// their rows belong to.
var partitioned = []struct{ table, agent string }{
	{"ledger_records", "agent_id"},
	{"conduit_sessions", "agent_id"},
	{"ap2_transactions", "provider_id"},
	{"task_offers", "agent_id"},
}

// Partition is one partition of the ledger's tables.
type Partition struct {
	Period   int
	OpenedAt time.Time
	ClosedAt time.Time // zero for the current one
}

// Partitions lists the partitions not dropped, oldest first.
func (s *Store) Partitions(ctx context.Context) ([]Partition, error) {
	rows, err := s.pool.Query(ctx, `SELECT period, opened_at, closed_at FROM ledger_partitions WHERE dropped_at IS NULL ORDER BY period`)
	if err != nil {
		return nil, fmt.Errorf("postgres: partitions: %w", classify(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Partition, error) {
		var p Partition
		var closed *time.Time
		err := row.Scan(&p.Period, &p.OpenedAt, &closed)
		p.OpenedAt, p.ClosedAt = p.OpenedAt.UTC(), timeOrZero(closed)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: partitions: %w", classify(err))
	}
	return out, nil
}

// RotatePartitions closes the current partition as of at and opens the
// next, which new rows go to from then on; it returns the new period. It
// locks out ingest (and every other writer of chains) for the few
// milliseconds the switch takes, so that no batch reads its events in one
// partition and writes them in the next: event ids stay unique across
// partitions. Errors: ErrUnavailable when the locks were not granted
// within lockTimeout.
func (s *Store) RotatePartitions(ctx context.Context, at time.Time) (int, error) {
	var next int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+lockTimeout+`'`); err != nil {
			return err
		}
		// Every chain writer locks agents rows first (FOR NO KEY UPDATE or
		// FOR UPDATE: ROW SHARE on the table), before it reads an event.
		if _, err := tx.Exec(ctx, `LOCK TABLE agents IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		var cur int
		if err := tx.QueryRow(ctx, `SELECT period FROM ledger_partitions WHERE closed_at IS NULL FOR UPDATE`).Scan(&cur); err != nil {
			return err
		}
		next = cur + 1
		for _, p := range partitioned {
			part := fmt.Sprintf("%s_p%d", p.table, next)
			for _, q := range []string{
				// ATTACH (not CREATE … PARTITION OF) takes only SHARE UPDATE
				// EXCLUSIVE on the parent: readers go on.
				fmt.Sprintf(`CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED)`, part, p.table),
				fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s FOR VALUES IN (%d)`, p.table, part, next),
				fmt.Sprintf(`ALTER TABLE %s ALTER COLUMN period SET DEFAULT %d`, p.table, next),
			} {
				if _, err := tx.Exec(ctx, q); err != nil {
					return err
				}
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE ledger_partitions SET closed_at = $2 WHERE period = $1`, cur, at); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO ledger_partitions (period, opened_at) VALUES ($1, $2)`, next, at)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: rotate partitions: %w", classifyLock(err))
	}
	return next, nil
}

// droppable lists the closed partitions, not dropped yet, closed at or
// before cutoff: every row in them was written before it.
func droppable(ctx context.Context, db querier, cutoff time.Time) ([]int, error) {
	rows, err := db.Query(ctx, `SELECT period FROM ledger_partitions WHERE closed_at IS NOT NULL AND closed_at <= $1 AND dropped_at IS NULL ORDER BY period`, cutoff)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// dropPartition detaches partition period of every partitioned table,
// copies its live rows (past their chain's anchor) into the current
// partition and drops it, in one transaction. It returns how many rows
// were moved.
func (s *Store) dropPartition(ctx context.Context, period int, at time.Time) (int64, error) {
	var moved int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		moved = 0
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+lockTimeout+`'`); err != nil {
			return err
		}
		for _, p := range partitioned {
			if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s DETACH PARTITION %s_p%d`, p.table, p.table, period)); err != nil {
				return err
			}
		}
		for _, p := range partitioned {
			part := fmt.Sprintf("%s_p%d", p.table, period)
			var cols string
			if err := tx.QueryRow(ctx, `SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position)
			    FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1
			    AND is_generated = 'NEVER' AND column_name <> 'period'`, p.table).Scan(&cols); err != nil {
				return err
			}
			ct, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM %s r
			    WHERE r.seq > coalesce((SELECT x.seq FROM chain_anchors x WHERE x.agent_id = r.%s), 0)`,
				p.table, cols, cols, part, p.agent))
			if err != nil {
				return err
			}
			moved += ct.RowsAffected()
			if _, err := tx.Exec(ctx, `DROP TABLE `+part); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `UPDATE ledger_partitions SET dropped_at = $2 WHERE period = $1`, period, at)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: drop partition %d: %w", period, classifyLock(err))
	}
	return moved, nil
}

// classifyLock is classify, with a lock not granted within lockTimeout
// (SQLSTATE 55P03) reported as unavailable.
func classifyLock(err error) error {
	if isCode(err, "55P03") {
		return fmt.Errorf("%w: waited %s for the locks (a long query holds the tables; the next run tries again): %w", errkind.ErrUnavailable, lockTimeout, err)
	}
	return classify(err)
}

// liveRecord is the condition that a chain record r is past its chain's
// anchor: not pruned (pruned records in a droppable partition stay until
// it is dropped).
const liveRecord = `r.seq > coalesce((SELECT x.seq FROM chain_anchors x WHERE x.agent_id = r.agent_id), 0)`

// isCode reports whether err is a PostgreSQL error with SQLSTATE code.
func isCode(err error, code string) bool {
	var pgErr interface{ SQLState() string }
	return errors.As(err, &pgErr) && pgErr.SQLState() == code
}

// partitionedTable reports whether name is one of the partitioned tables or
// one of their partitions (an error on a row names its partition).
func partitionedTable(name, table string) bool {
	rest, ok := strings.CutPrefix(name, table)
	return ok && (rest == "" || strings.HasPrefix(rest, "_p"))
}
