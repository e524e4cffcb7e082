package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
	"github.com/swarmscore/swarmscore/score"
)

func scanHold(scan func(...any) error) (ledger.Hold, error) {
	var h ledger.Hold
	var tier, state string
	var bp int32
	var created, updated int64
	var hash []byte
	if err := scan(&h.TransactionID, &h.ProviderID, &h.BuyerID, &h.Operator, &h.AmountCents, &h.Currency, &h.Score, &tier, &bp,
		&h.PassportID, &h.KID, &h.HoldCents, &h.ReleasedCents, &state, &h.PayoutCents, &h.FeeCents, &h.RefundCents, &h.Reason,
		&created, &updated, &h.Seq, &hash, &h.CorrectionID); err != nil {
		return h, err
	}
	t, err := score.ParseTier(tier)
	if err != nil {
		return h, fmt.Errorf("hold %s: %w", h.TransactionID, err)
	}
	h.Tier, h.Modifier, h.State = t, score.Modifier(bp), ledger.HoldState(state)
	h.CreatedAt, h.UpdatedAt = fromMicros(created), fromMicros(updated)
	copy(h.Hash[:], hash)
	return h, nil
}

// ApplyHold implements service.HoldStore. BEGIN IMMEDIATE holds the write
// lock from the read of the hold to the commit, so a second change of the
// hold reads the first one's result.
func (s *Store) ApplyHold(ctx context.Context, id string, b ledger.Batch, decide ledger.HoldDecider) (ledger.HoldChange, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return ledger.HoldChange{}, dbErr("begin hold", err)
	}
	defer tx.Rollback()
	var cur *ledger.Hold
	h, err := scanHold(tx.QueryRowContext(ctx, `SELECT `+store.HoldColumns+` FROM escrow_holds WHERE transaction_id = ?`, id).Scan)
	switch {
	case err == nil:
		cur = &h
	case !errors.Is(err, sql.ErrNoRows):
		return ledger.HoldChange{}, dbErr("read hold", err)
	}
	ch, err := decide(cur)
	if err != nil || ch.Unchanged {
		return ch, err
	}
	if ch.Event != nil {
		// The transaction is the hold's operator's: whoever acts on the
		// hold, the event is reported as the operator that placed it
		// (the ledger lets only an event's reporter move it).
		b.Operator, b.Events = ch.Hold.Operator, []ledger.Event{*ch.Event}
		p, err := ledger.Prepare(b)
		if err != nil {
			return ledger.HoldChange{}, err
		}
		it := &ingestTx{tx: tx, now: micros(s.now())}
		st, err := it.load(ctx, p)
		if err != nil {
			return ledger.HoldChange{}, err
		}
		plan := p.Decide(st)
		if o := plan.Outcomes[0]; o.Status == ledger.OutcomeRejected {
			return ledger.HoldChange{}, fmt.Errorf("the ledger refuses the hold's %s report: %w", ch.Event.Status, o.Err)
		}
		if !plan.Empty() {
			if err := it.write(ctx, &plan); err != nil {
				return ledger.HoldChange{}, err
			}
		}
		// §12.1's escrow_modifier: the modifier that priced the hold.
		if _, err := tx.ExecContext(ctx, `UPDATE ap2_transactions SET escrow_modifier_bp = ? WHERE id = ? AND provider_id = ? AND escrow_modifier_bp IS NULL`,
			ch.Hold.Modifier.BasisPoints(), ch.Hold.TransactionID, ch.Hold.ProviderID); err != nil {
			return ledger.HoldChange{}, dbErr("record hold modifier", err)
		}
	}
	if err := saveHold(ctx, tx, cur, &ch); err != nil {
		return ledger.HoldChange{}, err
	}
	if err := tx.Commit(); err != nil {
		return ledger.HoldChange{}, dbErr("commit hold", err)
	}
	return ch, nil
}

// saveHold writes a decided change of hold cur (nil when ch creates it):
// the hold, its step and its hold.updated message.
func saveHold(ctx context.Context, tx *sql.Tx, cur *ledger.Hold, ch *ledger.HoldChange) error {
	n := &ch.Hold
	var err error
	if ch.Created {
		_, err = tx.ExecContext(ctx, `INSERT INTO escrow_holds (`+store.HoldColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			n.TransactionID, n.ProviderID, n.BuyerID, n.Operator, n.AmountCents, n.Currency, n.Score, n.Tier.String(), n.Modifier.BasisPoints(),
			n.PassportID, n.KID, n.HoldCents, n.ReleasedCents, string(n.State), n.PayoutCents, n.FeeCents, n.RefundCents, n.Reason,
			micros(n.CreatedAt), micros(n.UpdatedAt), n.Seq, n.Hash[:], n.CorrectionID)
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE escrow_holds SET state = ?, payout_cents = ?, fee_cents = ?, refund_cents = ?, reason = ?, updated_at = ?, seq = ?, hash = ?,
		  correction_id = ? WHERE transaction_id = ?`, string(n.State), n.PayoutCents, n.FeeCents, n.RefundCents, n.Reason, micros(n.UpdatedAt), n.Seq, n.Hash[:],
			n.CorrectionID, n.TransactionID)
	}
	if err != nil {
		return dbErr("save hold", err)
	}
	st := &ch.Step
	if _, err := tx.ExecContext(ctx, `INSERT INTO escrow_hold_steps (`+store.HoldStepColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		st.TransactionID, st.Seq, string(st.Action), string(st.State), micros(st.At), st.Actor, st.PayoutCents, st.FeeCents, st.RefundCents, st.Reason,
		st.Correction, st.Hash[:]); err != nil {
		return dbErr("record hold step", err)
	}
	return emitWebhook(ctx, tx, store.HoldEvent(cur, *ch))
}

// correctHold applies correction c, written in tx, to the hold of the
// transaction it corrects, if there is one (ledger.CorrectHold).
func correctHold(ctx context.Context, tx *sql.Tx, c *ledger.Correction) error {
	if c.EventType != ledger.AP2Transaction {
		return nil
	}
	h, err := scanHold(tx.QueryRowContext(ctx, `SELECT `+store.HoldColumns+` FROM escrow_holds WHERE transaction_id = ?`, c.EventID).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return dbErr("read hold", err)
	}
	ch, err := ledger.CorrectHold(&h, c)
	if err != nil {
		return err
	}
	return saveHold(ctx, tx, &h, &ch)
}

// Hold implements service.HoldStore.
func (s *Store) Hold(ctx context.Context, id string) (ledger.Hold, error) {
	h, err := scanHold(s.r.QueryRowContext(ctx, `SELECT `+store.HoldColumns+` FROM escrow_holds WHERE transaction_id = ?`, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return h, fmt.Errorf("%w: no hold with transaction_id %q", errkind.ErrNotFound, id)
	}
	return h, dbErr("read hold", err)
}

// Holds implements service.HoldStore.
func (s *Store) Holds(ctx context.Context, q ledger.HoldQuery) ([]ledger.Hold, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+store.HoldColumns+` FROM escrow_holds
	  WHERE (?1 = '' OR state = ?1) AND (?2 = '' OR provider_id = ?2) ORDER BY created_at, transaction_id`, string(q.State), q.ProviderID)
	if err != nil {
		return nil, dbErr("list holds", err)
	}
	defer rows.Close()
	var out []ledger.Hold
	for rows.Next() {
		h, err := scanHold(rows.Scan)
		if err != nil {
			return nil, dbErr("list holds", err)
		}
		out = append(out, h)
	}
	return out, dbErr("list holds", rows.Err())
}

// HoldSteps implements service.HoldStore.
func (s *Store) HoldSteps(ctx context.Context, id string) ([]ledger.HoldStep, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+store.HoldStepColumns+` FROM escrow_hold_steps WHERE transaction_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, dbErr("read hold steps", err)
	}
	defer rows.Close()
	var out []ledger.HoldStep
	for rows.Next() {
		var st ledger.HoldStep
		var action, state string
		var at int64
		var hash []byte
		if err := rows.Scan(&st.TransactionID, &st.Seq, &action, &state, &at, &st.Actor, &st.PayoutCents, &st.FeeCents, &st.RefundCents, &st.Reason, &st.Correction, &hash); err != nil {
			return nil, dbErr("read hold steps", err)
		}
		st.Action, st.State, st.At = ledger.HoldAction(action), ledger.HoldState(state), fromMicros(at)
		copy(st.Hash[:], hash)
		out = append(out, st)
	}
	return out, dbErr("read hold steps", rows.Err())
}

// HoldStats implements service.HoldStore.
func (s *Store) HoldStats(ctx context.Context) (ledger.HoldStats, error) {
	out := ledger.HoldStats{ByState: map[ledger.HoldState]int64{}}
	for _, st := range ledger.HoldStates {
		out.ByState[st] = 0
	}
	rows, err := s.r.QueryContext(ctx, store.HoldStatsSQL)
	if err != nil {
		return out, dbErr("count holds", err)
	}
	defer rows.Close()
	for rows.Next() {
		var state string
		var n, cents int64
		if err := rows.Scan(&state, &n, &cents); err != nil {
			return out, dbErr("count holds", err)
		}
		out.ByState[ledger.HoldState(state)] = n
		if ledger.HoldState(state).Open() {
			out.HeldCents += cents
		}
	}
	return out, dbErr("count holds", rows.Err())
}
