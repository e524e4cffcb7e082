package passport

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
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

	// What §6.1 leaves open (warnings: a passport from another issuer that
	// follows §6.1 is judged on what the spec defines).
	CodeAgentIDMissing = "agent_id_missing"            // (warning) no agent_id: nothing binds the passport to an agent (ERRATA E10)
	CodeGapsMismatch   = "qualification_gaps_mismatch" // (warning) qualification_gaps is not the list of unmet requirements this version computes

	// Signature (signature_valid false).
	CodeSignatureMissing   = "signature_missing"   // no issuer.signature
	CodeSignatureMalformed = "signature_malformed" // issuer.signature is not hex (either case) of a signature's length (64 for HS256, 128 for EdDSA)
	CodeSignatureMismatch  = "signature_mismatch"  // no key in the keyring produced this signature: detected_tampering
	CodeNoKeys             = "no_keys"             // no key of the signature's algorithm is configured, so nothing can be verified
	CodeUnknownKey         = "unknown_key"         // issuer.kid names no key of the keyring (another issuer's, or one this verifier no longer has)
	CodeUnsupportedAlg     = "unsupported_alg"     // issuer.alg is neither HS256 nor EdDSA
	CodeAlgMismatch        = "alg_mismatch"        // issuer.alg, or the signature's length, is not the algorithm of the key issuer.kid names: detected_tampering
	CodeKeyConfusion       = "key_confusion"       // an HMAC signature made with, or claimed for, an Ed25519 public key: detected_tampering
	CodeKeyRetired         = "key_retired"         // made by a retired key: genuine, no longer accepted
	CodeKeyRevoked         = "key_revoked"         // made by a revoked (compromised) key: refused
	CodeKeyInactive        = "key_inactive"        // made by a key of a key history on a passport computed outside the interval it signed in: refused

	// Internal consistency (score_valid false).
	CodeUnsupportedVersion        = "unsupported_version"           // swarmscore_version is not Version
	CodeUnsupportedFormulaVersion = "unsupported_formula_version"   // formula_version names no formula the verifier accepts (Acceptance); nothing is recomputed
	CodeFormulaOutOfWindow        = "formula_version_out_of_window" // formula_version is accepted, but not for a passport computed when this one was (ERRATA E40)
	CodeInvalidCounts             = "invalid_counts"                // successes above sessions, or a count above MaxCount
	CodeScoreMismatch             = "score_mismatch"                // score.value differs from the recomputed score
	CodeTierMismatch              = "tier_mismatch"
	CodeContributionMismatch      = "contribution_mismatch" // a contribution or max_contribution differs
	CodeRateMismatch              = "success_rate_mismatch"
	CodeVolumeFactorMismatch      = "volume_factor_mismatch"
	CodeEscrowMismatch            = "escrow_modifier_mismatch"
	CodeInvalidExpiry             = "invalid_expiry" // expires_at is not computed_at + 7 days

	// Time.
	CodeExpired     = "expired"       // the verification instant is at or after expires_at
	CodeNotYetValid = "not_yet_valid" // computed_at is after the verification instant by more than MaxClockSkew
)

// MaxClockSkew is how far computed_at may lie after the verification
// instant: the issuer's clock may run this far ahead of the verifier's.
// Beyond it a passport is CodeNotYetValid (issue 12), since a document
// dated in the future would stay "valid" past the 7 days its issuer meant.
const MaxClockSkew = 5 * time.Minute

// CheckResult is what one level of Verify found. The values are stable.
type CheckResult string

// The results of a check.
const (
	// CheckOK: the check passed.
	CheckOK CheckResult = "ok"
	// CheckFailed: the check ran and failed; Errors says why.
	CheckFailed CheckResult = "failed"
	// CheckExpired: the verification instant is at or after expires_at.
	CheckExpired CheckResult = "expired"
	// CheckNotYetValid: computed_at is after the verification instant by
	// more than MaxClockSkew.
	CheckNotYetValid CheckResult = "not_yet_valid"
)

// Checks says what each level of L1 verification found, so that callers
// need not infer it from error codes (ERRATA E28).
type Checks struct {
	// Signature: ok, or failed (missing, malformed, made by no key of the
	// keyring or by one no longer accepted, or the document is unreadable).
	Signature CheckResult `json:"signature"`
	// Consistency: ok when the document is a well-formed passport whose
	// score, tier, contributions, rates, escrow modifier and expiry are
	// what its own counts give; failed otherwise.
	Consistency CheckResult `json:"consistency"`
	// Expiry: ok, expired, not_yet_valid, or failed when the document has
	// no readable expires_at.
	Expiry CheckResult `json:"expiry"`
}

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
func (p Problem) Is(target error) bool { return errors.Is(ErrInvalid, target) }

// Verification is the outcome of Verify, shaped as the §7.3 response plus
// what each check found and the lists of errors and warnings. Valid is
// SignatureValid && ScoreValid && neither expired nor not yet valid && no
// error added with Fail. Errors and Warnings are never nil, so
// they encode as [] rather than null. ExpiresAt is nil when the document has
// no readable expires_at; otherwise it points at the ExpiresAt of the
// passport as parsed (Passport.ExpiresAt when Passport is set), not a copy.
//
// detected_tampering is true when the document carries a well-formed
// signature that no key in the keyring produced (its content was changed
// after signing, or it was signed with a key not in the ring), or one that
// claims a key it cannot be from (CodeAlgMismatch, CodeKeyConfusion), or
// when a caller reported tampering with Fail. A document that is merely
// malformed, names a key this verifier does not have, or was signed by a
// retired or revoked key is invalid but not "tampered".
type Verification struct {
	Valid bool `json:"valid"`
	// SignatureValid: a key of the keyring that is accepted signed the
	// RFC 8785 form of the document as received, without issuer.signature.
	SignatureValid bool `json:"signature_valid"`
	// ScoreValid: the document is a well-formed passport of supported
	// versions whose score block, dimensions and escrow modifier are what
	// its formula gives for its own counts, and whose expires_at is
	// computed_at + Validity.
	ScoreValid        bool       `json:"score_valid"`
	ExpiresAt         *time.Time `json:"expires_at"`
	DetectedTampering bool       `json:"detected_tampering"`
	Checks            Checks     `json:"checks"`
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
	// signature (an accepted key, or a retired or revoked one), or -1.
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

// Verify checks doc, a passport as received, against keys at instant at,
// accepting formula version "1.0" (score.V1) only; Acceptance.Verify accepts
// others. It never panics and never fails: every problem, unreadable input
// included, is in the result, as a Code* in Errors or Warnings. The result
// is Valid when an accepted key of keys signed the document's canonical
// form, its score block is what its own counts give, and
// computed_at − MaxClockSkew ≤ at < expires_at. The package doc says how
// the key is chosen and what is checked.
func Verify(doc []byte, keys []Key, at time.Time) *Verification {
	if v := verifyFast(doc, keys, at, Acceptance{}); v != nil {
		return v
	}
	return verifySlow(doc, keys, at, Acceptance{})
}

// verifySlow is Verify for any document: the strict token walk (parse.go),
// then the RFC 8785 form computed by jcs from the bytes received. It decides
// every input, with the specific diagnostics; verifyFast must agree with it
// wherever verifyFast decides.
func verifySlow(doc []byte, keys []Key, at time.Time, acc Acceptance) *Verification {
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
	v.SignatureValid = v.checkSignature(&ps.sig, &ps.p.Issuer, canonical, keys)
	v.finish(ps.p, ps.rep.errs, ps.haveComputed, ps.haveExpiry, at, &acc)
	return v
}

func newVerification(doc []byte) *Verification {
	return &Verification{
		Checks:   Checks{CheckFailed, CheckFailed, CheckFailed},
		Errors:   []Problem{},
		Warnings: []Problem{},
		Document: doc,
		KeyIndex: -1,
	}
}

// finish records the parse errors, or the consistency of the well-formed
// passport p under acc, and the times, then decides validity and the
// checks. The signature is checked.
func (v *Verification) finish(p *Passport, parseErrs []Problem, haveComputed, haveExpiry bool, at time.Time, acc *Acceptance) {
	r := report{errs: parseErrs}
	if len(parseErrs) == 0 {
		v.Passport = p
		r.checkPassport(p, acc)
	}
	v.Errors = append(v.Errors, r.errs...)
	v.Warnings = append(v.Warnings, r.warns...)
	v.ScoreValid = len(r.errs) == 0
	v.Checks.Signature = CheckFailed
	if v.SignatureValid {
		v.Checks.Signature = CheckOK
	}
	v.Checks.Consistency = CheckFailed
	if v.ScoreValid {
		v.Checks.Consistency = CheckOK
	}
	timely := true
	v.Checks.Expiry = CheckFailed
	if haveExpiry {
		t := p.ExpiresAt
		v.ExpiresAt = &p.ExpiresAt // not a copy: one allocation less
		v.Checks.Expiry = CheckOK
		if !at.Before(t) {
			timely = false
			v.Checks.Expiry = CheckExpired
			v.Errors = append(v.Errors, Problem{CodeExpired, fmt.Sprintf("expired at %s; verified at %s", t.Format(time.RFC3339), at.UTC().Format(time.RFC3339))})
		}
	}
	if haveComputed && p.Issuer.ComputedAt.Sub(at) > MaxClockSkew {
		timely = false
		v.Checks.Expiry = CheckNotYetValid
		v.Errors = append(v.Errors, Problem{CodeNotYetValid, fmt.Sprintf("computed_at %s is after the verification instant %s by more than the clock-skew allowance (%s)",
			p.Issuer.ComputedAt.Format(time.RFC3339), at.UTC().Format(time.RFC3339), MaxClockSkew)})
	}
	v.Valid = v.SignatureValid && v.ScoreValid && timely
}

// checkSignature reports whether an accepted key in keys made the signature
// over the canonical message msg, as the issuer's kid and alg say, recording
// the key in KeyIndex and why not in Errors.
func (v *Verification) checkSignature(sig *sigInfo, iss *Issuer, msg []byte, keys []Key) bool {
	switch {
	case !sig.found:
		v.Errors = append(v.Errors, Problem{CodeSignatureMissing, "issuer.signature is missing"})
		return false
	case !sig.wellFormed:
		v.Errors = append(v.Errors, Problem{CodeSignatureMalformed, "issuer.signature must be hex: 64 characters for HS256 (HMAC-SHA256), 128 for EdDSA (Ed25519)"})
		return false
	}
	raw := sig.raw[:sig.n]
	family := AlgHS256 // the algorithm the signature's length says
	if sig.n == ed25519.SignatureSize {
		family = AlgEdDSA
	}
	if sig.hasAlg && iss.Alg != AlgHS256 && iss.Alg != AlgEdDSA {
		v.Errors = append(v.Errors, Problem{CodeUnsupportedAlg, fmt.Sprintf("issuer.alg %q is not %s or %s", clip(iss.Alg), AlgHS256, AlgEdDSA)})
		return false
	}
	if sig.hasKID {
		i := -1
		for j, k := range keys {
			if k.valid() && k.id != "" && k.id == iss.KID {
				i = j
				break
			}
		}
		if i < 0 {
			v.Errors = append(v.Errors, Problem{CodeUnknownKey, fmt.Sprintf("issuer.kid %q names no key this verifier has (another issuer's key, or one since removed)", clip(iss.KID))})
			return false
		}
		k := keys[i]
		claimed := family
		if sig.hasAlg {
			claimed = iss.Alg
		}
		if claimed != k.k.alg || family != k.k.alg {
			v.DetectedTampering = true
			if k.k.alg == AlgEdDSA {
				v.Errors = append(v.Errors, Problem{CodeKeyConfusion, fmt.Sprintf("key %q is an Ed25519 public key; the passport claims or carries an HMAC signature, which its public key must never verify", k.id)})
			} else {
				v.Errors = append(v.Errors, Problem{CodeAlgMismatch, fmt.Sprintf("key %q is %s; the passport claims or carries an %s signature", k.id, k.k.alg, otherAlg(k.k.alg))})
			}
			return false
		}
		if !k.verify(msg, raw) {
			v.mismatch()
			return false
		}
		v.KeyIndex = i
		return v.accepted(k, iss.ComputedAt)
	}
	if sig.hasAlg && iss.Alg != family {
		v.Errors = append(v.Errors, Problem{CodeSignatureMalformed, fmt.Sprintf("issuer.signature has %d hex characters; an %s signature has %d", 2*sig.n, iss.Alg, 2*otherSize(sig.n))})
		return false
	}
	// Every accepted key is tried, matched or not, so timing says nothing
	// about which key (if any) matched.
	usable := 0
	for i, k := range keys {
		if !k.valid() || k.k.alg != family {
			continue
		}
		usable++
		if k.acceptsAt(iss.ComputedAt) && k.verify(msg, raw) && v.KeyIndex < 0 {
			v.KeyIndex = i
		}
	}
	if v.KeyIndex >= 0 {
		return true
	}
	// A key not accepted for this passport made it: genuine, but refused
	// as such.
	for i, k := range keys {
		if k.valid() && k.k.alg == family && !k.acceptsAt(iss.ComputedAt) && k.verify(msg, raw) {
			v.KeyIndex = i
			return v.accepted(k, iss.ComputedAt)
		}
	}
	if family == AlgHS256 && confused(msg, raw, keys) {
		v.DetectedTampering = true
		v.Errors = append(v.Errors, Problem{CodeKeyConfusion, "the HMAC signature was made with an Ed25519 public key of the keyring as its secret: a forgery"})
		return false
	}
	if usable == 0 {
		v.Errors = append(v.Errors, Problem{CodeNoKeys, fmt.Sprintf("no %s verification key configured", family)})
		return false
	}
	v.mismatch()
	return false
}

func (v *Verification) mismatch() {
	v.DetectedTampering = true
	v.Errors = append(v.Errors, Problem{CodeSignatureMismatch, "the signature does not match the document under any configured key: it was altered after signing or signed with another key"})
}

// accepted reports whether k, which made the signature on a passport
// computed at computed, is accepted, and records why not.
func (v *Verification) accepted(k Key, computed time.Time) bool {
	if k.acceptsAt(computed) {
		return true
	}
	name := "a key without an id"
	if k.id != "" {
		name = fmt.Sprintf("key %q", k.id)
	}
	switch {
	case k.status == KeyRevoked && k.iv != nil && !k.iv.RevokedAt.IsZero():
		at := k.iv.RevokedAt.UTC().Format(time.RFC3339)
		msg := fmt.Sprintf("the passport was signed by %s, revoked (compromised) at %s, and is dated after the revocation", name, at)
		if !computed.After(k.iv.RevokedAt) {
			msg = fmt.Sprintf("the passport was signed by %s, revoked (compromised) at %s: its signatures are refused whatever date they bear, since whoever holds a compromised key can sign any date", name, at)
		}
		v.Errors = append(v.Errors, Problem{CodeKeyRevoked, msg})
	case k.status == KeyRevoked:
		v.Errors = append(v.Errors, Problem{CodeKeyRevoked, fmt.Sprintf("the passport was signed by %s, which is revoked (compromised): its passports are refused", name)})
	case k.iv != nil:
		until := "while it signs"
		if !k.iv.Until.IsZero() {
			until = "until " + k.iv.Until.UTC().Format(time.RFC3339)
		}
		v.Errors = append(v.Errors, Problem{CodeKeyInactive, fmt.Sprintf("the passport was computed at %s, but %s signed from %s %s (give or take %s): it did not sign this passport while it was active",
			computed.UTC().Format(time.RFC3339), name, k.iv.From.UTC().Format(time.RFC3339), until, MaxClockSkew)})
	default:
		v.Errors = append(v.Errors, Problem{CodeKeyRetired, fmt.Sprintf("the passport was signed by %s, which is retired: its passports are no longer accepted", name)})
	}
	return false
}

// confused reports whether raw is the HMAC-SHA256 of msg keyed with an
// Ed25519 public key of keys, in any form it is published in (the raw 32
// bytes, the JWK's base64url x, hex): the classic forgery against verifiers
// that let a document's alg choose how a key is used. Only failed
// verifications get here.
func confused(msg, raw []byte, keys []Key) bool {
	for _, k := range keys {
		if !k.valid() || k.k.alg != AlgEdDSA {
			continue
		}
		pub := []byte(k.k.pub)
		for _, secret := range [][]byte{pub, []byte(base64.RawURLEncoding.EncodeToString(pub)), []byte(hex.EncodeToString(pub))} {
			m := hmac.New(sha256.New, secret)
			m.Write(msg)
			if hmac.Equal(m.Sum(nil), raw) {
				return true
			}
		}
	}
	return false
}

func otherAlg(alg string) string {
	if alg == AlgEdDSA {
		return AlgHS256
	}
	return AlgEdDSA
}

func otherSize(n int) int {
	if n == ed25519.SignatureSize {
		return sha256.Size
	}
	return ed25519.SignatureSize
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

func (r *report) warn(code, format string, args ...any) {
	r.warns = append(r.warns, Problem{code, fmt.Sprintf(format, args...)})
}

// checkPassport checks everything about a well-formed passport except its
// signature and expiry: versions, identifiers, and that the score block is
// exactly what the formula gives for the document's own counts. What §6.1
// leaves open (an agent_id, the contents of qualification_gaps) is warned
// about, not failed. The formula is the one acc accepts for the passport's
// formula_version; with a nil acc (signing), the one the passport was made
// with (V1 for a passport not from NewWith).
func (r *report) checkPassport(p *Passport, acc *Acceptance) {
	if p.SwarmScoreVersion != Version {
		r.fail(CodeUnsupportedVersion, "swarmscore_version %q is not supported (want %q)", clip(p.SwarmScoreVersion), Version)
	}
	if !isUUIDv4(p.AgentPassportID) {
		r.fail(CodeInvalidValue, "agent_passport_id %q is not a hyphenated UUID version 4", clip(p.AgentPassportID))
	}
	if p.agentIDAbsent {
		r.warn(CodeAgentIDMissing, "the passport has no agent_id (§6.1 defines none), so nothing in it binds it to an agent")
	} else if err := checkAgentID(p.AgentID); err != nil {
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
	f := p.formula
	if acc != nil {
		var ok bool
		if f, ok = acc.check(r, p); !ok {
			return
		}
	} else if f == nil {
		f = score.V1
	}
	if acc == nil && p.FormulaVersion != f.Version() {
		r.fail(CodeUnsupportedFormulaVersion, "formula_version %q is not that of the formula the passport was computed with (%q)", clip(p.FormulaVersion), f.Version())
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
	// Neither can fail: c is valid. V1, nearly every passport, is called
	// directly rather than through the interface.
	var res score.Result
	if f == score.V1 {
		res, _ = score.Compute(c)
	} else {
		res, _ = f.Compute(c)
	}
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
	switch {
	case p.gapsUnread:
		r.warn(CodeGapsMismatch, "qualification_gaps holds elements that are not {tier, requirement, required, actual} gaps; the counts give %d unmet requirements for the next tier", len(want))
	case !equalGaps(p.QualificationGaps, want):
		r.warn(CodeGapsMismatch, "qualification_gaps do not list the unmet requirements for the next tier (%d listed, %d expected)", len(p.QualificationGaps), len(want))
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

// isUUIDv4 reports whether s is a hyphenated version 4, RFC 9562 variant
// UUID: 36 hex digits (either case: RFC 9562 reads UUIDs case-insensitively,
// and §6.1 says only "uuid-v4") and hyphens, 8-4-4-4-12, version nibble 4,
// variant nibble 8, 9, a or b.
func isUUIDv4(s string) bool {
	if len(s) != 36 || s[14] != '4' {
		return false
	}
	switch s[19] {
	case '8', '9', 'a', 'b', 'A', 'B':
	default:
		return false
	}
	for i := range len(s) {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return false
			}
		} else if !hexDigit[s[i]] {
			return false
		}
	}
	return true
}

// hexDigit holds the hex digits of either case.
var hexDigit = func() (t [256]bool) {
	for _, c := range "0123456789abcdefABCDEF" {
		t[c] = true
	}
	return t
}()

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
