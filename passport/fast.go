package passport

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/score"
)

// The fast path of Verify. The token walk in parse.go plus jcs.Transform is
// precise but costs many times the HMAC, because it builds a generic tree.
// Almost every document a verifier sees is a well-formed passport: as Sign
// issues it (canonical member order, compact), or as another issuer or an
// earlier version of this package laid it out (§6.1 member order,
// indentation, escapes in the platform). verifyFast reads those in a single
// pass over the known schema:
//
//  1. scan the document with exactly the known members, each once, in any
//     order, with insignificant whitespace anywhere JSON allows it. Every
//     value must be a string or number in RFC 8785 canonical form (strings
//     with no escapes but \" and \\, valid UTF-8; numbers as ECMAScript
//     writes them). The scan records the byte span of every value.
//  2. interpret the spans: integers are plain digits up to MaxCount, times are
//     RFC 3339 UTC whole seconds, enums are their exact names, and the rates,
//     volume factors and escrow modifier must be exactly the text the counts
//     give (so no float or big.Rat is parsed).
//  3. the signed message is the received value spans reassembled in JCS member
//     order without issuer.signature: since every span is canonical, that is
//     the canonical form of the document minus the signature, the bytes the
//     slow path would HMAC, without re-encoding anything.
//  4. HMAC, constant-time compare, consistency and expiry with the same code
//     as the slow path (the consistency checks the values read in step 2
//     already settle are not repeated).
//
// Anything else (an unknown member, a duplicate, another type, an escape, a
// non-canonical number, a value the slow parser would reject) makes
// verifyFast return nil, and verifySlow decides, with its diagnostics. The
// tests and fuzz targets check that the two agree on every input verifyFast
// decides.

// span is a value's bytes in the document: [lo, hi), strings with quotes.
type span struct {
	lo, hi int32 // documents are at most MaxDocumentSize bytes
}

func mkSpan(lo, hi int) span { return span{lo: int32(lo), hi: int32(hi)} }

// Leaves of a passport, numbered in JCS order within each object.
const (
	// top level
	lAgentID = iota
	lPassportID
	lEscrow
	lExpires
	lFormula
	lVersion
	// issuer
	lComputed
	lPlatform
	lSignature
	// score
	lAP2
	lConduit
	lTier
	lValue
	// dimensions.commercial_reliability, then technical_execution
	lCR
	lTE     = lCR + nDim
	nLeaves = lTE + nDim
)

// Dimension leaves, in JCS order.
const (
	dActual = iota
	dLabel
	dMax
	dSessions
	dRate
	dSuccessful
	dVolume
	nDim
)

// Gap leaves, in JCS order.
const (
	gActual = iota
	gRequired
	gRequirement
	gTier
	nGap
)

// maxGaps is the most gaps a consistent passport lists (score, conduit and
// AP2 requirements).
const maxGaps = 3

// The members of each object, and what each top-level member holds: a leaf
// index, or a negative object marker.
var (
	topMembers = members61("swarmscore_version", "agent_passport_id", "agent_id", "issuer", "score", "dimensions",
		"escrow_modifier", "qualification_gaps", "formula_version", "expires_at")
	topLeaf = [...]int{lAgentID, lPassportID, objDimensions, lEscrow, lExpires, lFormula, objIssuer, objGaps, objScore, lVersion}

	issuerMembers = members61("platform", "computed_at", "signature")
	scoreMembers  = members61("value", "tier", "conduit_contribution", "ap2_contribution")
	dimsMembers   = members61("technical_execution", "commercial_reliability")
	dimMembers    = members61("label", "sessions_90d", "successful_sessions_90d", "success_rate", "volume_factor",
		"max_contribution", "actual_contribution")
	gapMembers = members61("tier", "requirement", "required", "actual")
)

// members are an object's member names in JCS order (sorted: they are
// ASCII), numbered as the leaves are. Documents list them in that order
// (Sign's) or in §6.1's (json.Marshal's), so the scan tries the member after
// the last one in each order before it tries them all: next61[j+1] is the
// index of the member after member j in §6.1 order, next61[0] the first.
type members struct {
	names  []string
	next61 []int
}

// members61 makes the members of an object from its names in §6.1 order.
func members61(names61 ...string) *members {
	m := &members{names: slices.Sorted(slices.Values(names61)), next61: make([]int, len(names61)+1)}
	prev := -1
	for _, name := range names61 {
		j := slices.Index(m.names, name)
		m.next61[prev+1], prev = j, j
	}
	return m
}

const (
	objDimensions = -1 - iota
	objIssuer
	objGaps
	objScore
)

// fastDoc is the result of the scan.
type fastDoc struct {
	doc     []byte
	i       int
	leaf    [nLeaves]span
	gaps    [maxGaps][nGap]span
	nGaps   int
	escaped bool // the platform has \" or \\ escapes
}

func (d *fastDoc) ws() {
	for d.i < len(d.doc) {
		switch d.doc[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips whitespace and consumes c.
func (d *fastDoc) next(c byte) bool {
	if d.i < len(d.doc) && d.doc[d.i] == c { // compact documents have no whitespace
		d.i++
		return true
	}
	d.ws()
	if d.i < len(d.doc) && d.doc[d.i] == c {
		d.i++
		return true
	}
	return false
}

// object scans an object whose members are exactly m's, each once, in any
// order, calling member with each member's index once the colon is read.
func (d *fastDoc) object(m *members, member func(j int) bool) bool {
	if !d.next('{') {
		return false
	}
	names := m.names
	var seen uint32
	prev := -1
	for {
		if !d.next('"') {
			return false
		}
		j := prev + 1 // the next in JCS order, then in §6.1 order, then any
		if j == len(names) || !d.name(names[j]) {
			if j = m.next61[prev+1]; !d.name(names[j]) {
				for j = 0; j < len(names) && !d.name(names[j]); j++ {
				}
			}
		}
		if j == len(names) || seen&(1<<j) != 0 || !d.next(':') {
			return false // an unknown name, or a duplicate
		}
		seen |= 1 << j
		if !member(j) {
			return false
		}
		prev = j
		if d.next(',') {
			continue
		}
		return d.next('}') && seen == 1<<len(names)-1
	}
}

// name consumes the rest of a member name, after the opening quote, if it is
// n. No name contains a quote or a backslash, so a name that is n followed by
// a quote is n, without escapes.
func (d *fastDoc) name(n string) bool {
	rest := d.doc[d.i:]
	if len(rest) > len(n) && rest[len(n)] == '"' && string(rest[:len(n)]) == n {
		d.i += len(n) + 1
		return true
	}
	return false
}

// scalar scans a string or number into dst. Strings may hold only the escapes
// \" and \\ (and only the platform, which sets d.escaped); numbers are
// scanned loosely and checked exactly when interpreted.
func (d *fastDoc) scalar(dst *span, escapes bool) bool {
	d.ws()
	start := d.i
	if d.i >= len(d.doc) {
		return false
	}
	if d.doc[d.i] != '"' {
		return d.numVal(dst)
	}
	d.i++
	// Common case: printable ASCII up to the closing quote.
	if j := plainEnd(d.doc, d.i); j < len(d.doc) && d.doc[j] == '"' {
		d.i = j + 1
		*dst = mkSpan(start, d.i)
		return true
	}
	ascii := true
	for d.i < len(d.doc) {
		c := d.doc[d.i]
		switch {
		case c == '"':
			d.i++
			*dst = mkSpan(start, d.i)
			return ascii || utf8.Valid(d.doc[start+1:d.i-1])
		case c < 0x20:
			return false
		case c == '\\':
			if !escapes || d.i+1 >= len(d.doc) || d.doc[d.i+1] != '"' && d.doc[d.i+1] != '\\' {
				return false
			}
			d.escaped = true
			d.i += 2
			continue
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.i++
	}
	return false
}

// plainByte is printable ASCII but '"' and '\\'; numberByte is what a JSON
// number may hold.
var plainByte, numberByte = func() (p, n [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		p[c] = c != '"' && c != '\\'
	}
	for _, c := range "0123456789.eE+-" {
		n[c] = true
	}
	return p, n
}()

func (d *fastDoc) scan() bool {
	ok := d.object(topMembers, func(j int) bool {
		switch l := topLeaf[j]; l {
		case objIssuer:
			return d.object(issuerMembers, func(j int) bool { return d.scalar(&d.leaf[lComputed+j], j == 1) })
		case objScore:
			return d.object(scoreMembers, func(j int) bool { return d.scalar(&d.leaf[lAP2+j], false) })
		case objDimensions:
			return d.object(dimsMembers, func(j int) bool {
				base := lCR + j*nDim
				return d.object(dimMembers, func(k int) bool { return d.scalar(&d.leaf[base+k], false) })
			})
		case objGaps:
			if !d.next('[') {
				return false
			}
			if d.next(']') {
				return true
			}
			for {
				if d.nGaps == maxGaps {
					return false
				}
				g := &d.gaps[d.nGaps]
				d.nGaps++
				if !d.object(gapMembers, func(k int) bool { return d.scalar(&g[k], false) }) {
					return false
				}
				if d.next(']') {
					return true
				}
				if !d.next(',') {
					return false
				}
			}
		default:
			return d.scalar(&d.leaf[l], false)
		}
	})
	d.ws()
	return ok && d.i == len(d.doc)
}

// numVal scans a number value into dst without whitespace before it,
// loosely (numberByte): interpreting it checks it exactly.
func (d *fastDoc) numVal(dst *span) bool {
	doc, i := d.doc, d.i
	for i < len(doc) && numberByte[doc[i]] {
		i++
	}
	*dst = mkSpan(d.i, i)
	ok := i > d.i
	d.i = i
	return ok
}

// plainEnd returns the index of the first byte at or after j that is not
// plainByte, or len(doc): eight bytes at a time (nonPlain), then one at a
// time near the end. The strings are short, so bytes.IndexByte's setup would
// cost more.
func plainEnd(doc []byte, j int) int {
	for len(doc)-j >= 8 {
		if m := nonPlain(binary.LittleEndian.Uint64(doc[j:])); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
		j += 8
	}
	for j < len(doc) && plainByte[doc[j]] {
		j++
	}
	return j
}

// nonPlain flags (with its high bit) each of the 8 bytes of w, the first in
// the low byte, that is not plainByte: below 0x20, at or above 0x80, '"' or
// '\\'. It uses the classic bit tricks that find a zero byte, or one below
// n: a borrow can flag a byte above (after) a flagged one, never below, so
// the mask is zero iff all 8 are plain and its lowest flag is exactly the
// first byte that is not.
func nonPlain(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	ctl := (w - ones*0x20) &^ w
	q := w ^ ones*'"'
	q = (q - ones) &^ q
	bs := w ^ ones*'\\'
	bs = (bs - ones) &^ bs
	return (ctl | q | bs | w) & highs
}

func (d *fastDoc) text(s span) []byte { return d.doc[s.lo:s.hi] }

// str returns a string leaf's content, or false if the leaf is not a string.
func (d *fastDoc) str(s span) ([]byte, bool) {
	if s.hi-s.lo < 2 || d.doc[s.lo] != '"' {
		return nil, false
	}
	return d.doc[s.lo+1 : s.hi-1], true
}

// is reports whether leaf s is exactly the JSON string want.
func (d *fastDoc) is(s span, want string) bool {
	b, ok := d.str(s)
	return ok && string(b) == want
}

// integer reads a canonical integer in [0, MaxCount]: "0" or digits without
// a leading zero. Negative numbers and other spellings take the slow path.
func (d *fastDoc) integer(s span) (int64, bool) {
	b := d.text(s)
	if len(b) == 0 || len(b) > 16 || b[0] == '0' && len(b) > 1 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c-'0' > 9 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n <= MaxCount
}

func (d *fastDoc) int(s span, dst *int) bool {
	n, ok := d.integer(s)
	*dst = int(n)
	return ok
}

// tier reads a tier name.
func (d *fastDoc) tier(s span) (score.Tier, bool) {
	b, ok := d.str(s)
	if !ok {
		return 0, false
	}
	switch string(b) {
	case "NONE":
		return score.TierNone, true
	case "STANDARD":
		return score.TierStandard, true
	case "ELITE":
		return score.TierElite, true
	}
	return 0, false
}

// time reads "YYYY-MM-DDTHH:MM:SSZ" naming a real instant, the one form
// the slow path accepts (time.Parse with RFC 3339, formatted back unchanged).
func (d *fastDoc) time(s span, dst *time.Time) bool {
	b, ok := d.str(s)
	if !ok {
		return false
	}
	sec, ok := parseTime(b)
	if ok {
		// time.Date gives the same Time, at several times the cost.
		*dst = time.Unix(sec, 0).UTC()
	}
	return ok
}

// parseTime reads b as "YYYY-MM-DDTHH:MM:SSZ" naming a real instant and
// returns its Unix time. It reads b as three little-endian words (w0, w1, w2:
// "YYYY-MM-", "DDTHH:MM", ":SSZ"), compares the separators under a mask, and
// checks all 14 digits at once: c^'0' is at most 9 for exactly the digits,
// and (c^'0')+0x76 sets the high bit of a byte iff c^'0' is above 9 (no
// carry from a separator, whose values are fixed, or a digit; a byte with
// the high bit already set fails the check itself).
func parseTime(b []byte) (int64, bool) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	if len(b) != 20 {
		return 0, false
	}
	w0 := binary.LittleEndian.Uint64(b[0:8])
	w1 := binary.LittleEndian.Uint64(b[8:16])
	w2 := uint64(binary.LittleEndian.Uint32(b[16:20]))
	const (
		sep0, sepMask0 = '-'<<32 | '-'<<56, 0xff<<32 | 0xff<<56
		sep1, sepMask1 = 'T'<<16 | ':'<<40, 0xff<<16 | 0xff<<40
		sep2, sepMask2 = ':' | 'Z'<<24, 0xff | 0xff<<24
	)
	if w0&sepMask0 != sep0 || w1&sepMask1 != sep1 || w2&sepMask2 != sep2 {
		return 0, false
	}
	x0, x1, x2 := w0^ones*'0', w1^ones*'0', w2^ones*'0'
	nonDigit := (x0|(x0+ones*0x76))&(highs&^sepMask0) |
		(x1|(x1+ones*0x76))&(highs&^sepMask1) |
		(x2|(x2+ones*0x76))&(highs&^sepMask2&0xffffffff)
	if nonDigit != 0 {
		return 0, false
	}
	digit := func(x uint64, k int) int { return int(x >> (8 * k) & 0xf) }
	two := func(x uint64, k int) int { return digit(x, k)*10 + digit(x, k+1) }
	y, mo, day := two(x0, 0)*100+two(x0, 2), two(x0, 5), two(x1, 0)
	h, mi, sec := two(x1, 3), two(x1, 6), two(x2, 1)
	if mo < 1 || mo > 12 || day < 1 || day > daysIn(mo, y) || h > 23 || mi > 59 || sec > 59 {
		return 0, false // February 30th and the like are not instants
	}
	return daysFromCivil(y, mo, day)*86400 + int64(h*3600+mi*60+sec), true
}

// daysIn is the number of days of month mo of year y (proleptic Gregorian).
func daysIn(mo, y int) int {
	if mo == 2 {
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	}
	return 30 + (mo+mo/8)%2
}

// daysFromCivil is the number of days from 1970-01-01 to y-mo-d, for y ≥ 0
// (H. Hinnant's algorithm).
func daysFromCivil(y, mo, d int) int64 {
	if mo <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	doy := (153*((mo+9)%12)+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// numberIs reports whether leaf s is exactly the text want.
func (d *fastDoc) numberIs(s span, want []byte) bool { return bytes.Equal(d.text(s), want) }

// passport interprets the scanned leaves into p, which must have room for the
// gaps (len(p.QualificationGaps) == maxGaps) and returns the signature and
// the score result of the counts. ok
// is false for anything the slow path would read differently or report as a
// parse error.
func (d *fastDoc) passport(p *Passport) (sig sigInfo, res score.Result, ok bool) {
	var te, cr *Dimension = &p.Dimensions.TechnicalExecution, &p.Dimensions.CommercialReliability
	if !d.is(d.leaf[lVersion], Version) || !d.is(d.leaf[lFormula], score.FormulaVersion) ||
		!d.is(d.leaf[lTE+dLabel], LabelConduit) || !d.is(d.leaf[lCR+dLabel], LabelAP2) ||
		!d.time(d.leaf[lComputed], &p.Issuer.ComputedAt) || !d.time(d.leaf[lExpires], &p.ExpiresAt) ||
		!d.int(d.leaf[lValue], &p.Score.Value) || !d.int(d.leaf[lConduit], &p.Score.ConduitContribution) ||
		!d.int(d.leaf[lAP2], &p.Score.AP2Contribution) {
		return sig, res, false
	}
	p.SwarmScoreVersion, p.FormulaVersion = Version, score.FormulaVersion
	te.Label, cr.Label = LabelConduit, LabelAP2
	if p.Score.Tier, ok = d.tier(d.leaf[lTier]); !ok {
		return sig, res, false
	}
	for _, x := range [2]struct {
		dim  *Dimension
		base int
	}{{te, lTE}, {cr, lCR}} {
		var total, success int64
		if total, ok = d.integer(d.leaf[x.base+dSessions]); !ok {
			return sig, res, false
		}
		if success, ok = d.integer(d.leaf[x.base+dSuccessful]); !ok {
			return sig, res, false
		}
		x.dim.Sessions90d, x.dim.SuccessfulSessions90d = total, success
		if !d.int(d.leaf[x.base+dMax], &x.dim.MaxContribution) || !d.int(d.leaf[x.base+dActual], &x.dim.ActualContribution) {
			return sig, res, false
		}
	}
	// The non-integer numbers must be the text the counts give; then their
	// values are known without parsing them.
	res, err := score.Compute(p.Counts())
	if err != nil {
		return sig, res, false
	}
	conduit, ap2 := res.Conduit(), res.AP2()
	te.SuccessRate, te.VolumeFactor = conduit.Rate(), conduit.VolumeFactor()
	cr.SuccessRate, cr.VolumeFactor = ap2.Rate(), ap2.VolumeFactor()
	var ns numbers
	ns.fill(p)
	var esc [8]byte
	escText, _ := res.Escrow.AppendText(esc[:0])
	if !d.numberIs(d.leaf[lTE+dRate], ns.get(numTERate)) || !d.numberIs(d.leaf[lTE+dVolume], ns.get(numTEVolume)) ||
		!d.numberIs(d.leaf[lCR+dRate], ns.get(numCRRate)) || !d.numberIs(d.leaf[lCR+dVolume], ns.get(numCRVolume)) ||
		!d.numberIs(d.leaf[lEscrow], escText) {
		return sig, res, false
	}
	p.EscrowModifier = res.Escrow

	gaps := p.QualificationGaps[:d.nGaps]
	for i := range gaps {
		g, q := &d.gaps[i], &gaps[i]
		if q.Tier, ok = d.tier(g[gTier]); !ok {
			return sig, res, false
		}
		if q.Required, ok = d.integer(g[gRequired]); !ok {
			return sig, res, false
		}
		if q.Actual, ok = d.integer(g[gActual]); !ok {
			return sig, res, false
		}
		switch r, _ := d.str(g[gRequirement]); string(r) {
		case "score":
			q.Requirement = "score"
		case "conduit_sessions_90d":
			q.Requirement = "conduit_sessions_90d"
		case "ap2_sessions_90d":
			q.Requirement = "ap2_sessions_90d"
		default:
			return sig, res, false
		}
	}
	p.QualificationGaps = gaps

	// The free strings, copied into one allocation.
	sigText, ok1 := d.str(d.leaf[lSignature])
	pid, ok2 := d.str(d.leaf[lPassportID])
	agent, ok3 := d.str(d.leaf[lAgentID])
	platform, ok4 := d.str(d.leaf[lPlatform])
	raw, ok5 := decodeSignature(sigText)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return sig, res, false // a malformed signature and the rest: let the slow path say
	}
	setStrings(p, sigText, pid, agent, platform, d.escaped)
	sig = sigInfo{found: true, wellFormed: true, value: p.Issuer.Signature, raw: raw}
	return sig, res, true
}

// message appends the signed message: the value spans in JCS member order,
// without issuer.signature.
func (d *fastDoc) message(b []byte) []byte {
	leaf := func(b []byte, prefix string, l int) []byte {
		b = append(b, prefix...)
		return append(b, d.text(d.leaf[l])...)
	}
	dim := func(b []byte, base int) []byte {
		b = leaf(b, `{"actual_contribution":`, base+dActual)
		b = leaf(b, `,"label":`, base+dLabel)
		b = leaf(b, `,"max_contribution":`, base+dMax)
		b = leaf(b, `,"sessions_90d":`, base+dSessions)
		b = leaf(b, `,"success_rate":`, base+dRate)
		b = leaf(b, `,"successful_sessions_90d":`, base+dSuccessful)
		b = leaf(b, `,"volume_factor":`, base+dVolume)
		return append(b, '}')
	}
	b = leaf(b, `{"agent_id":`, lAgentID)
	b = leaf(b, `,"agent_passport_id":`, lPassportID)
	b = append(b, `,"dimensions":{"commercial_reliability":`...)
	b = dim(b, lCR)
	b = append(b, `,"technical_execution":`...)
	b = dim(b, lTE)
	b = leaf(b, `},"escrow_modifier":`, lEscrow)
	b = leaf(b, `,"expires_at":`, lExpires)
	b = leaf(b, `,"formula_version":`, lFormula)
	b = leaf(b, `,"issuer":{"computed_at":`, lComputed)
	b = leaf(b, `,"platform":`, lPlatform)
	b = append(b, `},"qualification_gaps":[`...)
	for i := range d.nGaps {
		g := &d.gaps[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"actual":`...)
		b = append(b, d.text(g[gActual])...)
		b = append(b, `,"required":`...)
		b = append(b, d.text(g[gRequired])...)
		b = append(b, `,"requirement":`...)
		b = append(b, d.text(g[gRequirement])...)
		b = append(b, `,"tier":`...)
		b = append(b, d.text(g[gTier])...)
		b = append(b, '}')
	}
	b = leaf(b, `],"score":{"ap2_contribution":`, lAP2)
	b = leaf(b, `,"conduit_contribution":`, lConduit)
	b = leaf(b, `,"tier":`, lTier)
	b = leaf(b, `,"value":`, lValue)
	b = leaf(b, `},"swarmscore_version":`, lVersion)
	return append(b, '}')
}

// fastResult is everything a fast verification returns, in one allocation.
type fastResult struct {
	v    Verification
	p    Passport
	gaps [maxGaps]score.Gap
}

// verifyFast is Verify for a well-formed passport in any member order and
// layout, or nil: then the document must take verifySlow.
func verifyFast(doc []byte, keys []Key, at time.Time) *Verification {
	if len(doc) > MaxDocumentSize {
		return nil
	}
	d := fastDoc{doc: doc}
	if !d.scan() {
		return nil
	}
	// One allocation holds the verification, the passport and its gaps; it
	// is wasted when the document takes the slow path after all.
	r := new(fastResult)
	r.p.QualificationGaps = r.gaps[:]
	sig, res, ok := d.passport(&r.p)
	if !ok {
		return nil
	}
	r.p.QualificationGaps = r.gaps[:d.nGaps:d.nGaps]
	v := &r.v
	*v = Verification{Errors: []Problem{}, Warnings: []Problem{}, Document: doc, KeyIndex: -1}
	buf := msgBufs.Get().(*[]byte)
	msg := d.message((*buf)[:0])
	v.SignatureValid = v.checkSignature(&sig, msg, nil, keys)
	*buf = msg
	msgBufs.Put(buf)
	v.finish(&r.p, nil, true, at, d.consistent(&r.p, &res))
	return v
}

// consistent reports whether p, read by the fast path from d with res the
// result of its counts, passes checkPassport: it checks only what the fast
// path has not established already (versions, labels, wire times, rates,
// volume factors and the escrow modifier are). When
// false, checkPassport runs and says why, so the findings are the slow
// path's.
func (d *fastDoc) consistent(p *Passport, res *score.Result) bool {
	if !isUUIDv4(p.AgentPassportID) || checkAgentID(p.AgentID) != nil || checkPlatform(p.Issuer.Platform) != nil ||
		!p.ExpiresAt.Equal(p.Issuer.ComputedAt.Add(Validity)) ||
		p.Score.Value != res.Score || p.Score.Tier != res.Tier ||
		p.Score.ConduitContribution != res.ConduitContribution || p.Score.AP2Contribution != res.AP2Contribution {
		return false
	}
	te, cr := &p.Dimensions.TechnicalExecution, &p.Dimensions.CommercialReliability
	c, a := res.Conduit(), res.AP2()
	if te.ActualContribution != c.Contribution || te.MaxContribution != c.MaxContribution ||
		cr.ActualContribution != a.Contribution || cr.MaxContribution != a.MaxContribution {
		return false
	}
	var gapsBuf [3]score.Gap
	return equalGaps(p.QualificationGaps, res.AppendGaps(gapsBuf[:0]))
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
