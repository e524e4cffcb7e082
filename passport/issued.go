package passport

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/score"
)

// The issued path of Verify. Most documents a verifier sees are passports
// exactly as Sign issues them (and as any RFC 8785 issuer writes them):
// canonical layout, compact, consistent. For those, Verify reads the
// document once, front to back, in straight-line code that names every
// member as a literal and parses every value where it stands: integers as
// they are read, times, the UUID and the signature in their fixed formats.
// Everything the counts decide (contributions, maxima, score, tier, rates,
// volume factors, escrow modifier, gaps) must then be exactly what the
// formula gives, compared as integers or as the exact canonical text, so
// nothing is parsed as a float. The signed message is the document minus
// the signature member, MACed in place in two pieces.
//
// A table-driven scan of the same layout cost twice as much: its dispatch
// on each value's kind and its data-dependent loops were mispredicted on
// every step, while here each branch has its own site and goes one way.
//
// Anything else (another member order, whitespace, an escape or a non-ASCII
// byte in a string, a number spelled another way, an inconsistent value)
// returns nil, and the general fast path or the slow path decides, with
// their diagnostics. The tests and fuzz targets check that all three paths
// agree on every input they accept.

// noIssuedPath makes Verify skip the issued path, so tests can compare it
// with the others (a test hook like slowOnly).
var noIssuedPath bool

// Literals of the canonical layout, between the values.
const (
	litAgent    = `{"agent_id":"`
	litPID      = `,"agent_passport_id":"`
	litCRActual = `,"dimensions":{"commercial_reliability":{"actual_contribution":`
	litCRMax    = `,"label":"` + LabelAP2 + `","max_contribution":`
	litSessions = `,"sessions_90d":`
	litRate     = `,"success_rate":`
	litSuccess  = `,"successful_sessions_90d":`
	litVolume   = `,"volume_factor":`
	litTEActual = `},"technical_execution":{"actual_contribution":`
	litTEMax    = `,"label":"` + LabelConduit + `","max_contribution":`
	litEscrow   = `}},"escrow_modifier":`
	litExpires  = `,"expires_at":"`
	litComputed = `,"formula_version":"` + score.FormulaVersion + `","issuer":{"computed_at":"`
	litPlatform = `,"platform":"`
	litSig      = `,"signature":"`
	litGaps     = `},"qualification_gaps":[`
	litGapAct   = `{"actual":`
	litGapReq   = `,"required":`
	litGapWhat  = `,"requirement":"`
	litGapTier  = `,"tier":"`
	litGapEnd   = `}`
	litAP2      = `],"score":{"ap2_contribution":`
	litConduit  = `,"conduit_contribution":`
	litTier     = `,"tier":"`
	litValue    = `,"value":`
	litEnd      = `},"swarmscore_version":"` + Version + `"}`
)

// cursor reads a document front to back. Every method consumes what it
// reads and reports whether it was there; string readers start after the
// opening quote (the literal before them ends with it) and consume the
// closing one.
type cursor struct {
	doc []byte
	i   int
}

func (c *cursor) lit(s string) bool {
	if len(c.doc)-c.i >= len(s) && string(c.doc[c.i:c.i+len(s)]) == s {
		c.i += len(s)
		return true
	}
	return false
}

// str reads a string of printable ASCII without '"' or '\\' (so no escape),
// possibly empty, into dst (its content, without quotes).
func (c *cursor) str(dst *span) bool {
	doc, i := c.doc, c.i
	j := plainEnd(doc, i)
	if j >= len(doc) || doc[j] != '"' {
		return false
	}
	*dst = mkSpan(i, j)
	c.i = j + 1
	return true
}

// platform reads issuer.platform: as str, but it may also hold the escapes
// \" and \\ (the only ones in the canonical form of a platform that
// checkPlatform accepts: JCS escapes nothing else but control characters)
// and bytes above ASCII, which consistent checks.
func (c *cursor) platform(dst *span, escaped *bool) bool {
	doc, i := c.doc, c.i
	j := plainEnd(doc, i)
	for j < len(doc) && doc[j] != '"' {
		switch b := doc[j]; {
		case b == '\\':
			if j+1 >= len(doc) || doc[j+1] != '"' && doc[j+1] != '\\' {
				return false
			}
			*escaped = true
			j += 2
		case b < 0x20:
			return false
		default:
			j++
		}
	}
	if j >= len(doc) {
		return false
	}
	*dst, c.i = mkSpan(i, j), j+1
	return true
}

// setStrings sets the passport's strings from the document's text (the
// platform with its \" and \\ escapes if escaped), copied into one
// allocation.
func setStrings(p *Passport, sig, pid, agent, platform []byte, escaped bool) {
	if escaped {
		var buf [2 * maxPlatformLen]byte // most platforms; a longer one is copied to the heap
		platform = unescape(buf[:0], platform)
	}
	var b strings.Builder // a string built in place, with no copy
	b.Grow(len(sig) + len(pid) + len(agent) + len(platform))
	b.Write(sig)
	b.Write(pid)
	b.Write(agent)
	b.Write(platform)
	all := b.String()
	p.Issuer.Signature, all = all[:len(sig)], all[len(sig):]
	p.AgentPassportID, all = all[:len(pid)], all[len(pid):]
	p.AgentID, p.Issuer.Platform = all[:len(agent)], all[len(agent):]
}

// unescape appends s with its \" and \\ escapes resolved to dst.
func unescape(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
		}
		dst = append(dst, s[i])
	}
	return dst
}

// validPlatform is checkPlatform(string(b)) == nil, without the string.
func validPlatform(b []byte) bool {
	if len(b) == 0 || len(b) > maxPlatformLen {
		return false
	}
	for i := 0; i < len(b); {
		if c := b[i]; c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 || unicode.IsControl(r) {
			return false
		}
		i += n
	}
	return true
}

// uint reads a canonical integer in [0, MaxCount]: "0", or digits without a
// leading zero, followed by ',' or '}' (which the next literal consumes).
// Up to seven digits, it finds the end and converts the digits in a word,
// without a loop whose exit would be mispredicted.
func (c *cursor) uint(dst *int64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	doc, i := c.doc, c.i
	if len(doc)-i < 8 {
		return c.uintLoop(dst)
	}
	w := binary.LittleEndian.Uint64(doc[i:])
	m := numberEnd(w)
	if m == 0 {
		return c.uintLoop(dst)
	}
	n := bits.TrailingZeros64(m) >> 3 // the number's length, 0 to 7
	if n == 0 || n > 1 && byte(w) == '0' {
		return false
	}
	// The n bytes moved to the top of the word over '0's: eight digits,
	// the first in the low byte, if they are digits.
	x := (w<<(64-8*n) | ones*'0'>>(8*n)) ^ ones*'0'
	if (x|(x+ones*0x76))&highs != 0 {
		return false // c^'0' is above 9: not a digit (see parseTime)
	}
	*dst = int64(eightDigits(x))
	c.i = i + n
	return true
}

// uintLoop is uint for a number of eight digits or more, or near the end of
// the document.
func (c *cursor) uintLoop(dst *int64) bool {
	doc, i := c.doc, c.i
	var n int64
	j := i
	for ; j < len(doc) && doc[j]-'0' <= 9; j++ {
		if j-i == 16 {
			return false // above MaxCount, which has 16 digits
		}
		n = n*10 + int64(doc[j]-'0')
	}
	if j == i || doc[i] == '0' && j > i+1 || n > MaxCount {
		return false
	}
	*dst, c.i = n, j
	return true
}

// numberEnd flags (with its high bit) each byte of w, the first in the low
// byte, that is ',' or '}', the bytes that may follow a number in the
// canonical layout; as in nonPlain, the lowest flag is exact (a borrow can
// flag a byte after a flagged one, never before).
func numberEnd(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	c := w ^ ones*','
	b := w ^ ones*'}'
	return ((c-ones)&^c | (b-ones)&^b) & highs
}

// eightDigits converts eight digit values (0 to 9), the most significant in
// the low byte, to their number: pairs, then quads, then the eight, each
// step one multiply (the SWAR method of simdjson).
func eightDigits(x uint64) uint64 {
	x = x * (10<<8 + 1) >> 8 & 0x00ff00ff00ff00ff
	x = x * (100<<16 + 1) >> 16 & 0x0000ffff0000ffff
	return x * (10000<<32 + 1) >> 32
}

// num reads the span of a non-integer number up to the ',' or '}' after it,
// loosely: its text is compared with the exact expected text afterwards.
func (c *cursor) num(dst *span) bool {
	doc, i := c.doc, c.i
	j := i
	if len(doc)-i >= 8 {
		if m := numberEnd(binary.LittleEndian.Uint64(doc[i:])); m != 0 {
			j += bits.TrailingZeros64(m) >> 3
		} else {
			j += 8
		}
	}
	for j < len(doc) && numberByte[doc[j]] {
		j++
	}
	if j == i {
		return false
	}
	*dst, c.i = mkSpan(i, j), j
	return true
}

// time reads "YYYY-MM-DDTHH:MM:SSZ" naming a real instant, as Unix time.
func (c *cursor) time(dst *int64) bool {
	doc, i := c.doc, c.i
	if len(doc)-i < 21 || doc[i+20] != '"' {
		return false
	}
	sec, ok := parseTime(doc[i : i+20])
	*dst, c.i = sec, i+21
	return ok
}

// uuid reads a version 4 UUID as uuid.UUID.String writes it.
func (c *cursor) uuid(dst *span) bool {
	doc, i := c.doc, c.i
	if len(doc)-i < 37 || doc[i+36] != '"' || !isUUIDv4(doc[i:i+36]) {
		return false
	}
	*dst, c.i = mkSpan(i, i+36), i+37
	return true
}

// sig reads 64 lowercase hex digits, decoded.
func (c *cursor) sig(dst *[32]byte) bool {
	doc, i := c.doc, c.i
	if len(doc)-i < 65 || doc[i+64] != '"' {
		return false
	}
	raw, ok := decodeSignature(doc[i : i+64])
	*dst, c.i = raw, i+65
	return ok
}

// issuedDim is what the issued path reads of a dimension.
type issuedDim struct {
	actual, max, total, success int64
	rate, volume                span
}

// dim reads a dimension: commercial_reliability if ap2, else
// technical_execution.
func (c *cursor) dim(d *issuedDim, ap2 bool) bool {
	if ap2 {
		if !c.matchCRActual() || !c.uint(&d.actual) || !c.matchCRMax() {
			return false
		}
	} else if !c.matchTEActual() || !c.uint(&d.actual) || !c.matchTEMax() {
		return false
	}
	return c.uint(&d.max) &&
		c.matchSessions() && c.uint(&d.total) &&
		c.matchRate() && c.num(&d.rate) &&
		c.matchSuccess() && c.uint(&d.success) &&
		c.matchVolume() && c.num(&d.volume)
}

// matches reports whether the dimension read is want, as the formula gave
// it, with its rate and volume factor in the exact text numbers holds at
// rate and volume.
func (d *issuedDim) matches(c *cursor, want *Dimension, ns *numbers, rate, volume int) bool {
	return d.actual == int64(want.ActualContribution) && d.max == int64(want.MaxContribution) &&
		bytes.Equal(c.doc[d.rate.lo:d.rate.hi], ns.get(rate)) && bytes.Equal(c.doc[d.volume.lo:d.volume.hi], ns.get(volume))
}

// issuedGap is what the issued path reads of a qualification gap.
type issuedGap struct {
	actual, required  int64
	requirement, tier span
}

// issued is what the issued path reads of a document.
type issued struct {
	agent, pid, platform, tier, escrow span
	cr, te                             issuedDim
	expires, computed                  int64
	sigRaw                             [32]byte
	ap2, conduit, value                int64
	gaps                               [maxGaps]issuedGap
	nGaps                              int
	sigStart, sigEnd, msgEnd           int
	escaped                            bool // the platform has escapes
}

// read reads doc in the canonical layout. It checks the syntax and the
// formats of the values, not what they say.
func (d *issued) read(c *cursor) bool {
	ok := c.matchAgent() && c.str(&d.agent) &&
		c.matchPID() && c.uuid(&d.pid) &&
		c.dim(&d.cr, true) &&
		c.dim(&d.te, false) &&
		c.matchEscrow() && c.num(&d.escrow) &&
		c.matchExpires() && c.time(&d.expires) &&
		c.matchComputed() && c.time(&d.computed) &&
		c.matchPlatform() && c.platform(&d.platform, &d.escaped)
	if !ok {
		return false
	}
	d.sigStart = c.i
	if !c.matchSig() || !c.sig(&d.sigRaw) {
		return false
	}
	d.sigEnd = c.i
	if !c.matchGaps() {
		return false
	}
	for d.nGaps < maxGaps && c.i < len(c.doc) && c.doc[c.i] == '{' {
		g := &d.gaps[d.nGaps]
		d.nGaps++
		ok := c.matchGapAct() && c.uint(&g.actual) &&
			c.matchGapReq() && c.uint(&g.required) &&
			c.matchGapWhat() && c.str(&g.requirement) &&
			c.matchGapTier() && c.str(&g.tier) &&
			c.matchGapEnd()
		if !ok {
			return false
		}
		if !c.lit(",") {
			break
		}
	}
	ok = c.matchAP2() && c.uint(&d.ap2) &&
		c.matchConduit() && c.uint(&d.conduit) &&
		c.matchTier() && c.str(&d.tier) &&
		c.matchValue() && c.uint(&d.value) &&
		c.matchEnd()
	if !ok {
		return false
	}
	d.msgEnd = c.i
	for _, b := range c.doc[c.i:] {
		if b != ' ' && b != '\t' && b != '\n' && b != '\r' {
			return false
		}
	}
	return true
}

// fill checks what was read against the formula: when it is a passport
// checkPassport accepts, it fills in p all but the strings the document
// names (agent_id, agent_passport_id, platform, signature), which the
// caller sets, and returns true.
func (d *issued) fill(c *cursor, p *Passport) bool {
	text := func(s span) []byte { return c.doc[s.lo:s.hi] }
	res, err := score.Compute(score.Counts{ConduitTotal: d.te.total, ConduitSuccess: d.te.success, AP2Total: d.cr.total, AP2Success: d.cr.success})
	if err != nil {
		return false // successes above the total
	}
	agent, platform := text(d.agent), text(d.platform)
	if d.escaped {
		var buf [2 * maxPlatformLen]byte // the longest platform, all escapes
		if len(platform) > len(buf) {
			return false
		}
		platform = unescape(buf[:0], platform)
	}
	if d.value != int64(res.Score) || d.conduit != int64(res.ConduitContribution) || d.ap2 != int64(res.AP2Contribution) ||
		string(text(d.tier)) != res.Tier.String() || d.expires != d.computed+int64(Validity/time.Second) ||
		len(agent) == 0 || len(agent) > maxAgentIDLen || !validPlatform(platform) {
		return false
	}
	for _, b := range agent {
		if !agentIDByte[b] {
			return false
		}
	}
	te, cr := &p.Dimensions.TechnicalExecution, &p.Dimensions.CommercialReliability
	*te, *cr = dimension(LabelConduit, res.Conduit()), dimension(LabelAP2, res.AP2())
	var ns numbers
	ns.fill(p)
	var esc [8]byte
	escText, _ := res.Escrow.AppendText(esc[:0])
	if !d.te.matches(c, te, &ns, numTERate, numTEVolume) || !d.cr.matches(c, cr, &ns, numCRRate, numCRVolume) ||
		!bytes.Equal(text(d.escrow), escText) {
		return false
	}
	gaps := res.AppendGaps(p.QualificationGaps[:0])
	if len(gaps) != d.nGaps {
		return false
	}
	for k := range gaps {
		g, w := &d.gaps[k], &gaps[k]
		if g.actual != w.Actual || g.required != w.Required ||
			string(text(g.requirement)) != w.Requirement || string(text(g.tier)) != w.Tier.String() {
			return false
		}
	}
	p.SwarmScoreVersion, p.FormulaVersion = Version, score.FormulaVersion
	p.Issuer.ComputedAt = time.Unix(d.computed, 0).UTC()
	p.ExpiresAt = time.Unix(d.expires, 0).UTC()
	p.Score = Score{Value: res.Score, Tier: res.Tier, ConduitContribution: res.ConduitContribution, AP2Contribution: res.AP2Contribution}
	p.EscrowModifier = res.Escrow
	p.QualificationGaps = gaps[:len(gaps):len(gaps)]
	return true
}

// verifyIssued is Verify for a document in the canonical layout whose
// content is consistent, or nil for any other.
func verifyIssued(doc []byte, keys []Key, at time.Time) *Verification {
	if slowOnly || noIssuedPath {
		return nil
	}
	var d issued
	c := cursor{doc: doc}
	if !d.read(&c) {
		return nil
	}
	// One allocation holds the verification, the passport and its gaps (it
	// is wasted when the content is inconsistent), and one the passport's
	// strings.
	r := new(fastResult)
	p := &r.p
	p.QualificationGaps = r.gaps[:0:maxGaps]
	if !d.fill(&c, p) {
		return nil
	}
	if onFastPath != nil {
		onFastPath()
	}

	agent, pid, platform := c.doc[d.agent.lo:d.agent.hi], c.doc[d.pid.lo:d.pid.hi], c.doc[d.platform.lo:d.platform.hi]
	setStrings(p, doc[d.sigEnd-65:d.sigEnd-1], pid, agent, platform, d.escaped)

	v := &r.v
	*v = Verification{Errors: []Problem{}, Warnings: []Problem{}, Document: doc, KeyIndex: -1}
	sig := sigInfo{found: true, wellFormed: true, value: p.Issuer.Signature, raw: d.sigRaw}
	v.SignatureValid = v.checkSignature(&sig, doc[:d.sigStart], doc[d.sigEnd:d.msgEnd], keys)
	v.finish(p, nil, true, at, true)
	return v
}
