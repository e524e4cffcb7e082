package passport

import (
	"bytes"
	"encoding/hex"
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
//     as the slow path.
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
	lAlg
	lComputed
	lKID
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

	issuerMembers = optional(members61("platform", "computed_at", "alg", "kid", "signature"), "alg", "kid")
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
	// required has bit j set for each member j an object must have.
	required uint32
}

// members61 makes the members of an object from its names in §6.1 order.
func members61(names61 ...string) *members {
	m := &members{names: slices.Sorted(slices.Values(names61)), next61: make([]int, len(names61)+1), required: 1<<len(names61) - 1}
	prev := -1
	for _, name := range names61 {
		j := slices.Index(m.names, name)
		m.next61[prev+1], prev = j, j
	}
	return m
}

// optional marks the named members of m as ones an object may lack.
func optional(m *members, names ...string) *members {
	for _, name := range names {
		m.required &^= 1 << slices.Index(m.names, name)
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
		return d.next('}') && seen&m.required == m.required
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
			return d.object(issuerMembers, func(j int) bool { return d.scalar(&d.leaf[lAlg+j], lAlg+j == lPlatform) })
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
// plainByte, or len(doc).
func plainEnd(doc []byte, j int) int {
	for j < len(doc) && plainByte[doc[j]] {
		j++
	}
	return j
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
	if !ok || len(b) != len(timeLayout) {
		return false
	}
	for i, c := range b {
		if timeLayout[i] == 'd' && c-'0' > 9 || timeLayout[i] != 'd' && c != timeLayout[i] {
			return false
		}
	}
	num := func(i, n int) (v int) {
		for _, c := range b[i : i+n] {
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, day, h, mi, sec := num(0, 4), time.Month(num(5, 2)), num(8, 2), num(11, 2), num(14, 2), num(17, 2)
	t := time.Date(y, mo, day, h, mi, sec, 0, time.UTC)
	// time.Date normalises February 30th, 24:00 and the like, which are not
	// instants as written.
	if ty, tmo, tday := t.Date(); ty != y || tmo != mo || tday != day || h > 23 || mi > 59 || sec > 59 {
		return false
	}
	*dst = t
	return true
}

// timeLayout is the one time format the fast path reads; 'd' is a digit.
const timeLayout = "dddd-dd-ddTdd:dd:ddZ"

// numberIs reports whether leaf s is exactly the text want.
func (d *fastDoc) numberIs(s span, want []byte) bool { return bytes.Equal(d.text(s), want) }

// floatIs reports whether leaf s is exactly f in ECMAScript form.
func (d *fastDoc) floatIs(s span, f float64) bool {
	var buf [32]byte
	return d.numberIs(s, appendFloat(buf[:0], f))
}

// passport interprets the scanned leaves into p, which must have room for the
// gaps (len(p.QualificationGaps) == maxGaps), and returns the signature. ok
// is false for anything the slow path would read differently or report as a
// parse error.
func (d *fastDoc) passport(p *Passport) (sig sigInfo, ok bool) {
	te, cr := &p.Dimensions.TechnicalExecution, &p.Dimensions.CommercialReliability
	if !d.is(d.leaf[lVersion], Version) || !d.is(d.leaf[lFormula], score.FormulaVersion) ||
		!d.is(d.leaf[lTE+dLabel], LabelConduit) || !d.is(d.leaf[lCR+dLabel], LabelAP2) ||
		!d.time(d.leaf[lComputed], &p.Issuer.ComputedAt) || !d.time(d.leaf[lExpires], &p.ExpiresAt) ||
		!d.int(d.leaf[lValue], &p.Score.Value) || !d.int(d.leaf[lConduit], &p.Score.ConduitContribution) ||
		!d.int(d.leaf[lAP2], &p.Score.AP2Contribution) {
		return sig, false
	}
	p.SwarmScoreVersion, p.FormulaVersion = Version, score.FormulaVersion
	te.Label, cr.Label = LabelConduit, LabelAP2
	if p.Score.Tier, ok = d.tier(d.leaf[lTier]); !ok {
		return sig, false
	}
	for _, x := range [2]struct {
		dim  *Dimension
		base int
	}{{te, lTE}, {cr, lCR}} {
		var total, success int64
		if total, ok = d.integer(d.leaf[x.base+dSessions]); !ok {
			return sig, false
		}
		if success, ok = d.integer(d.leaf[x.base+dSuccessful]); !ok {
			return sig, false
		}
		x.dim.Sessions90d, x.dim.SuccessfulSessions90d = total, success
		if !d.int(d.leaf[x.base+dMax], &x.dim.MaxContribution) || !d.int(d.leaf[x.base+dActual], &x.dim.ActualContribution) {
			return sig, false
		}
	}
	// The non-integer numbers must be the text the counts give; then their
	// values are known without parsing them.
	res, err := score.Compute(p.Counts())
	if err != nil { // the slow path says why
		return sig, false
	}
	conduit, ap2 := res.Conduit(), res.AP2()
	te.SuccessRate, te.VolumeFactor = conduit.Rate(), conduit.VolumeFactor()
	cr.SuccessRate, cr.VolumeFactor = ap2.Rate(), ap2.VolumeFactor()
	var esc [8]byte
	escText, _ := res.Escrow.AppendText(esc[:0])
	if !d.floatIs(d.leaf[lTE+dRate], te.SuccessRate) || !d.floatIs(d.leaf[lTE+dVolume], te.VolumeFactor) ||
		!d.floatIs(d.leaf[lCR+dRate], cr.SuccessRate) || !d.floatIs(d.leaf[lCR+dVolume], cr.VolumeFactor) ||
		!d.numberIs(d.leaf[lEscrow], escText) {
		return sig, false
	}
	p.EscrowModifier = res.Escrow

	gaps := p.QualificationGaps[:d.nGaps]
	for i := range gaps {
		g, q := &d.gaps[i], &gaps[i]
		if q.Tier, ok = d.tier(g[gTier]); !ok {
			return sig, false
		}
		if q.Required, ok = d.integer(g[gRequired]); !ok {
			return sig, false
		}
		if q.Actual, ok = d.integer(g[gActual]); !ok {
			return sig, false
		}
		switch r, _ := d.str(g[gRequirement]); string(r) {
		case "score":
			q.Requirement = "score"
		case "conduit_sessions_90d":
			q.Requirement = "conduit_sessions_90d"
		case "ap2_sessions_90d":
			q.Requirement = "ap2_sessions_90d"
		default:
			return sig, false
		}
	}
	p.QualificationGaps = gaps

	// The free strings, copied into one allocation. issuer.alg and
	// issuer.kid are optional; present, they are strings.
	sigText, ok1 := d.str(d.leaf[lSignature])
	pid, ok2 := d.str(d.leaf[lPassportID])
	agent, ok3 := d.str(d.leaf[lAgentID])
	platform, ok4 := d.str(d.leaf[lPlatform])
	var upper bool
	sig.n, upper, ok = decodeSignature(sigText, &sig.raw)
	if upper {
		sigText = hex.AppendEncode(nil, sig.raw[:sig.n]) // as Parse keeps it
	}
	var alg, kid []byte
	sig.hasAlg, sig.hasKID = d.leaf[lAlg].hi > 0, d.leaf[lKID].hi > 0 // no value starts at byte 0
	ok6, ok7 := true, true
	if sig.hasAlg {
		alg, ok6 = d.str(d.leaf[lAlg])
	}
	if sig.hasKID {
		kid, ok7 = d.str(d.leaf[lKID])
	}
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok || !ok6 || !ok7 {
		return sig, false // a malformed signature and the rest: let the slow path say
	}
	setStrings(p, [...][]byte{sigText, pid, agent, platform, alg, kid}, d.escaped)
	sig.found, sig.wellFormed = true, true
	return sig, true
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
	b = append(b, `,"issuer":{`...)
	if d.leaf[lAlg].hi > 0 {
		b = leaf(b, `"alg":`, lAlg)
		b = append(b, ',')
	}
	b = leaf(b, `"computed_at":`, lComputed)
	if d.leaf[lKID].hi > 0 {
		b = leaf(b, `,"kid":`, lKID)
	}
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

// verifyFast is Verify for a well-formed V1 passport in any member order and
// layout, or nil: then the document must take verifySlow. Other formula
// versions always take the slow path, which recomputes with the formula acc
// names; acc's windows apply to both paths alike (finish).
func verifyFast(doc []byte, keys []Key, at time.Time, acc Acceptance) *Verification {
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
	sig, ok := d.passport(&r.p)
	if !ok {
		return nil
	}
	r.p.QualificationGaps = r.gaps[:d.nGaps:d.nGaps]
	v := &r.v
	*v = Verification{Errors: []Problem{}, Warnings: []Problem{}, Document: doc, KeyIndex: -1}
	buf := msgBufs.Get().(*[]byte)
	msg := d.message((*buf)[:0])
	v.SignatureValid = v.checkSignature(&sig, &r.p.Issuer, msg, keys)
	*buf = msg
	msgBufs.Put(buf)
	v.finish(&r.p, nil, true, true, at, &acc)
	return v
}

// setStrings sets the passport's strings from the document's text: the
// signature, agent_passport_id, agent_id, platform (with its \" and \\
// escapes if escaped), alg and kid, copied into one allocation.
func setStrings(p *Passport, text [6][]byte, escaped bool) {
	if escaped {
		var buf [2 * maxPlatformLen]byte // most platforms; a longer one is copied to the heap
		text[3] = unescape(buf[:0], text[3])
	}
	n := 0
	for _, t := range text {
		n += len(t)
	}
	var b strings.Builder // a string built in place, with no copy
	b.Grow(n)
	for _, t := range text {
		b.Write(t)
	}
	all := b.String()
	for i, dst := range [...]*string{&p.Issuer.Signature, &p.AgentPassportID, &p.AgentID, &p.Issuer.Platform, &p.Issuer.Alg, &p.Issuer.KID} {
		*dst, all = all[:len(text[i])], all[len(text[i]):]
	}
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
