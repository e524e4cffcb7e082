package postgres

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// VerifyLedger walks every chain and event row in one consistent snapshot;
// see service.LedgerStore. It streams, holding one chain's state at a time.
func (s *Store) VerifyLedger(ctx context.Context) (ledger.VerifyReport, error) {
	var rep ledger.VerifyReport
	broken := map[string]ledger.BrokenLink{}
	note := func(b ledger.BrokenLink) {
		if old, ok := broken[b.AgentID]; !ok || (b.Seq != 0 && (old.Seq == 0 || b.Seq < old.Seq)) {
			broken[b.AgentID] = b
		}
	}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := verifyChains(ctx, tx, &rep, note); err != nil {
			return err
		}
		return verifyEvents(ctx, tx, &rep, note)
	})
	if err != nil {
		return ledger.VerifyReport{}, fmt.Errorf("postgres: verify ledger: %w", classify(err))
	}
	for _, b := range broken {
		rep.Broken = append(rep.Broken, b)
	}
	slices.SortFunc(rep.Broken, func(a, b ledger.BrokenLink) int { return strings.Compare(a.AgentID, b.AgentID) })
	return rep, nil
}

// verifyChains checks each chain's links, positions and head.
func verifyChains(ctx context.Context, tx pgx.Tx, rep *ledger.VerifyReport, note func(ledger.BrokenLink)) error {
	// FULL JOIN: records whose agent row is missing (ledger_records has no
	// foreign key) come out with a NULL head.
	rows, err := tx.Query(ctx, `SELECT coalesce(a.id, r.agent_id), a.head_seq, a.head_hash, r.seq, r.event_type, r.event_id, r.content, r.hash
		FROM agents a FULL JOIN ledger_records r ON r.agent_id = a.id
		ORDER BY 1, r.seq`)
	if err != nil {
		return err
	}
	var (
		agent, cur       string
		headSeq          *int64
		headHash         []byte
		seq              *int64
		typ, id          *string
		content, hash    []byte
		lastSeq          int64
		prev             ledger.Hash
		curHeadSeq       int64
		curHeadHash      []byte
		damaged, started bool
	)
	finish := func() {
		if !started || damaged {
			return
		}
		if lastSeq != curHeadSeq || !bytes.Equal(prev[:], curHeadHash) {
			note(ledger.BrokenLink{AgentID: cur, Seq: lastSeq + 1, Reason: fmt.Sprintf(
				"chain head says %d records ending in %x, the records end at %d with %x", curHeadSeq, curHeadHash, lastSeq, prev[:])})
		}
	}
	_, err = pgx.ForEachRow(rows, []any{&agent, &headSeq, &headHash, &seq, &typ, &id, &content, &hash}, func() error {
		if !started || agent != cur {
			finish()
			rep.Agents++
			cur, curHeadHash = agent, slices.Clone(headHash)
			lastSeq, prev, damaged, started = 0, ledger.Hash{}, false, true
			if headSeq == nil {
				damaged = true
				note(ledger.BrokenLink{AgentID: agent, Seq: *seq, EventID: *id, Reason: "chain records exist for an agent that is not registered"})
			} else {
				curHeadSeq = *headSeq
			}
		}
		if seq == nil {
			return nil // an agent without records
		}
		rep.Records++
		if damaged {
			return nil
		}
		bad := func(reason string, args ...any) {
			damaged = true
			note(ledger.BrokenLink{AgentID: agent, Seq: *seq, EventID: *id, Reason: fmt.Sprintf(reason, args...)})
		}
		if *seq != lastSeq+1 {
			bad("record %d follows record %d", *seq, lastSeq)
			return nil
		}
		if h := ledger.Link(prev, content); !bytes.Equal(h[:], hash) {
			bad("hash does not match the previous link and the content")
			return nil
		}
		r, err := ledger.ParseCanonical(content)
		switch {
		case err != nil:
			bad("content: %v", err)
			return nil
		case r.Seq != *seq || r.Event.AgentID != agent || string(r.Event.Type) != *typ || r.Event.ID != *id:
			bad("content names %s %s of agent %s at seq %d", r.Event.Type, r.Event.ID, r.Event.AgentID, r.Seq)
			return nil
		}
		lastSeq = *seq
		copy(prev[:], hash)
		return nil
	})
	if err != nil {
		return err
	}
	finish()
	return nil
}

// verifyEvents checks that each event row holds exactly the content of the
// chain record its seq names, and that no record's event row is missing.
func verifyEvents(ctx context.Context, tx pgx.Tx, rep *ledger.VerifyReport, note func(ledger.BrokenLink)) error {
	rows, err := tx.Query(ctx, `
		SELECT 'conduit_session', e.id, e.agent_id, coalesce(e.buyer_id, ''), e.operator_id, e.status, 0::bigint,
			e.started_at, e.completed_at, e.seq, r.event_type, r.event_id, r.content
		FROM conduit_sessions e LEFT JOIN ledger_records r ON r.agent_id = e.agent_id AND r.seq = e.seq
		UNION ALL
		SELECT 'ap2_transaction', e.id, e.provider_id, e.buyer_id, e.operator_id, e.status, e.escrow_amount_cents,
			e.started_at, e.settled_at, e.seq, r.event_type, r.event_id, r.content
		FROM ap2_transactions e LEFT JOIN ledger_records r ON r.agent_id = e.provider_id AND r.seq = e.seq`)
	if err != nil {
		return err
	}
	var (
		rec         ledger.Record
		typ, status string
		started     time.Time
		ended       *time.Time
		rtyp, rid   *string
		content     []byte
	)
	e := &rec.Event
	_, err = pgx.ForEachRow(rows, []any{&typ, &e.ID, &e.AgentID, &e.BuyerID, &rec.Operator, &status, &e.EscrowAmountCents,
		&started, &ended, &rec.Seq, &rtyp, &rid, &content}, func() error {
		rep.Events++
		e.Type, e.Status, e.StartedAt, e.EndedAt = ledger.Type(typ), ledger.Status(status), started.UTC(), timeOrZero(ended)
		switch {
		case rtyp == nil:
			note(ledger.BrokenLink{AgentID: e.AgentID, EventID: e.ID, Reason: fmt.Sprintf("%s row names chain record %d, which does not exist", typ, rec.Seq)})
		case *rtyp != typ || *rid != e.ID:
			note(ledger.BrokenLink{AgentID: e.AgentID, Seq: rec.Seq, EventID: e.ID, Reason: fmt.Sprintf("%s row names chain record %d, which records %s %s", typ, rec.Seq, *rtyp, *rid)})
		case !bytes.Equal(rec.Canonical(), content):
			note(ledger.BrokenLink{AgentID: e.AgentID, Seq: rec.Seq, EventID: e.ID, Reason: fmt.Sprintf("%s row differs from its chain record", typ)})
		}
		return nil
	})
	if err != nil {
		return err
	}

	// A record whose event row is gone (deleted behind the store's back).
	rows, err = tx.Query(ctx, `
		SELECT r.agent_id, r.seq, r.event_type, r.event_id FROM ledger_records r
		WHERE NOT EXISTS (SELECT 1 FROM conduit_sessions e WHERE r.event_type = 'conduit_session' AND e.id = r.event_id AND e.agent_id = r.agent_id)
		  AND NOT EXISTS (SELECT 1 FROM ap2_transactions e WHERE r.event_type = 'ap2_transaction' AND e.id = r.event_id AND e.provider_id = r.agent_id)`)
	if err != nil {
		return err
	}
	var agent, rt, id string
	var seq int64
	_, err = pgx.ForEachRow(rows, []any{&agent, &seq, &rt, &id}, func() error {
		note(ledger.BrokenLink{AgentID: agent, Seq: seq, EventID: id, Reason: rt + " recorded in the chain has no event row"})
		return nil
	})
	return err
}
