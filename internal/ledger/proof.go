package ledger

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/jcsstr"
)

// Conduit proofs (spec §8.2 "audit Conduit session verification", §12.1
// proof_hash): a session reported VERIFIED may carry the SHA-256 of its
// proof bundle; an operator later uploads the bundle and the ledger
// records whether its SHA-256 is the recorded one. Each check is a record
// of the session's proof chain: hash = SHA-256(previous check's hash ‖
// canonical content), the content naming the session, the hash checked
// against, the bundle's hash and size, the outcome, who and when.

// ProofOutcome is what a check found, named as on the wire.
type ProofOutcome string

// The outcomes.
const (
	ProofMatched  ProofOutcome = "proof_matched"
	ProofMismatch ProofOutcome = "proof_mismatch"
)

// ProofRequiredCode is the code of a VERIFIED session refused for want of
// a proof_hash (serve and ingest --require-proof).
const ProofRequiredCode = "proof_required"

// NoProofHashCode is the code of a proof uploaded for a session that has
// no proof_hash to check it against.
const NoProofHashCode = "no_proof_hash"

// ProofCheck is one check of a proof bundle against a session's recorded
// proof_hash.
type ProofCheck struct {
	EventID string
	Seq     int64
	At      time.Time
	Actor   string
	// Size and SHA256 (64 lowercase hex) describe the bundle checked;
	// Expected is the session's proof_hash when it was checked.
	Size     int64
	SHA256   string
	Expected string
	Outcome  ProofOutcome
	Hash     Hash
}

// RequireProof refuses a VERIFIED Conduit session without a proof_hash:
// ErrInvalid with code proof_required, naming the field. Other events pass.
func RequireProof(e *Event) error {
	if e.Type == ConduitSession && e.Status == Verified && e.ProofHash == "" {
		return &FieldError{Field: "proof_hash", Reason: "is required for a VERIFIED session (this deployment requires proofs)", Code: ProofRequiredCode}
	}
	return nil
}

// DecideProof records the check of a bundle whose SHA-256 is sum and size
// is size against the session eventID whose recorded proof_hash is
// expected ("" for none), after the session's checks so far (prev, nil for
// none). Errors: ErrInvalid (a malformed id or sum), ErrConflict with code
// no_proof_hash when the session has no proof_hash.
func DecideProof(eventID, expected, sum string, size int64, actor string, at time.Time, prev *ProofCheck) (ProofCheck, error) {
	if err := CheckID("event_id", eventID); err != nil {
		return ProofCheck{}, err
	}
	if !ValidProofHash(sum) {
		return ProofCheck{}, fmt.Errorf("%w: the bundle's SHA-256 %q is not 64 lowercase hex digits", errkind.ErrInvalid, sum)
	}
	if expected == "" {
		return ProofCheck{}, errkind.WithCode(fmt.Errorf("%w: conduit_session %q was reported without a proof_hash: there is nothing to check the bundle against",
			errkind.ErrConflict, eventID), NoProofHashCode)
	}
	c := ProofCheck{EventID: eventID, Seq: 1, At: at.UTC().Truncate(time.Microsecond), Actor: actor, Size: size, SHA256: sum, Expected: expected, Outcome: ProofMismatch}
	if sum == expected {
		c.Outcome = ProofMatched
	}
	var prevHash Hash
	if prev != nil {
		c.Seq, prevHash = prev.Seq+1, prev.Hash
	}
	c.Hash = Link(prevHash, c.Content())
	return c, nil
}

// Content is the check's canonical content: RFC 8785 JSON of its members.
// Its bytes never change for a stored check.
func (c *ProofCheck) Content() []byte {
	b := make([]byte, 0, 320)
	b = append(b, `{"actor":`...)
	b = jcsstr.Append(b, c.Actor)
	b = append(b, `,"at":`...)
	b = appendJSONTime(b, c.At)
	b = append(b, `,"event_id":`...)
	b = jcsstr.Append(b, c.EventID)
	b = append(b, `,"expected":`...)
	b = jcsstr.Append(b, c.Expected)
	b = append(b, `,"outcome":`...)
	b = jcsstr.Append(b, string(c.Outcome))
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, c.Seq, 10)
	b = append(b, `,"sha256":`...)
	b = jcsstr.Append(b, c.SHA256)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, c.Size, 10)
	b = append(b, `,"type":"conduit_proof"}`...)
	return b
}

// VerifyProofs checks one session's checks, in seq order: numbered from
// 1, each link recomputed, each outcome what its hashes say. It returns
// nil or what is wrong first.
func VerifyProofs(checks []ProofCheck) error {
	var prev Hash
	for i := range checks {
		c := &checks[i]
		switch {
		case c.Seq != int64(i+1):
			return fmt.Errorf("proof check %d of %s is missing", i+1, c.EventID)
		case (c.SHA256 == c.Expected) != (c.Outcome == ProofMatched):
			return fmt.Errorf("proof check %d of %s says %s for its hashes", c.Seq, c.EventID, c.Outcome)
		case Link(prev, c.Content()) != c.Hash:
			return fmt.Errorf("proof check %d of %s does not hash to its stored hash", c.Seq, c.EventID)
		}
		prev = c.Hash
	}
	return nil
}

// HexHash is h in lowercase hex.
func HexHash(h Hash) string { return hex.EncodeToString(h[:]) }
