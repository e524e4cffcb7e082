package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
	"github.com/swarmscore/swarmscore/score"
)

// involves is store.Involves in PostgreSQL.
func involves(t ledger.Type) string { return store.Involves(dialect, t) }

// ChangedSince implements service.LedgerStore: it loads, in one
// snapshot, the histories of the events that are or were the agent's in
// the window ending asOf — rows and report records — and leaves
// the rule to ledger.ChangedSince. Errors: ErrNotFound for an unknown
// agent, ErrUnavailable.
func (s *Store) ChangedSince(ctx context.Context, agentID string, asOf, issuedAt time.Time) ([]ledger.EventKey, score.Counts, error) {
	var hs []ledger.History
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM agents WHERE id = $1`, agentID).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
			return notFound(agentID)
		} else if err != nil {
			return err
		}
		var err error
		hs, err = histories(ctx, tx, agentID, asOf)
		return err
	})
	if err != nil {
		return nil, score.Counts{}, fmt.Errorf("postgres: changed since: %w", classify(err))
	}
	changed, atIssue := ledger.ChangedSince(agentID, hs, asOf, issuedAt)
	return changed, atIssue, nil
}

// histories loads the History of every event involves selects.
func histories(ctx context.Context, tx pgx.Tx, agentID string, asOf time.Time) ([]ledger.History, error) {
	lo, hi := ledger.Bounds(asOf)
	var hs []ledger.History
	at := map[ledger.EventKey]int{}
	reporters := map[string]bool{}
	for _, t := range []ledger.Type{ledger.ConduitSession, ledger.AP2Transaction} {
		cond := involves(t)
		rows, err := tx.Query(ctx, eventSelect(t)+` e WHERE `+cond, agentID, lo, hi)
		if err != nil {
			return nil, err
		}
		events := map[ledger.EventKey]ledger.StoredEvent{}
		if err := scanEvents(t, events)(rows); err != nil {
			return nil, err
		}
		for _, k := range slices.SortedFunc(maps.Keys(events), func(a, b ledger.EventKey) int { return strings.Compare(a.ID, b.ID) }) {
			at[k] = len(hs)
			hs = append(hs, ledger.History{Event: events[k]})
			reporters[events[k].Event.AgentID] = true
		}
	}
	// An event's reports are in the chain of the agent that reported it;
	// records carry no time to select by, so those chains are read whole.
	for _, a := range slices.Sorted(maps.Keys(reporters)) {
		rows, err := tx.Query(ctx, `SELECT event_type, event_id, status, received_at FROM ledger_records
		    WHERE agent_id = $1 AND correction_id IS NULL ORDER BY seq`, a)
		if err != nil {
			return nil, err
		}
		var typ, id, status string
		var received *time.Time
		_, err = pgx.ForEachRow(rows, []any{&typ, &id, &status, &received}, func() error {
			i, ok := at[ledger.EventKey{Type: ledger.Type(typ), ID: id}]
			if ok && hs[i].Event.Event.AgentID == a {
				hs[i].Reports = append(hs[i].Reports, ledger.Receipt{Status: ledger.Status(status), ReceivedAt: timeOrZero(received)})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return hs, nil
}
