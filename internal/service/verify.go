package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// Verification is the answer to POST /swarmscore/verify (spec §7.3) plus
// the reasons behind it.
type Verification struct {
	Valid          bool
	SignatureValid bool
	ScoreValid     bool
	// ExpiresAt is the passport's expires_at; zero when the document did
	// not carry a readable one.
	ExpiresAt         time.Time
	DetectedTampering bool
	Errors            []VerifyError
}

// VerifyError is one finding, with a stable code (passport.Code*, or one of
// the codes below).
type VerifyError = passport.Problem

// Codes this package adds to passport verification.
const (
	// CodeAgentMismatch: the passport names another agent than the one the
	// caller asked about. It counts as tampering: someone is presenting
	// another agent's passport as theirs.
	CodeAgentMismatch = "agent_mismatch"
	// CodeLedgerMismatch: this server holds the agent's ledger, and the
	// counts it gives as of the passport's computed_at differ from the
	// passport's (L2, spec §7.1). The signature may be fine; the score is
	// not what the record supports.
	CodeLedgerMismatch = "ledger_mismatch"
)

// Verify checks a passport as received for agentID, as of now (to the second).
//
// L1 is passport.Verify: the signature (against the server's key), the
// document's internal consistency, and expiry. L2 runs when this server
// holds the ledger of the passport's agent: the counts recomputed from it
// as of the passport's computed_at must equal the passport's, else
// score_valid is false. A passport for another agent than agentID is
// detected_tampering. An unreadable document is not an error: it is a
// Verification with valid false and the reasons. Errors: ErrUnavailable
// when the ledger cannot be read.
func (u *UseCases) Verify(ctx context.Context, doc []byte, agentID string) (Verification, error) {
	v := passport.Verify(doc, []passport.Key{u.Key}, u.now())
	if p := v.Passport; p != nil {
		if p.AgentID != agentID {
			v.Fail(CodeAgentMismatch, fmt.Sprintf("the passport is for agent %q, not %q", p.AgentID, agentID), true)
		}
		counts, err := u.ledgerCounts(ctx, p.AgentID, p.Issuer.ComputedAt)
		switch {
		case errors.Is(err, errkind.ErrNotFound):
			// Not our agent: L2 is not possible here, L1 stands.
		case err != nil:
			return Verification{}, err
		case counts != p.Counts():
			v.Fail(CodeLedgerMismatch, fmt.Sprintf(
				"the ledger as of %s counts conduit %d/%d and ap2 %d/%d (success/total); the passport says %d/%d and %d/%d",
				p.Issuer.ComputedAt.UTC().Format(time.RFC3339),
				counts.ConduitSuccess, counts.ConduitTotal, counts.AP2Success, counts.AP2Total,
				p.Counts().ConduitSuccess, p.Counts().ConduitTotal, p.Counts().AP2Success, p.Counts().AP2Total), false)
			v.ScoreValid = false
		}
	}
	out := Verification{
		Valid:             v.Valid,
		SignatureValid:    v.SignatureValid,
		ScoreValid:        v.ScoreValid,
		DetectedTampering: v.DetectedTampering,
		Errors:            v.Errors,
	}
	if v.ExpiresAt != nil {
		out.ExpiresAt = *v.ExpiresAt
	}
	return out, nil
}

// ledgerCounts are the agent's counts as of asOf. A cache entry that
// answers asOf holds exactly those (any report that could change them
// invalidates it), and reading it is one indexed row, so verifying a
// current passport costs no window count; otherwise the ledger is counted.
func (u *UseCases) ledgerCounts(ctx context.Context, agentID string, asOf time.Time) (score.Counts, error) {
	e, ok, err := u.Store.CachedScore(ctx, agentID, asOf)
	if err != nil {
		return score.Counts{}, err
	}
	if ok {
		return e.Result.Counts, nil
	}
	return u.Store.Counts(ctx, agentID, asOf)
}
