package service

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/errkind"
)

// TestEraseAgent: only an operator erases, before the agent is looked up;
// the erased id then serves 404 at once (from memory too), its passport is
// passport_revoked, the opening opens the commitment to the id and to no
// other, and other agents are untouched.
func TestEraseAgent(t *testing.T) {
	a, _ := newUseCases(t)
	ctx := context.Background()
	a.Certificates.StartCacheWatch()
	ingest(t, a, append(conduit("gone", "g", 10, 9, t0), conduit("stays", "s", 10, 7, t0)...))
	tok, err := a.Tokens.CreateAgentToken(ctx, "op-1", "gone")
	if err != nil {
		t.Fatal(err)
	}
	// Remembered in every memo before the erasure.
	cert, err := a.Certificates.CertificateFor(ctx, anyone, "gone")
	if err != nil {
		t.Fatal(err)
	}
	verifyOK(t, a, cert.Passport, "gone")
	if _, err := a.Certificates.CertificateFor(ctx, anyone, "gone"); err != nil {
		t.Fatal(err)
	}
	other, err := a.Certificates.Score(ctx, "stays")
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		caller Caller
		want   error
	}{
		{anyone, errkind.ErrUnauthorized},
		{agentCaller("gone"), errkind.ErrForbidden},
		{agentCaller("stays"), errkind.ErrForbidden},
	} {
		for _, id := range []string{"gone", "ghost"} {
			if _, err := a.Rights.EraseAgent(ctx, c.caller, id, ""); !errors.Is(err, c.want) {
				t.Errorf("%+v erasing %s: %v, want %v", c.caller, id, err, c.want)
			}
		}
		if _, err := a.Rights.Erasures(ctx, c.caller); !errors.Is(err, c.want) {
			t.Errorf("%+v listing erasures: %v, want %v", c.caller, err, c.want)
		}
	}
	if _, err := a.Rights.EraseAgent(ctx, op, "ghost", ""); errkind.Of(err) != errkind.NotFound {
		t.Errorf("an unknown agent: %v", err)
	} else if d, ok := errkind.PublicDetail(err); !ok || !strings.Contains(d, "ghost") {
		t.Errorf("an unknown agent's public detail: %q %v", d, ok)
	}
	if _, err := a.Rights.EraseAgent(ctx, op, "bad id", ""); errkind.Of(err) != errkind.Invalid {
		t.Errorf("a malformed id: %v", err)
	}
	if _, err := a.Rights.EraseAgent(ctx, op, "gone", strings.Repeat("x", MaxErasureReasonLen+1)); errkind.Of(err) != errkind.Invalid {
		t.Errorf("a long reason: %v", err)
	}

	r, err := a.Rights.EraseAgent(ctx, op, "gone", "request from gone by e-mail")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^erased-[0-9a-f]{16}$`).MatchString(r.Pseudonym) || r.By != "op-1" || r.At.IsZero() || len(r.Digests) == 0 {
		t.Errorf("erasure %+v", r.Erasure)
	}
	if r.Reason != "request from "+r.Pseudonym+" by e-mail" {
		t.Errorf("reason %q", r.Reason)
	}
	if !VerifyErasureOpening(&r.Erasure, r.Opening, "gone") || VerifyErasureOpening(&r.Erasure, r.Opening, "stays") ||
		r.Identity != audit.Commit(audit.Agents, r.Opening, "gone") {
		t.Error("the opening does not open the commitment to the erased id alone")
	}

	// 404 at once for everyone, operators included, from memory or not.
	for _, c := range []Caller{anyone, op} {
		if _, err := a.Certificates.CertificateFor(ctx, c, "gone"); errkind.Of(err) != errkind.NotFound {
			t.Errorf("%+v: the erased id's certificate: %v", c, err)
		}
		if _, err := a.Certificates.ScoreFor(ctx, c, "gone"); errkind.Of(err) != errkind.NotFound {
			t.Errorf("%+v: the erased id's score: %v", c, err)
		}
	}
	if _, err := a.Tokens.Principal(ctx, tok.Secret); errkind.Of(err) != errkind.Unauthorized {
		t.Errorf("the erased agent's token: %v", err)
	}
	v, err := a.Verifier.Verify(ctx, cert.Passport, "")
	if err != nil {
		t.Fatal(err)
	}
	if v.Valid || !v.SignatureValid || v.DetectedTampering || len(v.Errors) != 1 || v.Errors[0].Code != CodePassportRevoked ||
		strings.Contains(v.Errors[0].Message, r.Pseudonym) || v.Current != nil {
		t.Errorf("the erased agent's passport: %+v", v)
	}
	if i := slices.IndexFunc(v.Checks, func(c Check) bool { return c.Name == CheckLedger }); i < 0 || v.Checks[i].Result != CheckRevoked {
		t.Errorf("checks %+v", v.Checks)
	}
	if now, err := a.Certificates.Score(ctx, "stays"); err != nil || now.Result != other.Result {
		t.Errorf("another agent's score: %+v %v, was %+v", now.Result, err, other.Result)
	}
	if _, err := a.Rights.EraseAgent(ctx, op, r.Pseudonym, ""); errkind.Of(err) != errkind.Conflict {
		t.Errorf("erasing a pseudonym: %v", err)
	}
	if _, err := a.Rights.EraseAgent(ctx, op, "gone", ""); errkind.Of(err) != errkind.NotFound {
		t.Errorf("erasing it again: %v", err)
	}

	es, err := a.Rights.Erasures(ctx, op)
	if err != nil || len(es) != 1 || es[0].Pseudonym != r.Pseudonym || es[0].Identity != r.Identity || es[0].ID != r.ID {
		t.Fatalf("erasures %+v %v", es, err)
	}
	rep, err := a.Signals.VerifyLedger(ctx)
	if err != nil || len(rep.Broken) > 0 {
		t.Errorf("ledger after the erasure: %+v %v", rep, err)
	}
}

// TestErasePseudonymsAreFresh: two erasures never share a pseudonym, an
// erasure id or a salt.
func TestErasePseudonymsAreFresh(t *testing.T) {
	a, _ := newUseCases(t)
	ctx := context.Background()
	ingest(t, a, append(conduit("one", "o", 2, 2, t0), conduit("two", "t", 2, 2, t0)...))
	r1, err := a.Rights.EraseAgent(ctx, op, "one", "")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := a.Rights.EraseAgent(ctx, op, "two", "")
	if err != nil {
		t.Fatal(err)
	}
	if r1.Pseudonym == r2.Pseudonym || r1.ID == r2.ID || r1.Opening == r2.Opening || r1.Identity == r2.Identity {
		t.Errorf("%+v\n%+v", r1, r2)
	}
	if _, err := a.Rights.eraseAgent(ctx, op, "two", "", strings.NewReader("short")); err == nil || errkind.Of(err) == errkind.NotFound {
		t.Errorf("a failing random source: %v", err)
	}
}
