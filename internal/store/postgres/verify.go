package postgres

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

// VerifyLedger implements service.LedgerStore: ledger.VerifyChains walks
// what this streams from one consistent snapshot (a read-only repeatable
// read transaction), holding one chain's state at a time.
func (s *Store) VerifyLedger(ctx context.Context) (ledger.VerifyReport, error) {
	var rep ledger.VerifyReport
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		es, err := erasures(ctx, tx)
		if err != nil {
			return err
		}
		as, err := anchors(ctx, tx, "")
		if err != nil {
			return err
		}
		ss, err := summaries(ctx, tx, "")
		if err != nil {
			return err
		}
		rep, err = ledger.VerifyChains(chainRows(ctx, tx, chainQuery), eventLinks(ctx, tx),
			ledger.WithErasures(es), ledger.WithAnchors(as), ledger.WithSummaries(ss))
		return err
	})
	if err != nil {
		return ledger.VerifyReport{}, fmt.Errorf("postgres: verify ledger: %w", classify(err))
	}
	return rep, nil
}

// chainQuery lists every record in chain order with its agent's head and
// its event row; the FULL JOIN also yields records whose agents row is
// missing (ledger_records has no foreign key) and agents without records.
const chainSelect = `SELECT coalesce(a.id, r.agent_id), a.id IS NOT NULL, coalesce(a.head_seq, 0), a.head_hash,
    r.seq IS NOT NULL, coalesce(r.seq, 0), coalesce(r.event_type, ''), coalesce(r.event_id, ''), coalesce(r.status, ''), r.hash,
    coalesce(r.correction_id, ''), r.received_at, coalesce(r.sealed_by, ''),
    c.id IS NOT NULL OR t.id IS NOT NULL OR o.id IS NOT NULL, coalesce(c.agent_id, t.provider_id, o.agent_id, ''),
    coalesce(c.buyer_id, t.buyer_id, o.buyer_id, ''), coalesce(c.operator_id, t.operator_id, o.operator_id, ''),
    coalesce(t.escrow_amount_cents, 0), coalesce(c.started_at, t.started_at, o.started_at),
    coalesce(c.completed_at, t.settled_at, o.decided_at), coalesce(c.status, t.status, o.status, ''), coalesce(c.seq, t.seq, o.seq, 0),
    coalesce(c.reported_agent_id, t.reported_agent_id, o.reported_agent_id), coalesce(c.reported_status, t.reported_status, o.reported_status),
    coalesce(c.voided_at, t.voided_at, o.voided_at) IS NOT NULL,
    k.id IS NOT NULL, coalesce(k.id, ''), coalesce(k.event_type, ''), coalesce(k.event_id, ''), coalesce(k.action, ''),
    coalesce(k.from_agent, ''), coalesce(k.to_agent, ''), coalesce(k.from_status, ''), coalesce(k.to_status, ''),
    coalesce(k.reason, ''), coalesce(k.appeal_id, ''), coalesce(k.actor, ''), k.created_at
  FROM agents a FULL JOIN ledger_records r ON r.agent_id = a.id
  LEFT JOIN conduit_sessions c ON r.event_type = 'conduit_session' AND c.id = r.event_id
  LEFT JOIN ap2_transactions t ON r.event_type = 'ap2_transaction' AND t.id = r.event_id
  LEFT JOIN task_offers o ON r.event_type = 'task_offer' AND o.id = r.event_id
  LEFT JOIN corrections k ON k.id = r.correction_id`

const chainQuery = chainSelect + ` ORDER BY 1, r.seq`

// chainRows streams query (chainSelect's columns). The yielded row is
// reused.
func chainRows(ctx context.Context, tx pgx.Tx, query string, args ...any) iter.Seq2[*ledger.ChainRow, error] {
	return func(yield func(*ledger.ChainRow, error) bool) {
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			yield(nil, err)
			return
		}
		defer rows.Close()
		var (
			r                             ledger.ChainRow
			typ, status, rowStatus        string
			started, ended, corrected     *time.Time
			received                      *time.Time
			reportedAgent, reportedStatus *string
			voided                        bool
			corType, action, from, to     string
		)
		rec, ev, cor := &r.Record, &r.Event, &r.Correction
		dest := []any{&r.AgentID, &r.Registered, &r.HeadSeq, &r.HeadHash, &r.HasRecord, &rec.Seq, &typ, &rec.EventID, &status, &r.StoredHash,
			&rec.CorrectionID, &received, &rec.SealedBy,
			&r.HasEvent, &ev.Event.AgentID, &ev.Event.BuyerID, &ev.Operator, &ev.Event.EscrowAmountCents, &started, &ended, &rowStatus, &ev.Seq,
			&reportedAgent, &reportedStatus, &voided,
			&r.HasCorrection, &cor.ID, &corType, &cor.EventID, &action, &cor.FromAgent, &cor.ToAgent, &from, &to,
			&cor.Reason, &cor.AppealID, &cor.By, &corrected}
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				yield(nil, err)
				return
			}
			rec.AgentID, rec.Type, rec.Status, rec.ReceivedAt = r.AgentID, ledger.Type(typ), ledger.Status(status), timeOrZero(received)
			ev.Event.Type, ev.Event.ID, ev.Event.Status = rec.Type, rec.EventID, ledger.Status(rowStatus)
			ev.Event.StartedAt, ev.Event.EndedAt = timeOrZero(started), timeOrZero(ended)
			ev.Corrected = nil
			ev.SetReported(reportedAgent, reportedStatus, voided)
			cor.EventType, cor.Action, cor.FromStatus, cor.ToStatus = ledger.Type(corType), ledger.CorrectionAction(action), ledger.Status(from), ledger.Status(to)
			cor.At = timeOrZero(corrected)
			if !yield(&r, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, err)
		}
	}
}

// eventLinksQuery is store.EventLinks.
var eventLinksQuery = store.EventLinks()

// eventLinks streams every event row with the chain record its seq names.
func eventLinks(ctx context.Context, tx pgx.Tx) iter.Seq2[*ledger.EventLink, error] {
	return func(yield func(*ledger.EventLink, error) bool) {
		rows, err := tx.Query(ctx, eventLinksQuery)
		if err != nil {
			yield(nil, err)
			return
		}
		defer rows.Close()
		var (
			l         ledger.EventLink
			typ, rtyp string
		)
		for rows.Next() {
			if err := rows.Scan(&typ, &l.ID, &l.AgentID, &l.Seq, &l.Linked, &rtyp, &l.RecordID); err != nil {
				yield(nil, err)
				return
			}
			l.Type, l.RecordType = ledger.Type(typ), ledger.Type(rtyp)
			if !yield(&l, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, err)
		}
	}
}
