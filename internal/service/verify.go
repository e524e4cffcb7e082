package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// Verifier is the use case of verification (spec §7.3): a presented
// passport checked offline (L1) with the keys in use and the formula
// versions accepted, then against this server's ledger (L2,
// verify_policy.go) when it holds the agent.
type Verifier struct {
	store    VerifyStore
	clock    clock
	keys     *signing
	formulas passport.Acceptance // Config.Formulas
	// certs remembers the certificates this process serves: the L2 check
	// of an agent's current passport reads their entries (ledgerCounts,
	// revoked) instead of the store.
	certs *Certificates
}

// Verification is the answer to POST /swarmscore/verify (spec §7.3) plus
// the reasons behind it and what each level of verification found.
type Verification struct {
	Valid          bool
	SignatureValid bool
	ScoreValid     bool
	// ExpiresAt is the passport's expires_at; zero when the document did
	// not carry a readable one.
	ExpiresAt         time.Time
	DetectedTampering bool
	Errors            []VerifyError
	// Warnings are findings that do not affect validity (members this
	// version does not know, a passport that names no agent, ...).
	Warnings []VerifyError
	// Checks says which levels ran and what each found; never nil.
	Checks Checks
	// Current is the agent's score now, when this server holds its
	// ledger (nil otherwise); see verify_policy.go.
	Current *CurrentScore
	// ChangedSinceIssue lists the events reported or corrected after the
	// passport was issued that changed its window (the ledger check is
	// then changed_since_issue).
	ChangedSinceIssue []ledger.EventKey
}

// VerifyError is one finding, with a stable code (passport.Code*, or one of
// the codes below).
type VerifyError = passport.Problem

// Codes this package adds to passport verification.
const (
	// CodeAgentMismatch: the passport names another agent than the one the
	// caller asked about. It counts as tampering: someone is presenting
	// another agent's passport as theirs.
	CodeAgentMismatch = api.CodeAgentMismatch
	// CodeLedgerMismatch: this server holds the agent's ledger, and the
	// counts it gives as of the passport's computed_at differ from the
	// passport's (L2, spec §7.1). The signature may be fine; the score is
	// not what the record supports.
	CodeLedgerMismatch = api.CodeLedgerMismatch
	// CodeAgentUnbound (warning): the caller named an agent but the
	// passport names none (spec §6.1 has no agent_id member), so nothing
	// binds it to that agent.
	CodeAgentUnbound = api.CodeAgentUnbound
	// CodePassportRevoked: this server issued the passport and has revoked
	// it, because its agent was erased (GDPR Art. 17, §11.4). The document
	// may be genuine and unexpired; it is refused all the same. The
	// message does not name the agent's pseudonym.
	CodePassportRevoked = api.CodePassportRevoked
)

// CheckResult is what one level of verification found.
type CheckResult = api.CheckResult

// The results a check can have. Which ones a check uses is listed with
// the check's name.
const (
	CheckOK            = api.CheckOK
	CheckFailed        = api.CheckFailed
	CheckExpired       = api.CheckExpired
	CheckNotYetValid   = api.CheckNotYetValid
	CheckConfirmed     = api.CheckConfirmed
	CheckMismatch      = api.CheckMismatch
	CheckNotApplicable = api.CheckNotApplicable
	// CheckRevoked: the ledger check of a passport this server revoked
	// (CodePassportRevoked); the ledger is not consulted.
	CheckRevoked = api.CheckRevoked
)

// The checks, in the order they are reported.
const (
	// CheckSignature (L1): ok, or failed (missing, malformed, not made by
	// the server's key, or the document could not be read).
	CheckSignature = api.CheckSignature
	// CheckConsistency (L1): ok when the document is a well-formed
	// passport whose score, tier, contributions, rates, escrow modifier,
	// gaps and expiry are what its own counts give; failed otherwise.
	CheckConsistency = api.CheckConsistency
	// CheckExpiry (L1): ok, expired, not_yet_valid (computed_at beyond the
	// clock-skew allowance), or failed when the document has no readable
	// expires_at.
	CheckExpiry = api.CheckExpiry
	// CheckLedger (L2): confirmed when this server's ledger gives the
	// passport's counts as of its computed_at, changed_since_issue when it
	// gave them as it stood at issue and reports received since changed
	// them (CheckChangedSinceIssue), mismatch when neither, revoked
	// when the server revoked the passport (its agent erased),
	// not_applicable when the server has no ledger for the agent (an agent
	// it has never seen, an offline verification, a document that names no
	// agent or could not be read).
	CheckLedger = api.CheckLedger
	// CheckAgent: ok when the passport names the agent the caller asked
	// about, mismatch when it names another (tampering), not_applicable
	// when the caller named none or the passport names none.
	CheckAgent = api.CheckAgent
)

// Check is one level of verification and what it found.
type Check = api.Check

// Checks lists the checks of a verification in a fixed order
// (CheckSignature, CheckConsistency, CheckExpiry, CheckLedger,
// CheckAgent). A new level is one more entry: the edges render every entry
// (a JSON object, api.Checks.MarshalJSON) without knowing the list.
type Checks = api.Checks

// L1Checks are the checks of an offline verification (passport.Verify
// alone, as `swarmscore passport verify` does): the document's own levels
// as passport.Verify found them (v.Checks), with the ledger and the agent
// binding not applicable.
func L1Checks(v *passport.Verification) Checks {
	return Checks{
		{Name: CheckSignature, Result: CheckResult(v.Checks.Signature)},
		{Name: CheckConsistency, Result: CheckResult(v.Checks.Consistency)},
		{Name: CheckExpiry, Result: CheckResult(v.Checks.Expiry)},
		{Name: CheckLedger, Result: CheckNotApplicable},
		{Name: CheckAgent, Result: CheckNotApplicable},
	}
}

// Verify checks a passport as received for agentID (the passport's own
// agent when agentID is ""), as of now (to the second).
//
// L1 is passport.Verify: the signature (against the server's keyring), the
// document's internal consistency under the formula versions Formulas
// accepts, and expiry. L2 runs when this server
// holds the ledger of the passport's agent: the counts recomputed from it
// as of the passport's computed_at must equal the passport's, or have
// equalled them as the ledger stood when it was issued (a report received
// since is ledger_changed_since_issue, a warning), else score_valid is
// false (ledger_mismatch). A passport true when issued whose agent's
// counts have changed since is superseded (a warning), and Current has
// the agent's score now (verify_policy.go). A genuine passport this server
// revoked (its agent erased) is passport_revoked, the ledger check
// revoked. A passport for another agent
// than agentID is detected_tampering. Checks says what each level found: a passport for an
// agent this server has never seen is valid on L1 alone, with the ledger
// check not_applicable rather than confirmed. An unreadable document is
// not an error: it is a Verification with valid false and the reasons.
// Errors: ErrUnavailable when the ledger cannot be read.
func (u *Verifier) Verify(ctx context.Context, doc []byte, agentID string) (Verification, error) {
	v := u.formulas.Verify(doc, u.keys.current(ctx).keys, u.clock.now())
	checks := L1Checks(v)
	var current *CurrentScore
	var changed []ledger.EventKey
	if p := v.Passport; p != nil {
		switch {
		case agentID == "":
		case p.AgentID == "":
			v.Warn(CodeAgentUnbound, fmt.Sprintf("the passport names no agent, so nothing binds it to agent %q", agentID))
		case p.AgentID != agentID:
			checks.Set(CheckAgent, CheckMismatch)
			v.Fail(CodeAgentMismatch, fmt.Sprintf("the passport is for agent %q, not %q", p.AgentID, agentID), true)
		default:
			checks.Set(CheckAgent, CheckOK)
		}
		revoked, err := u.revoked(ctx, p, v, checks)
		if err != nil {
			return Verification{}, err
		}
		if p.AgentID != "" && !revoked {
			current, changed, err = u.ledgerLevel(ctx, p, v, checks)
			if err != nil {
				return Verification{}, err
			}
		}
	}
	out := Verification{
		Valid:             v.Valid,
		SignatureValid:    v.SignatureValid,
		ScoreValid:        v.ScoreValid,
		DetectedTampering: v.DetectedTampering,
		Errors:            v.Errors,
		Warnings:          v.Warnings,
		Checks:            checks,
		Current:           current,
		ChangedSinceIssue: changed,
	}
	if v.ExpiresAt != nil {
		out.ExpiresAt = *v.ExpiresAt
	}
	return out, nil
}

// revoked refuses a passport whose stored record this server revoked
// (CodePassportRevoked) and reports whether it did. Only a passport whose
// signature checked is looked up: a forgery needs no query to be refused,
// and a revoked id must not be learnt by presenting made-up documents. The
// ledger level is then skipped: the erased id has no ledger here, and if
// it were registered again, that agent's ledger would say nothing about
// this passport.
func (u *Verifier) revoked(ctx context.Context, p *passport.Passport, v *passport.Verification, checks Checks) (bool, error) {
	if !v.SignatureValid || p.AgentPassportID == "" {
		return false, nil
	}
	// The passport of the agent's current entry is not revoked: an
	// erasure, which revokes, removes the entry.
	if c, ok, err := u.remembered(ctx, p.AgentID); err != nil {
		return false, err
	} else if ok && c.passportID == p.AgentPassportID {
		return false, nil
	}
	ip, err := u.store.Passport(ctx, p.AgentPassportID)
	switch {
	case errors.Is(err, errkind.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	case ip.RevokedAt.IsZero():
		return false, nil
	}
	checks.Set(CheckLedger, CheckRevoked)
	v.Fail(CodePassportRevoked, fmt.Sprintf("passport %s was revoked at %s: its agent's data was erased at its request (GDPR Art. 17)",
		p.AgentPassportID, rfc3339(ip.RevokedAt)), false)
	return true, nil
}

// ledgerCounts are the agent's counts as of asOf. A cache entry that
// answers asOf holds exactly those (any report that could change them
// invalidates it), and reading it is one indexed row, so verifying a
// current passport costs no window count; otherwise the ledger is counted.
// until is the first instant the counts may differ when they came from a
// cache entry (its ValidUntil), else asOf itself.
func (u *Verifier) ledgerCounts(ctx context.Context, agentID string, asOf time.Time) (c score.Counts, until time.Time, err error) {
	if m, ok, err := u.remembered(ctx, agentID); err != nil {
		return score.Counts{}, asOf, err
	} else if ok && !asOf.Before(m.computedAt) && asOf.Before(m.validUntil) {
		return m.result.Counts, m.validUntil, nil // the entry CachedScore would read
	}
	e, ok, err := u.store.CachedScore(ctx, agentID, asOf)
	if err != nil {
		return score.Counts{}, asOf, err
	}
	if ok {
		return e.Result.Counts, e.ValidUntil, nil
	}
	c, err = u.store.Counts(ctx, agentID, asOf)
	return c, asOf, err
}

// remembered is the entry of the agent's certificate this process serves,
// when it answers now (Certificates.remembered); ok is false without one.
func (u *Verifier) remembered(ctx context.Context, agentID string) (*memoCert, bool, error) {
	if u.certs == nil || agentID == "" {
		return nil, false, nil
	}
	return u.certs.remembered(ctx, agentID, u.clock.now())
}
