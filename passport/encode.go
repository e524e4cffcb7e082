package passport

import (
	"strconv"
	"time"

	"github.com/swarmscore/swarmscore/score"
)

// Sign writes a passport once, by hand, without reflection or a general
// canonicalizer (it costs a fraction of the HMAC it feeds): appendMessage
// writes the signed message, the RFC 8785 (JCS) canonical form of the
// document without issuer.signature. Members are in JCS order (names sorted
// by UTF-16 code unit; all names here are ASCII, so that is byte order),
// strings are escaped as JCS escapes them, numbers are in ECMAScript shortest
// form. encode_test.go checks the bytes against jcs.Transform, the oracle,
// over fuzzed passports.
//
// The published document is that message with the signature member spliced
// into issuer at its sorted place, last (computed_at < platform < signature):
// the canonical form of the signed document itself. Member order carries no
// meaning in JSON and verifiers accept any, so publishing the canonical order
// rather than §6.1's costs nothing and lets Sign encode once.
//
// appendMessage requires a passport that check accepts: versions and labels are the
// constants, agent_id and agent_passport_id are from alphabets with nothing
// to escape, times are UTC whole seconds in years 0–9999, the tier is in the
// enum and the platform is valid UTF-8.

// numbers holds the non-integer numbers of a passport, formatted once for both
// encodings. Each is at most 24 bytes ("1.1102230246251565e-16").
type numbers struct {
	buf [4][24]byte
	n   [4]uint8
}

const (
	numTERate = iota
	numTEVolume
	numCRRate
	numCRVolume
)

func (ns *numbers) get(i int) []byte { return ns.buf[i][:ns.n[i]] }

func (ns *numbers) fill(p *Passport) {
	ns.set(numTERate, p.Dimensions.TechnicalExecution.SuccessRate)
	ns.set(numTEVolume, p.Dimensions.TechnicalExecution.VolumeFactor)
	ns.set(numCRRate, p.Dimensions.CommercialReliability.SuccessRate)
	ns.set(numCRVolume, p.Dimensions.CommercialReliability.VolumeFactor)
}

// set writes f in ECMAScript shortest form. The values 0, 1 and k/100
// (every volume factor, and many rates) take a shortcut: the shortest decimal
// that rounds to the double nearest k/100 is k/100 itself, since no decimal of
// one or two places other than it lies within half an ulp. encode_test.go
// checks the shortcut against the general formatter for every k.
func (ns *numbers) set(i int, f float64) {
	b := ns.buf[i][:0]
	switch k := f * 100; {
	case f == 0:
		b = append(b, '0')
	case f == 1:
		b = append(b, '1')
	case f > 0 && f < 1 && k == float64(int(k)) && hundredths[int(k)] == f:
		d := int(k)
		b = append(b, '0', '.', byte('0'+d/10))
		if d%10 != 0 {
			b = append(b, byte('0'+d%10))
		}
	default:
		b = score.AppendJSONFloat(b, f)
	}
	ns.n[i] = uint8(len(b))
}

// hundredths[k] is the double nearest k/100 (the division, done once: set
// runs four times per sign and per verify).
var hundredths = func() (t [101]float64) {
	for k := range t {
		t[k] = float64(k) / 100
	}
	return t
}()

// appendMessage appends the canonical message of p (JCS, without
// issuer.signature) to b. sigAt is the offset in the result where the
// signature member goes in the canonical signed document: after the platform,
// before the brace closing issuer.
func appendMessage(b []byte, p *Passport, ns *numbers) (msg []byte, sigAt int) {
	b = append(b, `{"agent_id":"`...)
	b = append(b, p.AgentID...)
	b = append(b, `","agent_passport_id":"`...)
	b = append(b, p.AgentPassportID...)
	b = append(b, `","dimensions":{"commercial_reliability":`...)
	b = appendDimensionJCS(b, &p.Dimensions.CommercialReliability, ns.get(numCRRate), ns.get(numCRVolume))
	b = append(b, `,"technical_execution":`...)
	b = appendDimensionJCS(b, &p.Dimensions.TechnicalExecution, ns.get(numTERate), ns.get(numTEVolume))
	b = append(b, `},"escrow_modifier":`...)
	b, _ = p.EscrowModifier.AppendText(b)
	b = append(b, `,"expires_at":"`...)
	b = appendTime(b, p.ExpiresAt)
	b = append(b, `","formula_version":"`...)
	b = append(b, p.FormulaVersion...)
	b = append(b, `","issuer":{"computed_at":"`...)
	b = appendTime(b, p.Issuer.ComputedAt)
	b = append(b, `","platform":`...)
	b = appendStringJCS(b, p.Issuer.Platform)
	sigAt = len(b)
	b = append(b, `},"qualification_gaps":[`...)
	for i, g := range p.QualificationGaps {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"actual":`...)
		b = appendInt(b, g.Actual)
		b = append(b, `,"required":`...)
		b = appendInt(b, g.Required)
		b = append(b, `,"requirement":"`...)
		b = append(b, g.Requirement...)
		b = append(b, `","tier":"`...)
		b = append(b, g.Tier.String()...)
		b = append(b, `"}`...)
	}
	b = append(b, `],"score":{"ap2_contribution":`...)
	b = appendInt(b, int64(p.Score.AP2Contribution))
	b = append(b, `,"conduit_contribution":`...)
	b = appendInt(b, int64(p.Score.ConduitContribution))
	b = append(b, `,"tier":"`...)
	b = append(b, p.Score.Tier.String()...)
	b = append(b, `","value":`...)
	b = appendInt(b, int64(p.Score.Value))
	b = append(b, `},"swarmscore_version":"`...)
	b = append(b, p.SwarmScoreVersion...)
	return append(b, `"}`...), sigAt
}

func appendDimensionJCS(b []byte, d *Dimension, rate, volume []byte) []byte {
	b = append(b, `{"actual_contribution":`...)
	b = appendInt(b, int64(d.ActualContribution))
	b = append(b, `,"label":"`...)
	b = append(b, d.Label...)
	b = append(b, `","max_contribution":`...)
	b = appendInt(b, int64(d.MaxContribution))
	b = append(b, `,"sessions_90d":`...)
	b = appendInt(b, d.Sessions90d)
	b = append(b, `,"success_rate":`...)
	b = append(b, rate...)
	b = append(b, `,"successful_sessions_90d":`...)
	b = appendInt(b, d.SuccessfulSessions90d)
	b = append(b, `,"volume_factor":`...)
	b = append(b, volume...)
	return append(b, '}')
}

// appendInt writes n in decimal. Most numbers in a passport are below 1000
// and take a shortcut (strconv.AppendInt is a fifth of the message's cost).
func appendInt(b []byte, n int64) []byte {
	switch {
	case n < 0 || n >= 1000:
		return strconv.AppendInt(b, n, 10)
	case n < 10:
		return append(b, byte('0'+n))
	case n < 100:
		return append(b, byte('0'+n/10), byte('0'+n%10))
	}
	return append(b, byte('0'+n/100), byte('0'+n/10%10), byte('0'+n%10))
}

// appendTime writes t, which wireTime accepts, as RFC 3339 UTC whole seconds:
// 2026-03-17T14:30:00Z.
func appendTime(b []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return append(b,
		byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+mo/10), byte('0'+mo%10), '-', byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':',
		byte('0'+s/10), byte('0'+s%10), 'Z')
}

const hexDigits = "0123456789abcdef"

// appendStringJCS writes s, valid UTF-8, as a JSON string escaped as RFC 8785
// §3.2.2.2 requires: \" \\ \b \f \n \r \t, \u00xx (lowercase) for the other
// control characters, everything else as is.
func appendStringJCS(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		b = appendEscape(b, c)
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendEscape writes the JSON escape of c, a control character, quote or
// backslash, in the form both JCS and encoding/json use.
func appendEscape(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}
