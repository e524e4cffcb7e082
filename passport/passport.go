// Package passport issues and verifies SwarmScore Execution Passports
// (draft-stone-swarmscore-v1 §6, §7.1 L1, §7.3, §8.1): a JSON document
// carrying an agent's score, signed with HMAC-SHA256 or Ed25519.
//
// The signature is hex (written in lower case, read in either) of the
// HMAC-SHA256 (keyed with the literal bytes of the configured secret) or of
// the Ed25519 signature of the RFC 8785 (JCS) canonical form of the
// document with issuer.signature removed. For the documents this package
// issues, JCS equals what a few lines of Node or Python produce (keys
// sorted recursively, no whitespace, UTF-8), so any language can verify
// them. A key with an id (Key.WithID) also writes issuer.kid and
// issuer.alg, inside the signature, so verifiers know which key to use;
// Ed25519 public keys are published as a JWK set (jwk.go).
//
// Verification canonicalizes the document as received, never a re-encoded
// struct: a field this version does not know is still covered by the signature
// (and reported as a warning), and no information is lost between what was
// signed and what is checked.
//
// A passport naming a key (issuer.kid) is verified with that key only, which
// must have the algorithm issuer.alg names and be accepted (KeyAccepted): a
// signature by a retired or revoked key is CodeKeyRetired or CodeKeyRevoked,
// not tampering. A key from a key history (Key.WithInterval) is accepted
// instead for passports computed in the interval it signed in, whatever
// its status, and refused with CodeKeyInactive outside it; a revoked key
// never is. A passport naming no key is tried against every key of its
// signature's algorithm accepted for its computed_at (so keys can be
// rotated by verifying with old and new for a while), then against the
// others, to tell a retired key's passport from a forgery. Ed25519 keys are never used as HMAC
// secrets. The score block, dimension contributions, rates, volume factors
// and escrow modifier must be exactly what the formula gives for the
// document's own counts; what §6.1 leaves open (an agent_id, the contents of
// qualification_gaps) is checked too, but only warned about.
//
// Of this module the package imports only score and two leaves that import
// nothing of it: internal/jcsstr (the JCS string escaper) and
// internal/errkind (which gives ErrInvalid its kind for the server's
// edges). Every error it returns matches ErrInvalid except a failure of the
// system's random source.
package passport

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/score"
)

// Wire constants of this version.
const (
	// Version is the swarmscore_version this package issues and verifies.
	Version = "1.0"
	// Validity is how long a passport is valid after computed_at (§7.2).
	Validity = 7 * 24 * time.Hour
	// MaxDocumentSize bounds a document accepted by Parse and Verify, so that
	// verifying untrusted input costs bounded time and memory.
	MaxDocumentSize = 64 << 10

	// LabelConduit and LabelAP2 are the dimension labels of §6.1.
	LabelConduit = "Conduit Execution"
	LabelAP2     = "AP2 Reliability"

	// MaxCount is the largest session count a passport carries. JSON numbers
	// are IEEE doubles in JCS, JavaScript and most verifiers, which represent
	// every integer up to 2^53−1 exactly and not all above.
	MaxCount = 1<<53 - 1

	maxAgentIDLen  = 128
	maxPlatformLen = 256
)

// ErrInvalid is matched (with errors.Is) by every error this package returns
// for bad input: a short key, an invalid agent ID or platform, an
// inconsistent score result, or a malformed document.
var ErrInvalid = errkind.Sentinel(errkind.ErrInvalid, "invalid passport")

// Passport is the Execution Passport of §6.1 plus the top-level agent_id that
// binds it to an agent (an extension: the spec's document names no agent).
// Fields are in the §6.1 order, which is json.Marshal's order; Sign
// publishes the canonical (sorted) order instead. Both verify.
//
// A Passport from New is consistent with its score.Result; Sign refuses one
// that is not. A Passport from Parse or Verify holds what the document says,
// which Verify checks.
type Passport struct {
	SwarmScoreVersion string `json:"swarmscore_version"`
	// AgentPassportID is a hyphenated version 4 UUID: a random one from
	// New, which a caller may replace with its own (a reproducible test
	// document, an id allocated elsewhere) before Sign, which refuses any
	// other form.
	AgentPassportID string `json:"agent_passport_id"`
	// AgentID is empty when the document has no agent_id (§6.1 has none:
	// CodeAgentIDMissing).
	AgentID           string         `json:"agent_id,omitempty"`
	Issuer            Issuer         `json:"issuer"`
	Score             Score          `json:"score"`
	Dimensions        Dimensions     `json:"dimensions"`
	EscrowModifier    score.Modifier `json:"escrow_modifier"`
	QualificationGaps []score.Gap    `json:"qualification_gaps"`
	FormulaVersion    string         `json:"formula_version"`
	ExpiresAt         time.Time      `json:"expires_at"`

	// What the spec leaves open and a document read left out, for
	// checkPassport's warnings: no agent_id member, and elements of
	// qualification_gaps that are not gaps this version reads (they are not
	// in QualificationGaps).
	agentIDAbsent, gapsUnread bool
	// formula is the formula New computed with, for Sign's check; nil for
	// a passport not from New (then V1).
	formula score.Formula
}

// Issuer says who computed the passport, when, with which key, and carries
// the signature.
type Issuer struct {
	Platform   string    `json:"platform"`
	ComputedAt time.Time `json:"computed_at"`
	// Alg and KID name the signing key's algorithm (AlgHS256, AlgEdDSA) and
	// id (an extension to §6.1, covered by the signature). Sign sets them
	// from the key, or leaves both empty for a key without an id; a
	// document may carry either, both or neither.
	Alg string `json:"alg,omitempty"`
	KID string `json:"kid,omitempty"`
	// Signature is lowercase hex: 64 characters for HS256, 128 for EdDSA;
	// empty before signing. A document signed in upper-case hex is read
	// into lower case.
	Signature string `json:"signature,omitempty"`
}

// Score is the composite score block.
type Score struct {
	Value               int        `json:"value"`
	Tier                score.Tier `json:"tier"`
	ConduitContribution int        `json:"conduit_contribution"`
	AP2Contribution     int        `json:"ap2_contribution"`
}

// Dimensions holds the two scored dimensions.
type Dimensions struct {
	TechnicalExecution    Dimension `json:"technical_execution"`
	CommercialReliability Dimension `json:"commercial_reliability"`
}

// Dimension is one scored dimension. SuccessRate and VolumeFactor are the
// nearest doubles to the exact fractions s/t and min(1, t/N); they are for
// display, the contribution is computed exactly by package score.
type Dimension struct {
	Label                 string  `json:"label"`
	Sessions90d           int64   `json:"sessions_90d"`
	SuccessfulSessions90d int64   `json:"successful_sessions_90d"`
	SuccessRate           float64 `json:"success_rate"`
	VolumeFactor          float64 `json:"volume_factor"`
	MaxContribution       int     `json:"max_contribution"`
	ActualContribution    int     `json:"actual_contribution"`
}

// Counts are the four 90-day counts the passport states.
func (p *Passport) Counts() score.Counts {
	return score.Counts{
		ConduitTotal:   p.Dimensions.TechnicalExecution.Sessions90d,
		ConduitSuccess: p.Dimensions.TechnicalExecution.SuccessfulSessions90d,
		AP2Total:       p.Dimensions.CommercialReliability.Sessions90d,
		AP2Success:     p.Dimensions.CommercialReliability.SuccessfulSessions90d,
	}
}

// New builds an unsigned V1 passport for agentID from r, computed at
// computedAt (truncated to the second, in UTC), expiring Validity later,
// with a fresh random (version 4) agent_passport_id. It is NewWith with
// score.V1: r must be what score.Compute returns for its counts.
func New(agentID, platform string, r score.Result, computedAt time.Time) (*Passport, error) {
	return NewWith(score.V1, agentID, platform, r, computedAt)
}

// NewWith builds an unsigned passport for agentID from r, the result of
// formula f, computed at computedAt (truncated to the second, in UTC),
// expiring Validity later, with a fresh random (version 4)
// agent_passport_id. Its formula_version is f's: issuing with a formula
// version is computing the result with it and passing it here.
//
// agentID must be 1–128 characters from [A-Za-z0-9._:-]; platform must be
// 1–256 bytes of UTF-8 without control characters; f must not be nil; r
// must be what f returns for its counts, with every count at most
// MaxCount. These failures match ErrInvalid. A failure of the random
// source does not.
func NewWith(f score.Formula, agentID, platform string, r score.Result, computedAt time.Time) (*Passport, error) {
	if f == nil {
		return nil, fmt.Errorf("%w: no formula", ErrInvalid)
	}
	if err := checkAgentID(agentID); err != nil {
		return nil, err
	}
	if err := checkPlatform(platform); err != nil {
		return nil, err
	}
	c := r.Counts
	if max(c.ConduitTotal, c.AP2Total) > MaxCount {
		return nil, fmt.Errorf("%w: session counts above %d cannot be carried exactly in JSON", ErrInvalid, int64(MaxCount))
	}
	var want score.Result
	var err error
	if f == score.V1 { // nearly every passport: a direct call, not through the interface
		want, err = score.Compute(c)
	} else {
		want, err = f.Compute(c)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if want != r {
		return nil, fmt.Errorf("%w: score result is not what formula %s gives for its counts", ErrInvalid, f.Version())
	}
	if computedAt.IsZero() {
		return nil, fmt.Errorf("%w: computed_at is the zero time", ErrInvalid)
	}
	computedAt = computedAt.UTC().Truncate(time.Second)
	expiresAt := computedAt.Add(Validity)
	if computedAt.Year() < 1 || expiresAt.Year() > 9999 {
		return nil, fmt.Errorf("%w: computed_at %s is outside the years RFC 3339 can carry", ErrInvalid, computedAt.Format(time.RFC3339))
	}
	id, err := uuid.NewRandom()
	if err != nil {
		return nil, fmt.Errorf("passport: generating agent_passport_id: %w", err)
	}
	conduit, ap2 := r.Conduit(), r.AP2()
	return &Passport{
		SwarmScoreVersion: Version,
		AgentPassportID:   id.String(),
		AgentID:           agentID,
		Issuer:            Issuer{Platform: platform, ComputedAt: computedAt},
		Score: Score{
			Value:               r.Score,
			Tier:                r.Tier,
			ConduitContribution: r.ConduitContribution,
			AP2Contribution:     r.AP2Contribution,
		},
		Dimensions: Dimensions{
			TechnicalExecution:    dimension(LabelConduit, conduit),
			CommercialReliability: dimension(LabelAP2, ap2),
		},
		EscrowModifier:    r.Escrow,
		QualificationGaps: r.Gaps(),
		FormulaVersion:    f.Version(),
		ExpiresAt:         expiresAt,
		formula:           f,
	}, nil
}

func dimension(label string, d score.Dimension) Dimension {
	return Dimension{
		Label:                 label,
		Sessions90d:           d.Total,
		SuccessfulSessions90d: d.Success,
		SuccessRate:           d.Rate(),
		VolumeFactor:          d.VolumeFactor(),
		MaxContribution:       d.MaxContribution,
		ActualContribution:    d.Contribution,
	}
}

// Sign signs p with k: it sets p.Issuer.Signature, and p.Issuer.KID and
// p.Issuer.Alg from k (both empty for a key without an id), and returns the
// signed document as compact RFC 8785 (JCS) canonical JSON: members sorted
// by name at every level, so issuer.signature is issuer's last member. That
// is not the §6.1 member order (nor json.Marshal's), which JSON does not
// make meaningful: verifiers here and elsewhere accept any order. The bytes
// are the signed message with the signature member spliced in, so Sign
// encodes once and jcs.Transform leaves the document unchanged.
//
// It refuses (matching ErrInvalid) a key that cannot sign (the zero Key, an
// Ed25519 public key) and a passport that Verify would not find valid and
// free of warnings apart from expiry: an invalid agent ID or platform, an
// unsupported version, or a score block or qualification gaps inconsistent
// with the counts. A nil QualificationGaps (allowed when there are none) is
// set to an empty slice, so that the document carries [] rather than null.
func (p *Passport) Sign(k Key) ([]byte, error) {
	if !k.CanSign() {
		return nil, fmt.Errorf("%w: signing key not initialised or public only (use NewKey or NewEd25519Key)", ErrInvalid)
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	if p.QualificationGaps == nil {
		p.QualificationGaps = []score.Gap{}
	}
	p.Issuer.KID, p.Issuer.Alg = "", ""
	if k.id != "" {
		p.Issuer.KID, p.Issuer.Alg = k.id, k.k.alg
	}
	buf := msgBufs.Get().(*[]byte)
	msg, at := appendMessage((*buf)[:0], p)
	var raw [ed25519.SignatureSize]byte
	var sig [2 * ed25519.SignatureSize]byte
	n := hex.Encode(sig[:], k.sign(raw[:0], msg))
	// The document is the message with the signature member spliced in.
	doc := bytes.Join([][]byte{msg[:at], []byte(`,"signature":"`), sig[:n], []byte(`"`), msg[at:]}, nil)
	*buf = msg
	msgBufs.Put(buf)
	p.Issuer.Signature = string(sig[:n])
	return doc, nil
}

// check is what Sign requires of a passport: everything Verify checks except
// the signature and expiry, with no warning either.
func (p *Passport) check() error {
	// The agent ID and platform errors first, wrapped.
	if err := checkAgentID(p.AgentID); err != nil {
		return err
	}
	if err := checkPlatform(p.Issuer.Platform); err != nil {
		return err
	}
	var r report
	if r.checkPassport(p, nil); len(r.errs) > 0 {
		return r.errs[0]
	}
	if len(r.warns) > 0 {
		return r.warns[0]
	}
	return nil
}

// checkAgentID enforces the agent ID alphabet shared with the service.
func checkAgentID(id string) error {
	if id == "" || len(id) > maxAgentIDLen {
		return fmt.Errorf("%w: agent_id must be 1 to %d characters, got %d", ErrInvalid, maxAgentIDLen, len(id))
	}
	if id == "." || id == ".." {
		return fmt.Errorf("%w: agent_id %q is a URL path segment with a special meaning, not an id", ErrInvalid, id)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !agentIDByte[c] {
			return fmt.Errorf("%w: agent_id has %q at byte %d; allowed are A-Z a-z 0-9 . _ : -", ErrInvalid, rune(c), i)
		}
	}
	return nil
}

// agentIDByte is the agent ID alphabet, as a table: checking every passport
// on sign and verify makes these loops hot.
var agentIDByte = func() (t [256]bool) {
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-" {
		t[c] = true
	}
	return t
}()

// checkPlatform keeps the platform name printable: it is shown to people.
func checkPlatform(s string) error {
	if s == "" || len(s) > maxPlatformLen {
		return fmt.Errorf("%w: issuer.platform must be 1 to %d bytes, got %d", ErrInvalid, maxPlatformLen, len(s))
	}
	printable := true // ASCII without control characters, the common case
	for i := 0; i < len(s) && printable; i++ {
		printable = 0x20 <= s[i] && s[i] < 0x7f
	}
	if printable {
		return nil
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: issuer.platform is not valid UTF-8", ErrInvalid)
	}
	for _, c := range s {
		if unicode.IsControl(c) {
			return fmt.Errorf("%w: issuer.platform contains control character %U", ErrInvalid, c)
		}
	}
	return nil
}
