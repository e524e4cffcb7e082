package service

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

func warningCodes(v Verification) []string {
	var out []string
	for _, w := range v.Warnings {
		out = append(out, w.Code)
	}
	return out
}

// TestVerifySupersededAndChangedSinceIssue: a passport true when issued
// stays valid when the agent's score changes (superseded, with the
// current score) and when a back-dated report changes its own window
// (ledger_changed_since_issue, naming the report); a count nothing
// reported explains is still ledger_mismatch.
func TestVerifySupersededAndChangedSinceIssue(t *testing.T) {
	ctx := context.Background()
	a, c := newUseCases(t)
	issuedAt := c.t
	ingest(t, a, append(conduit("agent-1", "c", 80, 76, t0), ap2("agent-1", "t", 40, 38, t0)...))
	cert, err := a.Certificates.Certificate(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	v, err := a.Verifier.Verify(ctx, cert.Passport, "agent-1")
	if err != nil || !v.Valid || len(v.Warnings) != 0 || v.Current == nil || v.Current.Score != 760 || v.Current.Tier != score.TierStandard {
		t.Fatalf("fresh passport: %+v %v", v, err)
	}

	// An hour later 30 sessions fail, after the passport was issued and
	// ending after it: the passport was true, and is superseded.
	c.t = issuedAt.Add(time.Hour)
	ingest(t, a, conduit("agent-1", "late", 30, 0, issuedAt.Add(30*time.Minute)))
	v, err = a.Verifier.Verify(ctx, cert.Passport, "agent-1")
	if err != nil || !v.Valid || !v.ScoreValid || !sameChecks(v.Checks, "ok ok ok confirmed ok") ||
		!slices.Equal(warningCodes(v), []string{CodeSuperseded}) || v.Current == nil || v.Current.Score >= 760 ||
		!v.Current.ComputedAt.Equal(c.t) || len(v.ChangedSinceIssue) != 0 {
		t.Fatalf("superseded: %+v %v", v, err)
	}
	current := v.Current.Score

	// A report received now that ended before the passport was issued
	// changes the passport's own window: the ledger changed since issue.
	ingest(t, a, conduit("agent-1", "backdated", 1, 0, issuedAt.Add(-time.Minute)))
	v, err = a.Verifier.Verify(ctx, cert.Passport, "agent-1")
	want := []ledger.EventKey{{Type: ledger.ConduitSession, ID: "backdated-0"}}
	if err != nil || !v.Valid || !v.ScoreValid || v.DetectedTampering || len(v.Errors) != 0 ||
		!sameChecks(v.Checks, "ok ok ok changed_since_issue ok") || !slices.Equal(v.ChangedSinceIssue, want) ||
		!slices.Equal(warningCodes(v), []string{CodeLedgerChangedSinceIssue, CodeSuperseded}) || v.Current.Score > current {
		t.Fatalf("changed since issue: %+v %v", v, err)
	}

	// A count the server never signed, for an instant whose window has
	// changed since: nothing reported explains it.
	forged := sign(t, a, "agent-1", score.Counts{ConduitTotal: 80, ConduitSuccess: 80, AP2Total: 40, AP2Success: 40}, cert.ComputedAt)
	v, err = a.Verifier.Verify(ctx, forged, "agent-1")
	if err != nil || v.Valid || v.ScoreValid || !contains(codes(v), CodeLedgerMismatch) || !sameChecks(v.Checks, "ok ok ok mismatch ok") ||
		len(v.Warnings) != 0 || v.Current == nil {
		t.Fatalf("forged count: %+v %v", v, err)
	}
}

// TestChangedSinceIssueWithinTheSecond: a report received in the second
// of a passport's computed_at, before it was signed, is in the passport;
// the ledger as it stood at the end of that second explains it.
func TestChangedSinceIssueWithinTheSecond(t *testing.T) {
	ctx := context.Background()
	a, c := newUseCases(t)
	second := c.t
	ingest(t, a, conduit("agent-2", "c", 10, 9, t0))
	c.t = second.Add(300 * time.Millisecond)
	ingest(t, a, conduit("agent-2", "same-second", 1, 1, second.Add(-time.Hour)))
	c.t = second.Add(600 * time.Millisecond)
	cert, err := a.Certificates.Certificate(ctx, "agent-2")
	if err != nil || !cert.ComputedAt.Equal(second) {
		t.Fatalf("certificate: %+v %v", cert, err)
	}
	c.t = second.Add(time.Hour)
	ingest(t, a, conduit("agent-2", "later", 1, 0, second.Add(-time.Hour)))
	v, err := a.Verifier.Verify(ctx, cert.Passport, "agent-2")
	if err != nil || !v.Valid || !sameChecks(v.Checks, "ok ok ok changed_since_issue ok") ||
		!slices.Equal(v.ChangedSinceIssue, []ledger.EventKey{{Type: ledger.ConduitSession, ID: "later-0"}}) {
		t.Fatalf("report in the second of issue: %+v %v", v, err)
	}
}
