package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

const proofColumns = `event_id, seq, at, actor, size, sha256, expected, outcome, hash`

func scanProof(scan func(...any) error) (ledger.ProofCheck, error) {
	var c ledger.ProofCheck
	var at int64
	var outcome string
	var hash []byte
	if err := scan(&c.EventID, &c.Seq, &at, &c.Actor, &c.Size, &c.SHA256, &c.Expected, &outcome, &hash); err != nil {
		return c, err
	}
	c.At, c.Outcome = fromMicros(at), ledger.ProofOutcome(outcome)
	copy(c.Hash[:], hash)
	return c, nil
}

// RecordProof implements service.ProofStore (BEGIN IMMEDIATE: nothing
// else writes between the read and the insert).
func (s *Store) RecordProof(ctx context.Context, eventID string, decide func(string, *ledger.ProofCheck) (ledger.ProofCheck, error)) (ledger.ProofCheck, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return ledger.ProofCheck{}, dbErr("begin proof check", err)
	}
	defer tx.Rollback()
	var expected sql.NullString
	err = tx.QueryRowContext(ctx, `SELECT proof_hash FROM conduit_sessions WHERE id = ?`, eventID).Scan(&expected)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.ProofCheck{}, fmt.Errorf("%w: no conduit_session %q", errkind.ErrNotFound, eventID)
	}
	if err != nil {
		return ledger.ProofCheck{}, dbErr("read proof hash", err)
	}
	var prev *ledger.ProofCheck
	last, err := scanProof(tx.QueryRowContext(ctx, `SELECT `+proofColumns+` FROM conduit_proofs WHERE event_id = ? ORDER BY seq DESC LIMIT 1`, eventID).Scan)
	switch {
	case err == nil:
		prev = &last
	case !errors.Is(err, sql.ErrNoRows):
		return ledger.ProofCheck{}, dbErr("read proof checks", err)
	}
	c, err := decide(expected.String, prev)
	if err != nil {
		return ledger.ProofCheck{}, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO conduit_proofs (`+proofColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.EventID, c.Seq, micros(c.At), c.Actor, c.Size, c.SHA256, c.Expected, string(c.Outcome), c.Hash[:]); err != nil {
		return ledger.ProofCheck{}, dbErr("record proof check", err)
	}
	return c, dbErr("commit proof check", tx.Commit())
}

// ProofChecks implements service.ProofStore.
func (s *Store) ProofChecks(ctx context.Context, eventID string) ([]ledger.ProofCheck, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+proofColumns+` FROM conduit_proofs WHERE event_id = ? ORDER BY seq`, eventID)
	if err != nil {
		return nil, dbErr("read proof checks", err)
	}
	defer rows.Close()
	var out []ledger.ProofCheck
	for rows.Next() {
		c, err := scanProof(rows.Scan)
		if err != nil {
			return nil, dbErr("read proof checks", err)
		}
		out = append(out, c)
	}
	return out, dbErr("read proof checks", rows.Err())
}
