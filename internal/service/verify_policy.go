package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// Verification policy for a passport this server's ledger can judge (L2):
// what the ledger said when the passport was issued, what it says about
// that instant now, and what it says about the agent now.
//
//   - The ledger as of computed_at gives the passport's counts: confirmed.
//   - It does not, but the counts the ledger gave as it stood when the
//     passport was issued do, and the difference is reports or corrections
//     received since (a late, back-dated report; a chargeback): the
//     passport was true when issued. It stays valid, with the warning
//     ledger_changed_since_issue naming those events, and the ledger check
//     changed_since_issue.
//   - It does not, and nothing reported since explains it (a count the
//     server never signed, a ledger altered behind its back):
//     ledger_mismatch, score_valid false, as before.
//   - Whatever the above, when the agent's counts now differ from the
//     passport's and the passport was true when issued, it has been
//     superseded: it still verifies (it was true when issued), with the
//     warning superseded. The agent's current score and tier are in
//     Verification.Current whenever the server holds its ledger.

// Codes of the verification policy.
const (
	// CodeSuperseded (warning): the passport was true when issued, but the
	// agent's counts have changed since; Verification.Current has its
	// score and tier now.
	CodeSuperseded = api.CodeSuperseded
	// CodeLedgerChangedSinceIssue (warning): the ledger as of computed_at
	// now differs from the passport, because of reports or corrections
	// received after the passport was issued (listed in
	// Verification.ChangedSinceIssue); as the ledger stood at issue it
	// gave exactly the passport's counts.
	CodeLedgerChangedSinceIssue = api.CodeLedgerChangedSinceIssue
)

// CheckChangedSinceIssue is the ledger check's result for a passport
// the ledger confirmed as it stood at issue, and that reports received
// since have changed.
const CheckChangedSinceIssue = api.CheckChangedSinceIssue

// CurrentScore is an agent's score now, as this server's ledger gives it.
type CurrentScore struct {
	Score      int
	Tier       score.Tier
	ComputedAt time.Time
}

// ledgerLevel runs L2 for passport p and the policy above: it sets the
// ledger check, adds findings to v, and returns the agent's current score
// and the events received since issue that changed the passport's
// window. A passport for an agent this server has never seen is left to
// L1 (nothing returned). Errors: ErrUnavailable.
func (u *Verifier) ledgerLevel(ctx context.Context, p *passport.Passport, v *passport.Verification, checks Checks) (*CurrentScore, []ledger.EventKey, error) {
	at := p.Issuer.ComputedAt
	counts, until, err := u.ledgerCounts(ctx, p.AgentID, at)
	switch {
	case errors.Is(err, errkind.ErrNotFound):
		return nil, nil, nil // not our agent: L1 stands
	case err != nil:
		return nil, nil, err
	}
	claimed := p.Counts()
	trueAtIssue := counts == claimed
	var changed []ledger.EventKey
	if trueAtIssue {
		checks.Set(CheckLedger, CheckConfirmed)
	} else {
		changed, err = u.changedSinceIssue(ctx, p.AgentID, at, claimed)
		if err != nil {
			return nil, nil, err
		}
		if changed != nil {
			trueAtIssue = true
			checks.Set(CheckLedger, CheckChangedSinceIssue)
			v.Warn(CodeLedgerChangedSinceIssue, fmt.Sprintf(
				"the ledger as of %s now counts %s, not the passport's %s: %s reported or corrected after the passport was issued (%s); as the ledger stood then, it gave the passport's counts",
				rfc3339(at), countsText(counts), countsText(claimed), plural(len(changed), "event was", "events were"), keysText(changed)))
		} else {
			checks.Set(CheckLedger, CheckMismatch)
			v.Fail(CodeLedgerMismatch, fmt.Sprintf(
				"the ledger as of %s counts conduit %d/%d and ap2 %d/%d (success/total); the passport says %d/%d and %d/%d",
				rfc3339(at), counts.ConduitSuccess, counts.ConduitTotal, counts.AP2Success, counts.AP2Total,
				claimed.ConduitSuccess, claimed.ConduitTotal, claimed.AP2Success, claimed.AP2Total), false)
			v.ScoreValid = false
		}
	}
	cur, now, err := u.currentCounts(ctx, p.AgentID, counts, until)
	if err != nil {
		return nil, nil, err
	}
	r, err := score.Compute(cur)
	if err != nil {
		return nil, nil, err
	}
	current := &CurrentScore{Score: r.Score, Tier: r.Tier, ComputedAt: now}
	if trueAtIssue && cur != claimed {
		v.Warn(CodeSuperseded, fmt.Sprintf(
			"the agent's score has changed since this passport was issued: %d (%s) as of %s, where the passport says %d (%s); ask for its current certificate",
			r.Score, r.Tier, rfc3339(now), p.Score.Value, p.Score.Tier))
	}
	return current, changed, nil
}

// changedSinceIssue returns the events received since the passport was
// issued, when the ledger as it stood then gave the passport's counts
// (claimed) as of computed_at (at); nil when nothing explains the
// difference.
//
// The passport does not carry the instant it was signed, only
// computed_at, the second its counts were taken as of; it was signed in
// that second or soon after. A report received within that second may
// have been counted or not, so both ends are tried: the ledger as it
// stood at computed_at, then one second later.
func (u *Verifier) changedSinceIssue(ctx context.Context, agentID string, at time.Time, claimed score.Counts) ([]ledger.EventKey, error) {
	for _, issued := range []time.Time{at, at.Add(time.Second)} {
		changed, atIssue, err := u.store.ChangedSince(ctx, agentID, at, issued)
		if err != nil {
			return nil, err
		}
		if atIssue == claimed && len(changed) > 0 {
			return changed, nil
		}
	}
	return nil, nil
}

// currentCounts are the agent's counts now (to the second), read without
// writing (verifying issues nothing): known's, when they hold until after
// now (the cache entry that gave them still answers: the common case of a
// current passport, with no second query), else the cache entry answering
// now, else the ledger.
func (u *Verifier) currentCounts(ctx context.Context, agentID string, known score.Counts, until time.Time) (score.Counts, time.Time, error) {
	now := u.clock.now()
	if now.Before(until) {
		return known, now, nil
	}
	e, ok, err := u.store.CachedScore(ctx, agentID, now)
	if err != nil {
		return score.Counts{}, now, err
	}
	if ok {
		return e.Result.Counts, now, nil
	}
	c, err := u.store.Counts(ctx, agentID, now)
	return c, now, err
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func countsText(c score.Counts) string {
	return fmt.Sprintf("conduit %d/%d and ap2 %d/%d (success/total)", c.ConduitSuccess, c.ConduitTotal, c.AP2Success, c.AP2Total)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// keysText lists events as type:id, the first ten and how many more.
func keysText(keys []ledger.EventKey) string {
	const shown = 10
	parts := make([]string, 0, min(len(keys), shown)+1)
	for i, k := range keys {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(keys)-shown))
			break
		}
		parts = append(parts, string(k.Type)+":"+k.ID)
	}
	return strings.Join(parts, ", ")
}
