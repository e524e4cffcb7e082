package passport

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/swarmscore/swarmscore/score"
)

// The fast path of Verify. The token walk in parse.go is precise but costs
// about as much as canonicalization itself, because encoding/json's token API
// allocates for every token. Most documents a verifier sees are well-formed
// passports exactly as issued, so Verify first tries this:
//
//  1. canonicalize the whole document with jcs (which also rejects invalid
//     I-JSON and duplicate names at any depth);
//  2. json.Unmarshal the canonical bytes into wireDoc, whose members are
//     declared in RFC 8785 order and whose numbers are kept as text;
//  3. re-encode wireDoc and require the result to be byte-identical to the
//     canonical bytes.
//
// Step 3 is what makes this safe: it holds only if the document has exactly
// the known members, spelt exactly (json.Unmarshal ignores case; the
// re-encoding does not), each of the right JSON type (a null or a wrong type
// re-encodes differently). The signed message is then the same re-encoding
// without the signature member, which is the canonical form of the document
// minus issuer.signature, as the slow path would compute it. Anything else
// (unknown members, errors of any kind, a string encoding/json escapes
// differently from JCS such as U+2028) falls back to the token walk, which
// produces the diagnostics. Tests check that both paths agree.

// wireDoc is a passport in RFC 8785 member order with numbers as text.
type wireDoc struct {
	AgentID           string      `json:"agent_id"`
	AgentPassportID   string      `json:"agent_passport_id"`
	Dimensions        wireDims    `json:"dimensions"`
	EscrowModifier    json.Number `json:"escrow_modifier"`
	ExpiresAt         string      `json:"expires_at"`
	FormulaVersion    string      `json:"formula_version"`
	Issuer            wireIssuer  `json:"issuer"`
	QualificationGaps []wireGap   `json:"qualification_gaps"`
	Score             wireScore   `json:"score"`
	SwarmScoreVersion string      `json:"swarmscore_version"`
}

type wireDims struct {
	CommercialReliability wireDim `json:"commercial_reliability"`
	TechnicalExecution    wireDim `json:"technical_execution"`
}

type wireDim struct {
	ActualContribution    json.Number `json:"actual_contribution"`
	Label                 string      `json:"label"`
	MaxContribution       json.Number `json:"max_contribution"`
	Sessions90d           json.Number `json:"sessions_90d"`
	SuccessRate           json.Number `json:"success_rate"`
	SuccessfulSessions90d json.Number `json:"successful_sessions_90d"`
	VolumeFactor          json.Number `json:"volume_factor"`
}

type wireIssuer struct {
	ComputedAt string `json:"computed_at"`
	Platform   string `json:"platform"`
	Signature  string `json:"signature,omitempty"`
}

type wireGap struct {
	Actual      json.Number `json:"actual"`
	Required    json.Number `json:"required"`
	Requirement string      `json:"requirement"`
	Tier        string      `json:"tier"`
}

type wireScore struct {
	AP2Contribution     json.Number `json:"ap2_contribution"`
	ConduitContribution json.Number `json:"conduit_contribution"`
	Tier                string      `json:"tier"`
	Value               json.Number `json:"value"`
}

// Test hooks, only ever set by tests (before any concurrent use):
// slowOnly makes Verify skip the fast path, so tests can compare the paths,
// and onFastPath, if set, is called when the fast path decides.
var (
	slowOnly   bool
	onFastPath func()
)

type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false) // JCS does not escape <, > and &
	return e
}}

// encode re-encodes w into e.buf, without the trailing newline.
func (e *encoder) encode(w *wireDoc) bool {
	e.buf.Reset()
	if e.enc.Encode(w) != nil {
		return false
	}
	e.buf.Truncate(e.buf.Len() - 1)
	return true
}

// fastVerify returns the verification, or nil if the document must take the
// slow path.
func fastVerify(doc []byte, keys []Key, at time.Time) *Verification {
	if slowOnly {
		return nil
	}
	canonical, err := jcs.Transform(doc)
	if err != nil {
		return nil
	}
	var w wireDoc
	if json.Unmarshal(canonical, &w) != nil || w.QualificationGaps == nil {
		return nil
	}
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	if !e.encode(&w) || !bytes.Equal(e.buf.Bytes(), canonical) {
		return nil
	}
	p, sig, ok := w.passport()
	if !ok {
		return nil
	}
	w.Issuer.Signature = ""
	if !e.encode(&w) {
		return nil
	}
	if onFastPath != nil {
		onFastPath()
	}
	v := newVerification(doc)
	v.SignatureValid = v.checkSignature(&sig, e.buf.Bytes(), keys)
	v.finish(p, nil, true, at)
	return v
}

// passport converts a wire document that re-encoded exactly into a Passport.
// ok is false for anything the slow path would report as a parse error.
func (w *wireDoc) passport() (p *Passport, sig sigInfo, ok bool) {
	p = &Passport{
		SwarmScoreVersion: w.SwarmScoreVersion,
		AgentPassportID:   w.AgentPassportID,
		AgentID:           w.AgentID,
		Issuer:            Issuer{Platform: w.Issuer.Platform, Signature: w.Issuer.Signature},
		FormulaVersion:    w.FormulaVersion,
		QualificationGaps: make([]score.Gap, len(w.QualificationGaps)),
	}
	ok = wireTimeText(w.Issuer.ComputedAt, &p.Issuer.ComputedAt) &&
		wireTimeText(w.ExpiresAt, &p.ExpiresAt) &&
		wireTier(w.Score.Tier, &p.Score.Tier) &&
		wireInt(w.Score.Value, &p.Score.Value) &&
		wireInt(w.Score.ConduitContribution, &p.Score.ConduitContribution) &&
		wireInt(w.Score.AP2Contribution, &p.Score.AP2Contribution) &&
		w.Dimensions.TechnicalExecution.into(&p.Dimensions.TechnicalExecution) &&
		w.Dimensions.CommercialReliability.into(&p.Dimensions.CommercialReliability)
	if !ok {
		return nil, sig, false
	}
	m, err := score.ParseModifier(string(w.EscrowModifier))
	if err != nil {
		return nil, sig, false
	}
	p.EscrowModifier = m
	for i, g := range w.QualificationGaps {
		q := &p.QualificationGaps[i]
		q.Requirement = g.Requirement
		if !wireTier(g.Tier, &q.Tier) || !wireInt(g.Required, &q.Required) || !wireInt(g.Actual, &q.Actual) {
			return nil, sig, false
		}
	}
	var ps parser
	ps.p = p
	if err := ps.signature("", p.Issuer.Signature); err != nil || !ps.sig.wellFormed {
		return nil, sig, false // missing or malformed: let the slow path say which
	}
	ps.sig.found = true
	return p, ps.sig, true
}

func (d *wireDim) into(out *Dimension) bool {
	out.Label = d.Label
	return wireInt(d.Sessions90d, &out.Sessions90d) &&
		wireInt(d.SuccessfulSessions90d, &out.SuccessfulSessions90d) &&
		wireInt(d.MaxContribution, &out.MaxContribution) &&
		wireInt(d.ActualContribution, &out.ActualContribution) &&
		wireFloat(d.SuccessRate, &out.SuccessRate) &&
		wireFloat(d.VolumeFactor, &out.VolumeFactor)
}

// wireInt accepts what parser.integer accepts: canonical integer text.
func wireInt[T int | int64](n json.Number, dst *T) bool {
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || v > MaxCount || v < -MaxCount {
		return false
	}
	*dst = T(v)
	return true
}

func wireFloat(n json.Number, dst *float64) bool {
	f, err := strconv.ParseFloat(string(n), 64)
	*dst = f
	return err == nil
}

func wireTier(s string, dst *score.Tier) bool {
	t, err := score.ParseTier(s)
	*dst = t
	return err == nil
}

func wireTimeText(s string, dst *time.Time) bool {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil || t.UTC().Format(time.RFC3339) != s {
		return false
	}
	*dst = t.UTC()
	return true
}
