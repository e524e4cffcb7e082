package service

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

func sign(t *testing.T, a *UseCases, agent string, c score.Counts, at time.Time) []byte {
	t.Helper()
	r, err := score.Compute(c)
	if err != nil {
		t.Fatal(err)
	}
	p, err := passport.New(agent, "elsewhere.example", r, at)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := p.Sign(a.cfg.Key)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func codes(v Verification) []string {
	var out []string
	for _, e := range v.Errors {
		out = append(out, e.Code)
	}
	return out
}

func TestVerifyLevels(t *testing.T) {
	a, c := newUseCases(t)
	ctx := context.Background()
	ingest(t, a, append(conduit("agent-1", "c", 80, 76, t0), ap2("agent-1", "t", 40, 38, t0)...))
	issued := c.t.Add(-time.Hour)

	// L1 and L2 agree.
	good := sign(t, a, "agent-1", score.Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38}, issued)
	v, err := a.Verifier.Verify(ctx, good, "agent-1")
	if err != nil || !v.Valid || len(v.Errors) != 0 || !sameChecks(v.Checks, "ok ok ok confirmed ok") {
		t.Fatalf("good passport: %+v %v", v, err)
	}
	// Without an agent to compare with, the passport's own is used.
	if v, err := a.Verifier.Verify(ctx, good, ""); err != nil || !v.Valid || !sameChecks(v.Checks, "ok ok ok confirmed not_applicable") {
		t.Fatalf("good passport, no agent asked: %+v %v", v, err)
	}

	// Correctly signed, internally consistent, but not what the ledger
	// says: L2 makes score_valid false. It is not tampering (the document
	// is as signed).
	inflated := sign(t, a, "agent-1", score.Counts{ConduitTotal: 80, ConduitSuccess: 80, AP2Total: 40, AP2Success: 40}, issued)
	v, err = a.Verifier.Verify(ctx, inflated, "agent-1")
	if err != nil || v.Valid || !v.SignatureValid || v.ScoreValid || v.DetectedTampering || !contains(codes(v), CodeLedgerMismatch) ||
		!sameChecks(v.Checks, "ok ok ok mismatch ok") {
		t.Fatalf("inflated passport: %+v %v", v, err)
	}

	// The same through the cache: an entry computed at the passport's
	// computed_at answers for the ledger.
	cert, err := a.Certificates.Certificate(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	verifyOK(t, a, cert.Passport, "agent-1")
	if e, ok, _ := a.store.CachedScore(ctx, "agent-1", cert.ComputedAt); !ok || !e.ComputedAt.Equal(cert.ComputedAt) {
		t.Fatalf("no cache entry at %v", cert.ComputedAt)
	}
	inflated2 := sign(t, a, "agent-1", score.Counts{ConduitTotal: 80, ConduitSuccess: 80, AP2Total: 40, AP2Success: 40}, cert.ComputedAt)
	if v, err := a.Verifier.Verify(ctx, inflated2, "agent-1"); err != nil || v.Valid || v.ScoreValid || !contains(codes(v), CodeLedgerMismatch) {
		t.Fatalf("inflated passport at the cache's instant: %+v %v", v, err)
	}

	// The recount is as of the passport's computed_at: a passport issued
	// before the events ended had zero counts then.
	early := sign(t, a, "agent-1", score.Counts{}, t0.Add(-time.Hour))
	saved := c.t
	c.t = t0.Add(24 * time.Hour) // while it has not expired
	if v, err := a.Verifier.Verify(ctx, early, "agent-1"); err != nil || !v.Valid {
		t.Fatalf("passport from before the events: %+v %v", v, err)
	}
	c.t = saved

	// An agent this server has no ledger for: L1 only.
	foreign := sign(t, a, "agent-elsewhere", score.Counts{ConduitTotal: 5, ConduitSuccess: 5}, issued)
	if v, err := a.Verifier.Verify(ctx, foreign, "agent-elsewhere"); err != nil || !v.Valid || !sameChecks(v.Checks, "ok ok ok not_applicable ok") {
		t.Fatalf("foreign agent: %+v %v", v, err)
	}

	// Someone else's passport.
	v, err = a.Verifier.Verify(ctx, good, "agent-2")
	if err != nil || v.Valid || !v.DetectedTampering || !contains(codes(v), CodeAgentMismatch) || !sameChecks(v.Checks, "ok ok ok confirmed mismatch") {
		t.Fatalf("agent mismatch: %+v %v", v, err)
	}

	// Edited after signing.
	tampered := bytes.Replace(good, []byte(`"value":760`), []byte(`"value":761`), 1)
	v, err = a.Verifier.Verify(ctx, tampered, "agent-1")
	if err != nil || v.Valid || v.SignatureValid || !v.DetectedTampering || !sameChecks(v.Checks, "failed failed ok confirmed ok") {
		t.Fatalf("tampered: %+v %v", v, err)
	}

	// Expired.
	c.t = issued.Add(7*24*time.Hour + time.Second)
	v, err = a.Verifier.Verify(ctx, good, "agent-1")
	if err != nil || v.Valid || !v.SignatureValid || !v.ExpiresAt.Equal(issued.Add(7*24*time.Hour)) || !sameChecks(v.Checks, "ok ok expired confirmed ok") {
		t.Fatalf("expired: %+v %v", v, err)
	}

	// Not a passport at all: a verdict, not an error.
	v, err = a.Verifier.Verify(ctx, []byte(`{"hello":1}`), "agent-1")
	if err != nil || v.Valid || len(v.Errors) == 0 || !v.ExpiresAt.IsZero() || !sameChecks(v.Checks, "failed failed failed not_applicable not_applicable") {
		t.Fatalf("garbage: %+v %v", v, err)
	}
	if b, err := v.Checks.MarshalJSON(); err != nil ||
		string(b) != `{"signature":"failed","consistency":"failed","expiry":"failed","ledger":"not_applicable","agent":"not_applicable"}` {
		t.Fatalf("checks JSON %s %v", b, err)
	}
}

// sameChecks compares the results of the checks, in order, with a
// space-separated list.
func sameChecks(cs Checks, want string) bool {
	var got []string
	for _, c := range cs {
		got = append(got, string(c.Result))
	}
	names := []string{CheckSignature, CheckConsistency, CheckExpiry, CheckLedger, CheckAgent}
	for i, c := range cs {
		if i >= len(names) || c.Name != names[i] || cs.Result(c.Name) != c.Result {
			return false
		}
	}
	return strings.Join(got, " ") == want
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
