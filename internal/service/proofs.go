package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Proofs check Conduit proof bundles against the proof_hash their session
// was reported with (spec §8.2, §12.1) and record the outcome in the
// session's proof chain.
type Proofs struct {
	store   ProofStore
	clock   clock
	actions *actionLog
}

// MaxProofBytes is the largest proof bundle a check reads: 16 MiB.
const MaxProofBytes = 16 << 20

// CheckProof reads a proof bundle from r (at most MaxProofBytes), computes
// its SHA-256 and records its check against the session's proof_hash:
// ledger.ProofMatched or ledger.ProofMismatch. Errors: ErrInvalid (a
// malformed id, a bundle over the limit), ErrNotFound (no such session),
// ErrConflict with code no_proof_hash (the session has no proof_hash),
// ErrUnavailable.
func (u *Proofs) CheckProof(ctx context.Context, c Caller, eventID string, r io.Reader) (ledger.ProofCheck, error) {
	if err := ledger.CheckID("event_id", eventID); err != nil {
		return ledger.ProofCheck{}, err
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(r, MaxProofBytes+1))
	if err != nil {
		return ledger.ProofCheck{}, fmt.Errorf("reading the proof bundle: %w", err)
	}
	if n > MaxProofBytes {
		return ledger.ProofCheck{}, fmt.Errorf("%w: the proof bundle exceeds %d bytes", errkind.ErrInvalid, MaxProofBytes)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	at := u.clock.exact()
	check, err := u.store.RecordProof(ctx, eventID, func(expected string, prev *ledger.ProofCheck) (ledger.ProofCheck, error) {
		return ledger.DecideProof(eventID, expected, sum, n, c.Operator, at, prev)
	})
	u.actions.record(ctx, auth.ActProof, "", eventID, string(check.Outcome), err)
	return check, err
}

// ProofChecks returns a session's checks, oldest first (check them with
// ledger.VerifyProofs). Errors: ErrInvalid, ErrUnavailable.
func (u *Proofs) ProofChecks(ctx context.Context, eventID string) ([]ledger.ProofCheck, error) {
	if err := ledger.CheckID("event_id", eventID); err != nil {
		return nil, err
	}
	return u.store.ProofChecks(ctx, eventID)
}

// requireProofs splits a batch under --require-proof: the events to
// record, in order, and the refusals of VERIFIED sessions without a
// proof_hash by their index in events.
func requireProofs(events []ledger.Event) (keep []ledger.Event, pos []int, refused map[int]error) {
	for i := range events {
		if err := ledger.RequireProof(&events[i]); err != nil {
			if refused == nil {
				refused = map[int]error{}
			}
			refused[i] = err
			continue
		}
		keep, pos = append(keep, events[i]), append(pos, i)
	}
	return keep, pos, refused
}
