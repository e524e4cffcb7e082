package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

const proofColumns = `event_id, seq, at, actor, size, sha256, expected, outcome, hash`

func scanProof(scan func(...any) error) (ledger.ProofCheck, error) {
	var c ledger.ProofCheck
	var outcome string
	var hash []byte
	if err := scan(&c.EventID, &c.Seq, &c.At, &c.Actor, &c.Size, &c.SHA256, &c.Expected, &outcome, &hash); err != nil {
		return c, err
	}
	c.At, c.Outcome = c.At.UTC(), ledger.ProofOutcome(outcome)
	copy(c.Hash[:], hash)
	return c, nil
}

// RecordProof implements service.ProofStore. The session's row is locked
// (FOR UPDATE) from the read of its last check to the insert, so checks of
// one session are numbered one after the other.
func (s *Store) RecordProof(ctx context.Context, eventID string, decide func(string, *ledger.ProofCheck) (ledger.ProofCheck, error)) (ledger.ProofCheck, error) {
	var c ledger.ProofCheck
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var expected *string
		err := tx.QueryRow(ctx, `SELECT proof_hash FROM conduit_sessions WHERE id = $1 FOR UPDATE`, eventID).Scan(&expected)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: no conduit_session %q", errkind.ErrNotFound, eventID)
		}
		if err != nil {
			return err
		}
		var prev *ledger.ProofCheck
		last, err := scanProof(tx.QueryRow(ctx, `SELECT `+proofColumns+` FROM conduit_proofs WHERE event_id = $1 ORDER BY seq DESC LIMIT 1`, eventID).Scan)
		switch {
		case err == nil:
			prev = &last
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		exp := ""
		if expected != nil {
			exp = *expected
		}
		if c, err = decide(exp, prev); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO conduit_proofs (`+proofColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			c.EventID, c.Seq, c.At, c.Actor, c.Size, c.SHA256, c.Expected, string(c.Outcome), c.Hash[:])
		return err
	})
	switch errkind.Of(err) {
	case errkind.Invalid, errkind.Conflict, errkind.NotFound:
		return ledger.ProofCheck{}, err
	}
	if err != nil {
		return ledger.ProofCheck{}, fmt.Errorf("postgres: proof check: %w", err)
	}
	return c, nil
}

// ProofChecks implements service.ProofStore.
func (s *Store) ProofChecks(ctx context.Context, eventID string) ([]ledger.ProofCheck, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+proofColumns+` FROM conduit_proofs WHERE event_id = $1 ORDER BY seq`, eventID)
	if err != nil {
		return nil, fmt.Errorf("postgres: read proof checks: %w", classify(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.ProofCheck, error) { return scanProof(r.Scan) })
	if err != nil {
		return nil, fmt.Errorf("postgres: read proof checks: %w", classify(err))
	}
	return out, nil
}
