package sqlite

import (
	"context"
	"database/sql"
	"iter"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

// VerifyLedger implements service.LedgerStore: ledger.VerifyChains walks
// what this reads in one snapshot (a read transaction under WAL), so
// concurrent ingests do not look like breaks.
func (s *Store) VerifyLedger(ctx context.Context) (ledger.VerifyReport, error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return ledger.VerifyReport{}, dbErr("begin verify", err)
	}
	defer tx.Rollback()
	es, err := erasures(ctx, tx)
	if err != nil {
		return ledger.VerifyReport{}, dbErr("verify erasures", err)
	}
	as, err := anchors(ctx, tx, "")
	if err != nil {
		return ledger.VerifyReport{}, dbErr("verify anchors", err)
	}
	ss, err := summaries(ctx, tx, "")
	if err != nil {
		return ledger.VerifyReport{}, dbErr("verify summaries", err)
	}
	return ledger.VerifyChains(chainRows(ctx, tx, []string{chainQuery, emptyQuery}), eventLinks(ctx, tx),
		ledger.WithErasures(es), ledger.WithAnchors(as), ledger.WithSummaries(ss))
}

// chainQuery lists every record in chain order with its agent's head (NULL
// when the agents row is missing), its event row (NULL when deleted) and,
// for a correction's record, the correction (NULL when deleted); then the
// agents that have no record.
const chainSelect = `SELECT r.agent_id, a.id IS NOT NULL, COALESCE(a.head_seq, 0), a.head_hash, 1, r.seq, r.event_type, r.event_id, r.status, r.hash,
    COALESCE(r.correction_id, ''), r.received_at, COALESCE(r.sealed_by, ''),
    c.id IS NOT NULL OR t.id IS NOT NULL OR o.id IS NOT NULL, COALESCE(c.agent_id, t.provider_id, o.agent_id, ''),
    COALESCE(c.buyer_id, t.buyer_id, o.buyer_id, ''), COALESCE(c.operator_id, t.operator_id, o.operator_id, ''),
    COALESCE(t.escrow_amount_cents, 0), COALESCE(c.started_at, t.started_at, o.started_at, 0),
    COALESCE(c.completed_at, t.settled_at, o.decided_at), COALESCE(c.status, t.status, o.status, ''), COALESCE(c.seq, t.seq, o.seq, 0),
    COALESCE(c.reported_agent_id, t.reported_agent_id, o.reported_agent_id), COALESCE(c.reported_status, t.reported_status, o.reported_status),
    COALESCE(c.voided_at, t.voided_at, o.voided_at) IS NOT NULL,
    k.id IS NOT NULL, COALESCE(k.id, ''), COALESCE(k.event_type, ''), COALESCE(k.event_id, ''), COALESCE(k.action, ''),
    COALESCE(k.from_agent, ''), COALESCE(k.to_agent, ''), COALESCE(k.from_status, ''), COALESCE(k.to_status, ''),
    COALESCE(k.reason, ''), COALESCE(k.appeal_id, ''), COALESCE(k.actor, ''), COALESCE(k.created_at, 0)
  FROM ledger_records r
  LEFT JOIN agents a ON a.id = r.agent_id
  LEFT JOIN conduit_sessions c ON r.event_type = 'conduit_session' AND c.id = r.event_id
  LEFT JOIN ap2_transactions t ON r.event_type = 'ap2_transaction' AND t.id = r.event_id
  LEFT JOIN task_offers o ON r.event_type = 'task_offer' AND o.id = r.event_id
  LEFT JOIN corrections k ON k.id = r.correction_id`

const chainQuery = chainSelect + ` ORDER BY r.agent_id, r.seq`

const emptyQuery = `SELECT a.id, 1, a.head_seq, a.head_hash, 0, 0, '', '', '', NULL, '', NULL, '', 0, '', '', '', 0, 0, NULL, '', 0, NULL, NULL, 0,
    0, '', '', '', '', '', '', '', '', '', '', '', 0
  FROM agents a WHERE NOT EXISTS (SELECT 1 FROM ledger_records r WHERE r.agent_id = a.id)`

// chainRows yields the rows of each query in turn (chainSelect's columns),
// all run with args. The yielded row is reused.
func chainRows(ctx context.Context, tx *sql.Tx, queries []string, args ...any) iter.Seq2[*ledger.ChainRow, error] {
	return func(yield func(*ledger.ChainRow, error) bool) {
		var r ledger.ChainRow
		for _, q := range queries {
			rows, err := tx.QueryContext(ctx, q, args...)
			if err != nil {
				yield(nil, dbErr("verify chains", err))
				return
			}
			for rows.Next() {
				var (
					typ, status, rowStatus        string
					started, corrected            int64
					ended, received               sql.NullInt64
					reportedAgent, reportedStatus sql.NullString
					voided                        bool
					corType, action, from, to     string
				)
				rec, ev, cor := &r.Record, &r.Event, &r.Correction
				ev.Corrected = nil
				if err := rows.Scan(&r.AgentID, &r.Registered, &r.HeadSeq, &r.HeadHash, &r.HasRecord, &rec.Seq, &typ, &rec.EventID, &status, &r.StoredHash,
					&rec.CorrectionID, &received, &rec.SealedBy,
					&r.HasEvent, &ev.Event.AgentID, &ev.Event.BuyerID, &ev.Operator, &ev.Event.EscrowAmountCents, &started, &ended, &rowStatus, &ev.Seq,
					&reportedAgent, &reportedStatus, &voided,
					&r.HasCorrection, &cor.ID, &corType, &cor.EventID, &action, &cor.FromAgent, &cor.ToAgent, &from, &to,
					&cor.Reason, &cor.AppealID, &cor.By, &corrected); err != nil {
					rows.Close()
					yield(nil, dbErr("verify chains", err))
					return
				}
				rec.AgentID, rec.Type, rec.Status, rec.ReceivedAt = r.AgentID, ledger.Type(typ), ledger.Status(status), nullMicros(received)
				ev.Event.Type, ev.Event.ID, ev.Event.Status = rec.Type, rec.EventID, ledger.Status(rowStatus)
				ev.Event.StartedAt, ev.Event.EndedAt = fromMicros(started), nullMicros(ended)
				ev.SetReported(nullable(&reportedAgent), nullable(&reportedStatus), voided)
				cor.EventType, cor.Action, cor.FromStatus, cor.ToStatus = ledger.Type(corType), ledger.CorrectionAction(action), ledger.Status(from), ledger.Status(to)
				cor.At = fromMicros(corrected)
				if !yield(&r, nil) {
					rows.Close()
					return
				}
			}
			err = rows.Err()
			rows.Close()
			if err != nil {
				yield(nil, dbErr("verify chains", err))
				return
			}
		}
	}
}

// eventLinksQuery is store.EventLinks.
var eventLinksQuery = store.EventLinks()

// eventLinks yields every event row with the chain record its seq names.
func eventLinks(ctx context.Context, tx *sql.Tx) iter.Seq2[*ledger.EventLink, error] {
	return func(yield func(*ledger.EventLink, error) bool) {
		rows, err := tx.QueryContext(ctx, eventLinksQuery)
		if err != nil {
			yield(nil, dbErr("verify events", err))
			return
		}
		defer rows.Close()
		var l ledger.EventLink
		for rows.Next() {
			var typ, rtyp string
			if err := rows.Scan(&typ, &l.ID, &l.AgentID, &l.Seq, &l.Linked, &rtyp, &l.RecordID); err != nil {
				yield(nil, dbErr("verify events", err))
				return
			}
			l.Type, l.RecordType = ledger.Type(typ), ledger.Type(rtyp)
			if !yield(&l, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, dbErr("verify events", err))
		}
	}
}
