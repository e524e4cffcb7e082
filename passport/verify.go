package passport

import (
	"bytes"
	"crypto/hmac"
	"fmt"
	"sync"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/swarmscore/swarmscore/score"
)

// Problem codes. They are stable: clients may switch on them. Codes marked
// (warning) appear in Verification.Warnings and do not affect validity; all
// others appear in Verification.Errors.
const (
	// The document could not be read as a passport at all.
	CodeTooLarge     = "document_too_large" // over MaxDocumentSize bytes
	CodeInvalidJSON  = "invalid_json"       // not JSON, or not I-JSON (RFC 7493: bad UTF-8, lone surrogates, numbers beyond a double)
	CodeTrailingData = "trailing_data"      // anything but whitespace after the document
	CodeDuplicateKey = "duplicate_key"      // an object names a member twice, anywhere in the document
	CodeTooDeep      = "nesting_too_deep"   // arrays/objects nested deeper than a passport needs

	// The document is JSON but not a well-formed passport (score_valid false).
	CodeWrongType    = "wrong_type"    // a member has the wrong JSON type, or an integer is written as a fraction
	CodeMissingField = "missing_field" // a required member is absent
	CodeInvalidValue = "invalid_value" // a member has the right type but an impossible value (time format, agent_id, UUID, label, ...)
	CodeUnknownField = "unknown_field" // (warning) a member this version does not know; it is covered by the signature

	// Signature (signature_valid false).
	CodeSignatureMissing   = "signature_missing"   // no issuer.signature
	CodeSignatureMalformed = "signature_malformed" // issuer.signature is not 64 lowercase hex characters
	CodeSignatureMismatch  = "signature_mismatch"  // no key in the keyring produced this signature: detected_tampering
	CodeNoKeys             = "no_keys"             // the keyring is empty, so nothing can be verified

	// Internal consistency (score_valid false).
	CodeUnsupportedVersion        = "unsupported_version"         // swarmscore_version is not Version
	CodeUnsupportedFormulaVersion = "unsupported_formula_version" // formula_version is not score.FormulaVersion; nothing is recomputed
	CodeInvalidCounts             = "invalid_counts"              // successes above sessions, or a count above MaxCount
	CodeScoreMismatch             = "score_mismatch"              // score.value differs from the recomputed score
	CodeTierMismatch              = "tier_mismatch"
	CodeContributionMismatch      = "contribution_mismatch" // a contribution or max_contribution differs
	CodeRateMismatch              = "success_rate_mismatch"
	CodeVolumeFactorMismatch      = "volume_factor_mismatch"
	CodeEscrowMismatch            = "escrow_modifier_mismatch"
	CodeGapsMismatch              = "qualification_gaps_mismatch"
	CodeInvalidExpiry             = "invalid_expiry" // expires_at is not computed_at + 7 days

	// Time.
	CodeExpired = "expired" // the verification instant is at or after expires_at
)

// Problem is one finding of Parse or Verify: a stable snake_case code (the
// Code* constants, or one the caller adds with Fail) and a message for people.
// Messages quote at most a short prefix of document content and never key
// material. As an error it matches ErrInvalid.
type Problem struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error renders "code: message".
func (p Problem) Error() string { return p.Code + ": " + p.Message }

// Is makes errors.Is(p, ErrInvalid) true.
func (p Problem) Is(target error) bool { return target == ErrInvalid }

// Verification is the outcome of Verify, shaped as the §7.3 response plus the
// lists of errors and warnings. Valid is SignatureValid && ScoreValid && not
// expired && no error added with Fail. Errors and Warnings are never nil, so
// they encode as [] rather than null. ExpiresAt is nil when the document has
// no readable expires_at; otherwise it points at the ExpiresAt of the
// passport as parsed (Passport.ExpiresAt when Passport is set), not a copy.
//
// detected_tampering is true when the document carries a well-formed
// signature that no key in the keyring produced (its content was changed
// after signing, or it was signed with a key not in the ring), or when a
// caller reported tampering with Fail (for example an L2 count mismatch).
// A document that is merely malformed is invalid but not "tampered".
type Verification struct {
	Valid             bool       `json:"valid"`
	SignatureValid    bool       `json:"signature_valid"`
	ScoreValid        bool       `json:"score_valid"`
	ExpiresAt         *time.Time `json:"expires_at"`
	DetectedTampering bool       `json:"detected_tampering"`
	Errors            []Problem  `json:"errors"`
	Warnings          []Problem  `json:"warnings"`

	// Passport is the document as parsed, or nil if it is not a well-formed
	// passport (a CodeInvalidJSON, CodeWrongType, ... error). It is set even
	// when the signature or score is invalid, so callers can report what the
	// document claims; trust it only when Valid.
	Passport *Passport `json:"-"`
	// Document is the bytes verified: the caller's slice, not a copy, so
	// the caller must not modify it while the Verification is in use.
	Document []byte `json:"-"`
	// KeyIndex is the index in the keyring of the key that produced the
	// signature, or -1.
	KeyIndex int `json:"-"`
}

// Fail records an error found by a check outside this package (the agent ID
// the caller expected, an L2 comparison with ledger counts, ...) and makes the
// verification invalid; tampering also sets DetectedTampering. code should be
// stable snake_case.
func (v *Verification) Fail(code, message string, tampering bool) {
	v.Errors = append(v.Errors, Problem{code, message})
	v.Valid = false
	v.DetectedTampering = v.DetectedTampering || tampering
}

// Warn records a warning; validity is unchanged.
func (v *Verification) Warn(code, message string) {
	v.Warnings = append(v.Warnings, Problem{code, message})
}

// Verify checks doc, a passport as received, at instant at, against a keyring:
// the signature is valid if any key produced it (so keys can be rotated by
// verifying with old and new key for a while). It never panics and never
// fails: every problem, including unreadable input, is in the result.
//
// The signed message is the RFC 8785 canonical form of doc with the member
// issuer.signature removed, computed from the bytes received, so members this
// version does not know are covered (and listed as CodeUnknownField warnings).
// ScoreValid is true when the document is a well-formed passport whose score
// block, dimension contributions, rates, volume factors, escrow modifier and
// qualification gaps are exactly what score.Compute gives for its own counts,
// with supported versions and expires_at = computed_at + 7 days.
func Verify(doc []byte, keys []Key, at time.Time) *Verification {
	if v := verifyFast(doc, keys, at); v != nil {
		return v
	}
	return verifySlow(doc, keys, at)
}

// verifySlow is Verify for any document: the strict token walk (parse.go),
// then the RFC 8785 form computed by jcs from the bytes received. It decides
// every input, with the specific diagnostics; verifyFast must agree with it
// wherever verifyFast decides.
func verifySlow(doc []byte, keys []Key, at time.Time) *Verification {
	v := newVerification(doc)
	if len(doc) > MaxDocumentSize {
		v.Fail(CodeTooLarge, fmt.Sprintf("document is %d bytes, the limit is %d", len(doc), MaxDocumentSize), false)
		return v
	}
	var ps parser
	ps.parse(doc)
	if ps.fatal != nil {
		v.Errors = append(v.Errors, *ps.fatal)
		return v
	}
	buf := msgBufs.Get().(*[]byte)
	defer msgBufs.Put(buf)
	canonical, err := canonicalize(doc, &ps.sig, buf)
	if err != nil {
		v.Errors = append(v.Errors, *err)
		return v
	}
	v.Warnings = append(v.Warnings, ps.rep.warns...)
	v.SignatureValid = v.checkSignature(&ps.sig, canonical, keys)
	v.finish(ps.p, ps.rep.errs, ps.haveExpiry, at)
	return v
}

func newVerification(doc []byte) *Verification {
	return &Verification{
		Errors:   []Problem{},
		Warnings: []Problem{},
		Document: doc,
		KeyIndex: -1,
	}
}

// finish records the parse errors, or the consistency of the well-formed
// passport p, and expiry, then decides validity. The signature is checked.
func (v *Verification) finish(p *Passport, parseErrs []Problem, haveExpiry bool, at time.Time) {
	r := report{errs: parseErrs}
	if len(parseErrs) == 0 {
		v.Passport = p
		r.checkPassport(p)
	}
	v.Errors = append(v.Errors, r.errs...)
	v.ScoreValid = len(r.errs) == 0
	expired := false
	if haveExpiry {
		t := p.ExpiresAt
		v.ExpiresAt = &p.ExpiresAt // not a copy: one allocation less
		if !at.Before(t) {
			expired = true
			v.Errors = append(v.Errors, Problem{CodeExpired, fmt.Sprintf("expired at %s; verified at %s", t.Format(time.RFC3339), at.UTC().Format(time.RFC3339))})
		}
	}
	v.Valid = v.SignatureValid && v.ScoreValid && !expired
}

// checkSignature reports whether a key in keys made the signature over the
// canonical message msg, recording why not.
func (v *Verification) checkSignature(sig *sigInfo, msg []byte, keys []Key) bool {
	switch {
	case !sig.found:
		v.Errors = append(v.Errors, Problem{CodeSignatureMissing, "issuer.signature is missing"})
		return false
	case !sig.wellFormed:
		v.Errors = append(v.Errors, Problem{CodeSignatureMalformed, "issuer.signature must be a string of 64 lowercase hex characters (HMAC-SHA256)"})
		return false
	}
	usable := 0
	var got [32]byte
	for i, k := range keys {
		if !k.valid() {
			continue
		}
		usable++
		// Every key is tried, matched or not, so timing says nothing about
		// which key (if any) matched.
		if hmac.Equal(k.mac(got[:0], msg), sig.raw[:]) && v.KeyIndex < 0 {
			v.KeyIndex = i
		}
	}
	if usable == 0 {
		v.Errors = append(v.Errors, Problem{CodeNoKeys, "no verification key configured"})
		return false
	}
	if v.KeyIndex < 0 {
		v.DetectedTampering = true
		v.Errors = append(v.Errors, Problem{CodeSignatureMismatch, "the signature does not match the document under any configured key: it was altered after signing or signed with another key"})
		return false
	}
	return true
}

// msgBufs recycles the buffers that hold a signed message while it is MACed.
var msgBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// canonicalize returns the RFC 8785 form of doc with the issuer.signature
// member (located by the parser) cut out of the bytes as received. It is also
// the I-JSON gate: jcs rejects invalid UTF-8, lone surrogates and numbers a
// double cannot hold, which encoding/json lets through.
func canonicalize(doc []byte, sig *sigInfo, buf *[]byte) ([]byte, *Problem) {
	msg := doc
	if sig.found {
		b := append((*buf)[:0], doc[:sig.start]...)
		b = append(b, doc[sig.end:]...)
		*buf = b
		msg = b
	}
	out, err := jcs.Transform(msg)
	if err != nil {
		return nil, &Problem{CodeInvalidJSON, "document is not I-JSON (RFC 7493) and cannot be canonicalized (RFC 8785): " + err.Error()}
	}
	return out, nil
}

// report collects problems.
type report struct {
	errs  []Problem
	warns []Problem
}

func (r *report) fail(code, format string, args ...any) {
	r.errs = append(r.errs, Problem{code, fmt.Sprintf(format, args...)})
}

// checkPassport checks everything about a well-formed passport except its
// signature and expiry: versions, identifiers, and that the score block is
// exactly what the formula gives for the document's own counts.
func (r *report) checkPassport(p *Passport) {
	if p.SwarmScoreVersion != Version {
		r.fail(CodeUnsupportedVersion, "swarmscore_version %q is not supported (want %q)", clip(p.SwarmScoreVersion), Version)
	}
	if !isUUIDv4(p.AgentPassportID) {
		r.fail(CodeInvalidValue, "agent_passport_id %q is not a lowercase hyphenated UUID version 4", clip(p.AgentPassportID))
	}
	if err := checkAgentID(p.AgentID); err != nil {
		r.fail(CodeInvalidValue, "%s", unwrapMsg(err))
	}
	if err := checkPlatform(p.Issuer.Platform); err != nil {
		r.fail(CodeInvalidValue, "%s", unwrapMsg(err))
	}
	if !wireTime(p.Issuer.ComputedAt) || !wireTime(p.ExpiresAt) {
		r.fail(CodeInvalidValue, "issuer.computed_at and expires_at must be UTC whole seconds")
	}
	if !p.ExpiresAt.Equal(p.Issuer.ComputedAt.Add(Validity)) {
		r.fail(CodeInvalidExpiry, "expires_at %s is not computed_at %s + 7 days", p.ExpiresAt.UTC().Format(time.RFC3339), p.Issuer.ComputedAt.UTC().Format(time.RFC3339))
	}
	if p.Dimensions.TechnicalExecution.Label != LabelConduit {
		r.fail(CodeInvalidValue, "dimensions.technical_execution.label is %q, want %q", clip(p.Dimensions.TechnicalExecution.Label), LabelConduit)
	}
	if p.Dimensions.CommercialReliability.Label != LabelAP2 {
		r.fail(CodeInvalidValue, "dimensions.commercial_reliability.label is %q, want %q", clip(p.Dimensions.CommercialReliability.Label), LabelAP2)
	}
	if p.FormulaVersion != score.FormulaVersion {
		r.fail(CodeUnsupportedFormulaVersion, "formula_version %q is not implemented (this verifier implements %q); the score cannot be recomputed", clip(p.FormulaVersion), score.FormulaVersion)
		return
	}
	c := p.Counts()
	if err := c.Validate(); err != nil {
		r.fail(CodeInvalidCounts, "%s", err)
		return
	}
	if max(c.ConduitTotal, c.AP2Total) > MaxCount {
		r.fail(CodeInvalidCounts, "session counts above %d cannot be carried exactly in JSON", int64(MaxCount))
		return
	}
	res, _ := score.Compute(c) // cannot fail: c is valid
	if p.Score.Value != res.Score {
		r.fail(CodeScoreMismatch, "score.value is %d; the counts give %d", p.Score.Value, res.Score)
	}
	if p.Score.Tier != res.Tier {
		r.fail(CodeTierMismatch, "score.tier is %s; the counts give %s", p.Score.Tier, res.Tier)
	}
	if p.Score.ConduitContribution != res.ConduitContribution {
		r.fail(CodeContributionMismatch, "score.conduit_contribution is %d; the counts give %d", p.Score.ConduitContribution, res.ConduitContribution)
	}
	if p.Score.AP2Contribution != res.AP2Contribution {
		r.fail(CodeContributionMismatch, "score.ap2_contribution is %d; the counts give %d", p.Score.AP2Contribution, res.AP2Contribution)
	}
	r.checkDimension("technical_execution", &p.Dimensions.TechnicalExecution, res.Conduit())
	r.checkDimension("commercial_reliability", &p.Dimensions.CommercialReliability, res.AP2())
	if p.EscrowModifier != res.Escrow {
		r.fail(CodeEscrowMismatch, "escrow_modifier is %s; score %d gives %s", p.EscrowModifier, res.Score, res.Escrow)
	}
	var gapsBuf [3]score.Gap
	want := res.AppendGaps(gapsBuf[:0])
	if !equalGaps(p.QualificationGaps, want) {
		r.fail(CodeGapsMismatch, "qualification_gaps do not list the unmet requirements for the next tier (%d listed, %d expected)", len(p.QualificationGaps), len(want))
	}
}

func (r *report) checkDimension(name string, d *Dimension, want score.Dimension) {
	if d.ActualContribution != want.Contribution {
		r.fail(CodeContributionMismatch, "dimensions.%s.actual_contribution is %d; the counts give %d", name, d.ActualContribution, want.Contribution)
	}
	if d.MaxContribution != want.MaxContribution {
		r.fail(CodeContributionMismatch, "dimensions.%s.max_contribution is %d, want %d", name, d.MaxContribution, want.MaxContribution)
	}
	// Both sides are the correctly rounded double of the same fraction, so
	// equality is exact; see Dimension.
	if d.SuccessRate != want.Rate() {
		r.fail(CodeRateMismatch, "dimensions.%s.success_rate is %v; %d/%d is %v", name, d.SuccessRate, want.Success, want.Total, want.Rate())
	}
	if d.VolumeFactor != want.VolumeFactor() {
		r.fail(CodeVolumeFactorMismatch, "dimensions.%s.volume_factor is %v; min(1, %d/%d) is %v", name, d.VolumeFactor, want.Total, want.VolumeTarget, want.VolumeFactor())
	}
}

func equalGaps(a, b []score.Gap) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// wireTime reports whether t renders as RFC 3339 UTC whole seconds with Z
// (t.Format(time.RFC3339Nano) == t.UTC().Format(time.RFC3339), which the tests
// check) in a year of four digits, without formatting.
func wireTime(t time.Time) bool {
	offset := 0
	if t.Location() != time.UTC { // Zone is a lookup; UTC is the common case
		_, offset = t.Zone()
	}
	// With offset 0 the year is the UTC year: years 0 to 9999 are these
	// Unix times (which Year would find by a calendar computation).
	const first, last = -62167219200, 253402300799 // 0000-01-01T00:00:00Z, 9999-12-31T23:59:59Z
	sec := t.Unix()
	return offset == 0 && t.Nanosecond() == 0 && sec >= first && sec <= last
}

// isUUIDv4 reports whether s is what uuid.Parse accepts as a version 4,
// RFC 4122 variant UUID and uuid.UUID.String writes back unchanged: 36
// lowercase hex digits and hyphens, 8-4-4-4-12, version nibble 4, variant
// nibble 8, 9, a or b.
func isUUIDv4(s string) bool {
	if len(s) != 36 || s[14] != '4' || s[19] != '8' && s[19] != '9' && s[19] != 'a' && s[19] != 'b' {
		return false
	}
	for i := range len(s) {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return false
			}
		} else if lowerHexValue[s[i]] > 0xf {
			return false
		}
	}
	return true
}

// unwrapMsg drops the "invalid passport: " prefix of an ErrInvalid wrap.
func unwrapMsg(err error) string {
	return string(bytes.TrimPrefix([]byte(err.Error()), []byte(ErrInvalid.Error()+": ")))
}

// clip bounds document text quoted in a message.
func clip(s string) string {
	const n = 40
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
