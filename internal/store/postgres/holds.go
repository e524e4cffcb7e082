package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
	"github.com/swarmscore/swarmscore/score"
)

func scanHold(scan func(...any) error) (ledger.Hold, error) {
	var h ledger.Hold
	var tier, state string
	var bp int32
	var score_, seq int64
	var hash []byte
	if err := scan(&h.TransactionID, &h.ProviderID, &h.BuyerID, &h.Operator, &h.AmountCents, &h.Currency, &score_, &tier, &bp,
		&h.PassportID, &h.KID, &h.HoldCents, &h.ReleasedCents, &state, &h.PayoutCents, &h.FeeCents, &h.RefundCents, &h.Reason,
		&h.CreatedAt, &h.UpdatedAt, &seq, &hash, &h.CorrectionID); err != nil {
		return h, err
	}
	t, err := score.ParseTier(tier)
	if err != nil {
		return h, fmt.Errorf("hold %s: %w", h.TransactionID, err)
	}
	h.Score, h.Seq = int(score_), seq
	h.Tier, h.Modifier, h.State = t, score.Modifier(bp), ledger.HoldState(state)
	h.CreatedAt, h.UpdatedAt = h.CreatedAt.UTC(), h.UpdatedAt.UTC()
	copy(h.Hash[:], hash)
	return h, nil
}

// ApplyHold implements service.HoldStore. A transaction-scoped advisory
// lock on the hold's id serializes every change of one hold, its creation
// included (a row lock cannot: there is no row yet), so the second of two
// concurrent changes reads the first's result.
func (s *Store) ApplyHold(ctx context.Context, id string, b ledger.Batch, decide ledger.HoldDecider) (ledger.HoldChange, error) {
	var ch ledger.HoldChange
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockHold(ctx, tx, id); err != nil {
			return err
		}
		var cur *ledger.Hold
		h, err := scanHold(tx.QueryRow(ctx, `SELECT `+store.HoldColumns+` FROM escrow_holds WHERE transaction_id = $1`, id).Scan)
		switch {
		case err == nil:
			cur = &h
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if ch, err = decide(cur); err != nil || ch.Unchanged {
			return err
		}
		if ch.Event != nil {
			// The transaction is the hold's operator's: whoever acts on the
			// hold, the event is reported as the operator that placed it
			// (the ledger lets only an event's reporter move it).
			b.Operator, b.Events = ch.Hold.Operator, []ledger.Event{*ch.Event}
			p, err := ledger.Prepare(b)
			if err != nil {
				return err
			}
			st, err := load(ctx, tx, p)
			if err != nil {
				return err
			}
			plan := p.Decide(st)
			if o := plan.Outcomes[0]; o.Status == ledger.OutcomeRejected {
				return fmt.Errorf("the ledger refuses the hold's %s report: %w", ch.Event.Status, o.Err)
			}
			if !plan.Empty() {
				if err := writePlan(ctx, tx, &plan); err != nil {
					return err
				}
			}
			// §12.1's escrow_modifier: the modifier that priced the hold.
			if _, err := tx.Exec(ctx, `UPDATE ap2_transactions SET escrow_modifier_bp = $1 WHERE id = $2 AND provider_id = $3 AND escrow_modifier_bp IS NULL`,
				ch.Hold.Modifier.BasisPoints(), ch.Hold.TransactionID, ch.Hold.ProviderID); err != nil {
				return err
			}
		}
		return saveHold(ctx, tx, cur, &ch)
	})
	switch errkind.Of(err) {
	case errkind.Invalid, errkind.Conflict, errkind.NotFound:
		// The rules' and the ledger's refusals, worded for the caller.
		return ledger.HoldChange{}, err
	}
	if err != nil {
		return ledger.HoldChange{}, fmt.Errorf("postgres: hold %s: %w", id, err)
	}
	return ch, nil
}

// lockHold takes the transaction-scoped lock that serializes the changes
// of hold id.
func lockHold(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('escrow_hold:' || $1, 0))`, id)
	return err
}

// saveHold writes a decided change of hold cur (nil when ch creates it):
// the hold, its step and its hold.updated message.
func saveHold(ctx context.Context, tx pgx.Tx, cur *ledger.Hold, ch *ledger.HoldChange) error {
	n := &ch.Hold
	var err error
	if ch.Created {
		_, err = tx.Exec(ctx, `INSERT INTO escrow_holds (`+store.HoldColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)`,
			n.TransactionID, n.ProviderID, n.BuyerID, n.Operator, n.AmountCents, n.Currency, n.Score, n.Tier.String(), n.Modifier.BasisPoints(),
			n.PassportID, n.KID, n.HoldCents, n.ReleasedCents, string(n.State), n.PayoutCents, n.FeeCents, n.RefundCents, n.Reason,
			n.CreatedAt, n.UpdatedAt, n.Seq, n.Hash[:], n.CorrectionID)
	} else {
		_, err = tx.Exec(ctx, `UPDATE escrow_holds SET state = $1, payout_cents = $2, fee_cents = $3, refund_cents = $4, reason = $5, updated_at = $6, seq = $7, hash = $8,
		  correction_id = $9 WHERE transaction_id = $10`, string(n.State), n.PayoutCents, n.FeeCents, n.RefundCents, n.Reason, n.UpdatedAt, n.Seq, n.Hash[:],
			n.CorrectionID, n.TransactionID)
	}
	if err != nil {
		return err
	}
	st := &ch.Step
	_, err = tx.Exec(ctx, `INSERT INTO escrow_hold_steps (`+store.HoldStepColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		st.TransactionID, st.Seq, string(st.Action), string(st.State), st.At, st.Actor, st.PayoutCents, st.FeeCents, st.RefundCents, st.Reason,
		st.Correction, st.Hash[:])
	if err != nil {
		return err
	}
	return emitWebhook(ctx, tx, store.HoldEvent(cur, *ch))
}

// correctHold applies correction c, written in tx, to the hold of the
// transaction it corrects, if there is one (ledger.CorrectHold). The
// caller holds the hold's lock (lockHold).
func correctHold(ctx context.Context, tx pgx.Tx, c *ledger.Correction) error {
	if c.EventType != ledger.AP2Transaction {
		return nil
	}
	h, err := scanHold(tx.QueryRow(ctx, `SELECT `+store.HoldColumns+` FROM escrow_holds WHERE transaction_id = $1`, c.EventID).Scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	ch, err := ledger.CorrectHold(&h, c)
	if err != nil {
		return err
	}
	return saveHold(ctx, tx, &h, &ch)
}

// Hold implements service.HoldStore.
func (s *Store) Hold(ctx context.Context, id string) (ledger.Hold, error) {
	h, err := scanHold(s.pool.QueryRow(ctx, `SELECT `+store.HoldColumns+` FROM escrow_holds WHERE transaction_id = $1`, id).Scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return h, fmt.Errorf("%w: no hold with transaction_id %q", errkind.ErrNotFound, id)
	}
	if err != nil {
		return h, fmt.Errorf("postgres: read hold: %w", classify(err))
	}
	return h, nil
}

// Holds implements service.HoldStore.
func (s *Store) Holds(ctx context.Context, q ledger.HoldQuery) ([]ledger.Hold, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+store.HoldColumns+` FROM escrow_holds
	  WHERE ($1 = '' OR state = $1) AND ($2 = '' OR provider_id = $2) ORDER BY created_at, transaction_id`, string(q.State), q.ProviderID)
	if err != nil {
		return nil, fmt.Errorf("postgres: list holds: %w", classify(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.Hold, error) { return scanHold(r.Scan) })
	if err != nil {
		return nil, fmt.Errorf("postgres: list holds: %w", classify(err))
	}
	return out, nil
}

// HoldSteps implements service.HoldStore.
func (s *Store) HoldSteps(ctx context.Context, id string) ([]ledger.HoldStep, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+store.HoldStepColumns+` FROM escrow_hold_steps WHERE transaction_id = $1 ORDER BY seq`, id)
	if err != nil {
		return nil, fmt.Errorf("postgres: read hold steps: %w", classify(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.HoldStep, error) {
		var st ledger.HoldStep
		var action, state string
		var at time.Time
		var hash []byte
		if err := r.Scan(&st.TransactionID, &st.Seq, &action, &state, &at, &st.Actor, &st.PayoutCents, &st.FeeCents, &st.RefundCents, &st.Reason, &st.Correction, &hash); err != nil {
			return st, err
		}
		st.Action, st.State, st.At = ledger.HoldAction(action), ledger.HoldState(state), at.UTC()
		copy(st.Hash[:], hash)
		return st, nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read hold steps: %w", classify(err))
	}
	return out, nil
}

// HoldStats implements service.HoldStore.
func (s *Store) HoldStats(ctx context.Context) (ledger.HoldStats, error) {
	out := ledger.HoldStats{ByState: map[ledger.HoldState]int64{}}
	for _, st := range ledger.HoldStates {
		out.ByState[st] = 0
	}
	rows, err := s.pool.Query(ctx, store.HoldStatsSQL)
	if err != nil {
		return out, fmt.Errorf("postgres: count holds: %w", classify(err))
	}
	defer rows.Close()
	for rows.Next() {
		var state string
		var n, cents int64
		if err := rows.Scan(&state, &n, &cents); err != nil {
			return out, fmt.Errorf("postgres: count holds: %w", classify(err))
		}
		out.ByState[ledger.HoldState(state)] = n
		if ledger.HoldState(state).Open() {
			out.HeldCents += cents
		}
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("postgres: count holds: %w", classify(err))
	}
	return out, nil
}
