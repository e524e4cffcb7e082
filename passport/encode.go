package passport

import (
	"strconv"
	"time"

	"github.com/swarmscore/swarmscore/internal/jcsstr"
	"github.com/swarmscore/swarmscore/score"
)

// Sign writes a passport once, by hand, without reflection or a general
// canonicalizer (which builds a generic tree and costs many times the HMAC
// it feeds): appendMessage writes the signed message, the RFC 8785 (JCS)
// canonical form of the document without issuer.signature. Members are in
// JCS order (names sorted by UTF-16 code unit; all names here are ASCII, so
// that is byte order), strings are written by jcsstr.Append, numbers are
// in ECMAScript shortest form. encode_test.go checks the bytes against
// jcs.Transform, the oracle, over fuzzed passports.
//
// The published document is that message with the signature member spliced
// into issuer at its sorted place, last (alg < computed_at < kid < platform <
// signature):
// the canonical form of the signed document itself. Member order carries no
// meaning in JSON and verifiers accept any, so publishing the canonical order
// rather than §6.1's costs nothing and lets Sign encode once.
//
// appendMessage requires a passport that check accepts: versions and labels
// are the constants, times are UTC whole seconds in years 0–9999 (which
// time.RFC3339 writes as JCS has them), the tier is in the enum and the
// strings are valid UTF-8.

// appendMessage appends the canonical message of p (JCS, without
// issuer.signature) to b. sigAt is the offset in the result where the
// signature member goes in the canonical signed document: after the platform,
// before the brace closing issuer. The swarmscore_version and labels are the
// constants, and formula_version a formula's (score.CheckVersion), which
// check requires p's to be; issuer.alg and issuer.kid are written when
// not empty.
func appendMessage(b []byte, p *Passport) (msg []byte, sigAt int) {
	b = append(b, `{"agent_id":`...)
	b = jcsstr.Append(b, p.AgentID)
	b = append(b, `,"agent_passport_id":`...)
	b = jcsstr.Append(b, p.AgentPassportID)
	b = append(b, `,"dimensions":{"commercial_reliability":`...)
	b = appendDimension(b, &p.Dimensions.CommercialReliability, LabelAP2)
	b = append(b, `,"technical_execution":`...)
	b = appendDimension(b, &p.Dimensions.TechnicalExecution, LabelConduit)
	b = append(b, `},"escrow_modifier":`...)
	b, _ = p.EscrowModifier.AppendText(b) // check has validated it
	b = append(b, `,"expires_at":"`...)
	b = p.ExpiresAt.AppendFormat(b, time.RFC3339)
	if p.FormulaVersion == score.FormulaVersion {
		b = append(b, `","formula_version":"`+score.FormulaVersion+`","issuer":{`...)
	} else { // check has matched it to a formula's, which needs no escaping
		b = append(b, `","formula_version":"`...)
		b = append(b, p.FormulaVersion...)
		b = append(b, `","issuer":{`...)
	}
	if p.Issuer.Alg != "" {
		b = append(b, `"alg":`...)
		b = jcsstr.Append(b, p.Issuer.Alg)
		b = append(b, ',')
	}
	b = append(b, `"computed_at":"`...)
	b = p.Issuer.ComputedAt.AppendFormat(b, time.RFC3339)
	b = append(b, '"')
	if p.Issuer.KID != "" {
		b = append(b, `,"kid":`...)
		b = jcsstr.Append(b, p.Issuer.KID)
	}
	b = append(b, `,"platform":`...)
	b = jcsstr.Append(b, p.Issuer.Platform)
	sigAt = len(b)
	b = append(b, `},"qualification_gaps":[`...)
	for i, g := range p.QualificationGaps {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"actual":`...)
		b = strconv.AppendInt(b, g.Actual, 10)
		b = append(b, `,"required":`...)
		b = strconv.AppendInt(b, g.Required, 10)
		b = append(b, `,"requirement":`...)
		b = jcsstr.Append(b, g.Requirement)
		b = append(b, `,"tier":"`...)
		b = append(b, g.Tier.String()...)
		b = append(b, `"}`...)
	}
	b = append(b, `],"score":{"ap2_contribution":`...)
	b = strconv.AppendInt(b, int64(p.Score.AP2Contribution), 10)
	b = append(b, `,"conduit_contribution":`...)
	b = strconv.AppendInt(b, int64(p.Score.ConduitContribution), 10)
	b = append(b, `,"tier":"`...)
	b = append(b, p.Score.Tier.String()...)
	b = append(b, `","value":`...)
	b = strconv.AppendInt(b, int64(p.Score.Value), 10)
	b = append(b, `},"swarmscore_version":"`+Version+`"}`...)
	return b, sigAt
}

// appendDimension appends a dimension object with the given label.
func appendDimension(b []byte, d *Dimension, label string) []byte {
	b = append(b, `{"actual_contribution":`...)
	b = strconv.AppendInt(b, int64(d.ActualContribution), 10)
	b = append(b, `,"label":"`...)
	b = append(b, label...)
	b = append(b, `","max_contribution":`...)
	b = strconv.AppendInt(b, int64(d.MaxContribution), 10)
	b = append(b, `,"sessions_90d":`...)
	b = strconv.AppendInt(b, d.Sessions90d, 10)
	b = append(b, `,"success_rate":`...)
	b = appendFloat(b, d.SuccessRate)
	b = append(b, `,"successful_sessions_90d":`...)
	b = strconv.AppendInt(b, d.SuccessfulSessions90d, 10)
	b = append(b, `,"volume_factor":`...)
	b = appendFloat(b, d.VolumeFactor)
	return append(b, '}')
}

// appendFloat appends f in ECMAScript shortest form, as JCS writes it. Every
// volume factor below 1, and many rates, is the double nearest some k/100,
// whose shortest form is k/100 itself (no other decimal of one or two places
// lies within half an ulp of it): those skip the general formatter, which
// costs more than the rest of reading a rate. encode_test.go checks the
// shortcut against jcs.
func appendFloat(b []byte, f float64) []byte {
	if f > 0 && f < 1 {
		if k := int(f*100 + 0.5); float64(k)/100 == f {
			b = append(b, '0', '.', byte('0'+k/10))
			if k%10 != 0 {
				b = append(b, byte('0'+k%10))
			}
			return b
		}
	}
	return score.AppendJSONFloat(b, f)
}
