package passport

import (
	"encoding/binary"
	"slices"
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
// before the brace closing issuer. The member names and the constants
// between values are the literals of the issued layout (issued.go), written
// a word at a time by the generated putters in literals.go: that halves the
// cost of appending them one by one. The versions and labels are the
// constants, which check requires p's to be.
func appendMessage(b []byte, p *Passport, ns *numbers) (msg []byte, sigAt int) {
	start := len(b)
	b = slices.Grow(b, messageRoom(p))
	w := writer{b: b[start:cap(b)]}
	w.putAgent()
	w.str(p.AgentID)
	w.quote()
	w.putPID()
	w.str(p.AgentPassportID)
	w.quote()
	w.putCRActual()
	w.dimension(&p.Dimensions.CommercialReliability, true, ns.get(numCRRate), ns.get(numCRVolume))
	w.putTEActual()
	w.dimension(&p.Dimensions.TechnicalExecution, false, ns.get(numTERate), ns.get(numTEVolume))
	w.putEscrow()
	escrow, _ := p.EscrowModifier.AppendText(w.b[w.n:w.n]) // check has validated it
	w.n += len(escrow)
	w.putExpires()
	w.time(p.ExpiresAt)
	w.quote()
	w.putComputed()
	w.time(p.Issuer.ComputedAt)
	w.quote()
	w.putPlatform()
	w.n += len(appendEscapedJCS(w.b[w.n:w.n], p.Issuer.Platform))
	w.quote()
	sigAt = start + w.n
	w.putGaps()
	for i, g := range p.QualificationGaps {
		if i > 0 {
			w.b[w.n] = ','
			w.n++
		}
		w.putGapAct()
		w.int(g.Actual)
		w.putGapReq()
		w.int(g.Required)
		w.putGapWhat()
		w.str(g.Requirement)
		w.quote()
		w.putGapTier()
		w.str(g.Tier.String())
		w.quote()
		w.putGapEnd()
	}
	w.putAP2()
	w.int(int64(p.Score.AP2Contribution))
	w.putConduit()
	w.int(int64(p.Score.ConduitContribution))
	w.putTier()
	w.str(p.Score.Tier.String())
	w.quote()
	w.putValue()
	w.int(int64(p.Score.Value))
	w.putEnd()
	return b[:start+w.n], sigAt
}

// messageRoom bounds the length of p's message: the literals (under 1 KiB;
// a test checks), at most 17 integers of 20 digits, 5 fractions of 24
// characters, 2 times, 3 gaps' names, and the strings, the platform at
// worst all \u00XX escapes.
func messageRoom(p *Passport) int {
	return 1024 + 17*20 + 5*24 + 2*20 + 3*(24+8) + len(p.AgentID) + len(p.AgentPassportID) + 6*len(p.Issuer.Platform)
}

// dimension writes a dimension's values after its first literal:
// commercial_reliability if ap2, else technical_execution.
func (w *writer) dimension(d *Dimension, ap2 bool, rate, volume []byte) {
	w.int(int64(d.ActualContribution))
	if ap2 {
		w.putCRMax()
	} else {
		w.putTEMax()
	}
	w.int(int64(d.MaxContribution))
	w.putSessions()
	w.int(d.Sessions90d)
	w.putRate()
	w.bytes(rate)
	w.putSuccess()
	w.int(d.SuccessfulSessions90d)
	w.putVolume()
	w.bytes(volume)
}

func (w *writer) str(s string)   { w.n += copy(w.b[w.n:], s) }
func (w *writer) bytes(s []byte) { w.n += copy(w.b[w.n:], s) }
func (w *writer) quote()         { w.b[w.n] = '"'; w.n++ }

// int writes v in decimal. Most numbers in a passport are below 1000: they
// are one lookup and one store of a word (whose bytes past the digits the
// next write covers; messageRoom leaves room for them), no branch on the
// number of digits.
func (w *writer) int(v int64) {
	if uint64(v) < uint64(len(smallInts)) {
		e := smallInts[v]
		binary.LittleEndian.PutUint32(w.b[w.n:], e&0xffffff)
		w.n += int(e >> 24)
		return
	}
	w.n += len(strconv.AppendInt(w.b[w.n:w.n], v, 10))
}

// smallInts[v] is v's decimal digits, the first in the low byte, and their
// count in the high byte.
var smallInts = func() (t [1000]uint32) {
	for v := range t {
		var b [4]byte
		d := strconv.AppendInt(b[:0], int64(v), 10)
		copy(b[:], d)
		t[v] = binary.LittleEndian.Uint32(b[:])&0xffffff | uint32(len(d))<<24
	}
	return t
}()

// time writes t, which wireTime accepts (UTC whole seconds in years 0 to
// 9999), as RFC 3339: 2026-03-17T14:30:00Z. It computes the calendar date
// from the Unix time (civilFromDays) at a fraction of time.Time.Date's cost.
func (w *writer) time(t time.Time) {
	sec := t.Unix()
	days, rem := sec/86400, sec%86400
	if rem < 0 {
		days, rem = days-1, rem+86400
	}
	y, mo, d := civilFromDays(days)
	b := w.b[w.n : w.n+20]
	put2 := func(at int, v int64) { b[at], b[at+1] = pairs[2*v], pairs[2*v+1] }
	put2(0, y/100)
	put2(2, y%100)
	b[4] = '-'
	put2(5, mo)
	b[7] = '-'
	put2(8, d)
	b[10] = 'T'
	put2(11, rem/3600)
	b[13] = ':'
	put2(14, rem/60%60)
	b[16] = ':'
	put2(17, rem%60)
	b[19] = 'Z'
	w.n += 20
}

// pairs holds "00" to "99".
const pairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// civilFromDays is the proleptic Gregorian date of the day that is days
// after 1970-01-01, the inverse of daysFromCivil (H. Hinnant's algorithm).
func civilFromDays(days int64) (y, mo, d int64) {
	z := days + 719468 // days since 0000-03-01
	era := z
	if z < 0 {
		era -= 146096
	}
	era /= 146097
	doe := z - era*146097                                  // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // [0, 365], from March 1st
	mp := (5*doy + 2) / 153                                // [0, 11], March = 0
	d = doy - (153*mp+2)/5 + 1
	mo = mp + 3
	if mo > 12 {
		mo -= 12
	}
	y = yoe + era*400
	if mo <= 2 {
		y++
	}
	return y, mo, d
}

const hexDigits = "0123456789abcdef"

// appendStringJCS writes s, valid UTF-8, as a JSON string escaped as RFC 8785
// §3.2.2.2 requires: \" \\ \b \f \n \r \t, \u00xx (lowercase) for the other
// control characters, everything else as is.
func appendStringJCS(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendEscapedJCS(b, s)
	return append(b, '"')
}

// appendEscapedJCS writes the content of appendStringJCS, without the quotes.
func appendEscapedJCS(b []byte, s string) []byte {
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
	return append(b, s[start:]...)
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

// writer writes into b, which has room for all of it, at n.
type writer struct {
	b []byte
	n int
}
