package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

func checkProof(s service.Backend, id string, bundle string, at time.Time) (ledger.ProofCheck, error) {
	sum := sha256.Sum256([]byte(bundle))
	return s.RecordProof(context.Background(), id, func(expected string, prev *ledger.ProofCheck) (ledger.ProofCheck, error) {
		return ledger.DecideProof(id, expected, hex.EncodeToString(sum[:]), int64(len(bundle)), "op-a", at, prev)
	})
}

// testProofs: a session's proof_hash is recorded from the first report
// that carries one; checks of bundles against it are numbered and
// chained, matched or not; the signal figures count the VERIFIED sessions
// with a hash and with a matching check; an edited check breaks its chain.
func testProofs(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	sum := sha256.Sum256([]byte("bundle-1"))
	hash := hex.EncodeToString(sum[:])
	running := conduit("p1", "a", ledger.Running, start, time.Time{})
	verified := conduit("p1", "a", ledger.Verified, start, end)
	verified.ProofHash = hash
	other := verified
	other.ID, other.ProofHash = "p2", hash
	bare := conduit("p3", "a", ledger.Verified, start, end)
	wantOutcomes(t, ingest(t, s, "op-a", running, verified, other, bare), ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted, ledger.OutcomeAccepted)
	// A re-send with another hash changes nothing: the first one stays.
	again := verified
	again.ProofHash = "00" + hash[2:]
	wantOutcomes(t, ingest(t, s, "op-a", again), ledger.OutcomeDuplicate)

	c1, err := checkProof(s, "p1", "bundle-1", base)
	if err != nil || c1.Outcome != ledger.ProofMatched || c1.Seq != 1 || c1.Expected != hash {
		t.Fatalf("first check: %+v %v", c1, err)
	}
	c2, err := checkProof(s, "p1", "bundle-2", base.Add(time.Second))
	if err != nil || c2.Outcome != ledger.ProofMismatch || c2.Seq != 2 {
		t.Fatalf("second check: %+v %v", c2, err)
	}
	if c, err := checkProof(s, "p2", "forged", base); err != nil || c.Outcome != ledger.ProofMismatch {
		t.Fatalf("p2: %+v %v", c, err)
	}
	_, err = checkProof(s, "p3", "bundle-1", base)
	if wantKind(t, err, errkind.Conflict); errkind.Code(err) != ledger.NoProofHashCode {
		t.Errorf("a session without a hash: %v", err)
	}
	_, err = checkProof(s, "nope", "bundle-1", base)
	wantKind(t, err, errkind.NotFound)
	checks, err := s.ProofChecks(ctx(t), "p1")
	if err != nil || len(checks) != 2 || checks[0] != c1 || checks[1] != c2 {
		t.Fatalf("ProofChecks = %+v, %v", checks, err)
	}
	if err := ledger.VerifyProofs(checks); err != nil {
		t.Error(err)
	}
	fs, err := s.SignalFigures(ctx(t), base, "a", time.Hour)
	if err != nil || len(fs) != 1 || fs[0].VerifiedTotal != 3 || fs[0].VerifiedHashed != 2 || fs[0].VerifiedProven != 1 {
		t.Fatalf("SignalFigures = %+v, %v", fs, err)
	}
	h.Tamper.Exec(t, s, `UPDATE conduit_proofs SET outcome = 'proof_matched', sha256 = expected WHERE event_id = 'p2'`)
	checks, _ = s.ProofChecks(ctx(t), "p2")
	if ledger.VerifyProofs(checks) == nil {
		t.Error("an edited proof check verifies")
	}
}
