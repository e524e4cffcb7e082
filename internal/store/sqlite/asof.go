package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
	"github.com/swarmscore/swarmscore/score"
)

// involves is store.Involves in SQLite.
func involves(t ledger.Type) string { return store.Involves(dialect, t) }

// ChangedSince implements service.LedgerStore: it loads, in one
// snapshot, the histories of the events that are or were the agent's in
// the window ending asOf — rows and report records — and leaves
// the rule to ledger.ChangedSince. Errors: ErrNotFound for an unknown
// agent, ErrUnavailable.
func (s *Store) ChangedSince(ctx context.Context, agentID string, asOf, issuedAt time.Time) ([]ledger.EventKey, score.Counts, error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, score.Counts{}, dbErr("begin changed since", err)
	}
	defer tx.Rollback()
	var one int
	if err := tx.QueryRowContext(ctx, `SELECT 1 FROM agents WHERE id = ?`, agentID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return nil, score.Counts{}, fmt.Errorf("%w: agent %q", errkind.ErrNotFound, agentID)
	} else if err != nil {
		return nil, score.Counts{}, dbErr("changed since", err)
	}
	hs, err := histories(ctx, tx, agentID, asOf)
	if err != nil {
		return nil, score.Counts{}, dbErr("changed since", err)
	}
	changed, atIssue := ledger.ChangedSince(agentID, hs, asOf, issuedAt)
	return changed, atIssue, nil
}

// histories loads the History of every event involves selects.
func histories(ctx context.Context, tx *sql.Tx, agentID string, asOf time.Time) ([]ledger.History, error) {
	lo, hi := ledger.Bounds(asOf)
	args := []any{agentID, micros(lo), micros(hi)}
	var hs []ledger.History
	at := map[ledger.EventKey]int{}
	reporters := map[string]bool{}
	for _, t := range []ledger.Type{ledger.ConduitSession, ledger.AP2Transaction} {
		rows, err := tx.QueryContext(ctx, eventSelect(t)+` e WHERE `+involves(t), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			e, err := scanEvent(t, rows.Scan)
			if err != nil {
				rows.Close()
				return nil, err
			}
			at[ledger.EventKey{Type: t, ID: e.Event.ID}] = len(hs)
			hs = append(hs, ledger.History{Event: e})
			reporters[e.Event.AgentID] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	// An event's reports are in the chain of the agent that reported it;
	// records carry no time to select by, so those chains are read whole.
	for _, a := range slices.Sorted(maps.Keys(reporters)) {
		rows, err := tx.QueryContext(ctx, `SELECT event_type, event_id, status, received_at FROM ledger_records
		    WHERE agent_id = ? AND correction_id IS NULL ORDER BY seq`, a)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var typ, id, status string
			var received sql.NullInt64
			if err := rows.Scan(&typ, &id, &status, &received); err != nil {
				rows.Close()
				return nil, err
			}
			i, ok := at[ledger.EventKey{Type: ledger.Type(typ), ID: id}]
			if !ok || hs[i].Event.Event.AgentID != a {
				continue
			}
			hs[i].Reports = append(hs[i].Reports, ledger.Receipt{Status: ledger.Status(status), ReceivedAt: nullMicros(received)})
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return hs, nil
}
