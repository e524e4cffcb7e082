package passport

import (
	"bytes"
	"time"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/score"
)

// The fast path of Verify. The token walk in parse.go plus jcs.Transform is
// precise but costs some 50 times the HMAC, because it builds a generic tree.
// Most documents a verifier sees are well-formed passports exactly as issued,
// by this package (§6.1 member order) or by another JCS issuer (canonical
// order), so Verify first tries a single pass over the known schema:
//
//  1. scan the document: exactly the known members, each once, in any order,
//     with insignificant whitespace anywhere JSON allows it; every value a
//     string or number in RFC 8785 canonical form (strings with no escapes but
//     \" and \\, valid UTF-8; numbers as ECMAScript writes them). The scan
//     records the byte span of every value.
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
// non-canonical number, a value the slow parser would reject) returns nil
// and the slow path decides, with its diagnostics. The tests and fuzz
// targets check that both paths agree on every input.

// Test hooks, only ever set by tests (before any concurrent use):
// slowOnly makes Verify skip the fast path, so tests can compare the paths,
// and onFastPath, if set, is called when the fast path decides.
var (
	slowOnly   bool
	onFastPath func()
)

// span is a value's bytes in the document: [lo, hi), strings with quotes.
type span struct{ lo, hi int }

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

// Member names of each object in JCS order, and what each member holds: a
// leaf index, or a negative object marker.
var (
	topNames = [...]string{"agent_id", "agent_passport_id", "dimensions", "escrow_modifier", "expires_at", "formula_version", "issuer", "qualification_gaps", "score", "swarmscore_version"}
	topLeaf  = [...]int{lAgentID, lPassportID, objDimensions, lEscrow, lExpires, lFormula, objIssuer, objGaps, objScore, lVersion}

	issuerNames = [...]string{"computed_at", "platform", "signature"}
	scoreNames  = [...]string{"ap2_contribution", "conduit_contribution", "tier", "value"}
	dimsNames   = [...]string{"commercial_reliability", "technical_execution"}
	dimNames    = [...]string{"actual_contribution", "label", "max_contribution", "sessions_90d", "success_rate", "successful_sessions_90d", "volume_factor"}
	gapNames    = [...]string{"actual", "required", "requirement", "tier"}
)

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
	d.ws()
	if d.i < len(d.doc) && d.doc[d.i] == c {
		d.i++
		return true
	}
	return false
}

// object scans an object whose members are exactly names, each once, in any
// order, calling member with each member's index once the colon is read.
func (d *fastDoc) object(names []string, member func(j int) bool) bool {
	if !d.next('{') {
		return false
	}
	var seen uint32
	for {
		if !d.next('"') {
			return false
		}
		end := bytes.IndexByte(d.doc[d.i:], '"')
		if end < 0 {
			return false
		}
		name := d.doc[d.i : d.i+end]
		d.i += end + 1
		j := 0
		for j < len(names) && string(name) != names[j] {
			j++
		}
		if j == len(names) || seen&(1<<j) != 0 || !d.next(':') {
			return false // unknown (or escaped) name, or a duplicate
		}
		seen |= 1 << j
		if !member(j) {
			return false
		}
		if d.next(',') {
			continue
		}
		return d.next('}') && seen == 1<<len(names)-1
	}
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
	if c := d.doc[d.i]; c != '"' {
		for d.i < len(d.doc) {
			c = d.doc[d.i]
			if !('0' <= c && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+') {
				break
			}
			d.i++
		}
		*dst = span{start, d.i}
		return d.i > start
	}
	d.i++
	// Common case: no escape before the closing quote, so the string ends there.
	if q := bytes.IndexByte(d.doc[d.i:], '"'); q >= 0 && bytes.IndexByte(d.doc[d.i:d.i+q], '\\') < 0 {
		content := d.doc[d.i : d.i+q]
		d.i += q + 1
		*dst = span{start, d.i}
		ascii := true
		for _, c := range content {
			if c < 0x20 {
				return false
			}
			if c >= utf8.RuneSelf {
				ascii = false
			}
		}
		return ascii || utf8.Valid(content)
	}
	ascii := true
	for d.i < len(d.doc) {
		c := d.doc[d.i]
		switch {
		case c == '"':
			d.i++
			*dst = span{start, d.i}
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

func (d *fastDoc) scan() bool {
	ok := d.object(topNames[:], func(j int) bool {
		switch l := topLeaf[j]; l {
		case objIssuer:
			return d.object(issuerNames[:], func(j int) bool { return d.scalar(&d.leaf[lComputed+j], j == 1) })
		case objScore:
			return d.object(scoreNames[:], func(j int) bool { return d.scalar(&d.leaf[lAP2+j], false) })
		case objDimensions:
			return d.object(dimsNames[:], func(j int) bool {
				base := lCR + j*nDim
				return d.object(dimNames[:], func(k int) bool { return d.scalar(&d.leaf[base+k], false) })
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
				if !d.object(gapNames[:], func(k int) bool { return d.scalar(&g[k], false) }) {
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
// a leading zero. Negative numbers take the slow path.
func (d *fastDoc) integer(s span) (int64, bool) {
	b := d.text(s)
	if len(b) == 0 || len(b) > 16 || b[0] == '0' && len(b) > 1 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
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
	if !ok || len(b) != 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[19] != 'Z' {
		return false
	}
	var v [6]int
	for k, at := range [6]int{0, 5, 8, 11, 14, 17} {
		w := 2
		if k == 0 {
			w = 4
		}
		for _, c := range b[at : at+w] {
			if c < '0' || c > '9' {
				return false
			}
			v[k] = v[k]*10 + int(c-'0')
		}
	}
	if v[1] < 1 || v[1] > 12 || v[2] < 1 || v[3] > 23 || v[4] > 59 || v[5] > 59 {
		return false
	}
	t := time.Date(v[0], time.Month(v[1]), v[2], v[3], v[4], v[5], 0, time.UTC)
	if t.Day() != v[2] { // February 30th and the like normalise to another day
		return false
	}
	*dst = t
	return true
}

// numberIs reports whether leaf s is exactly the text want.
func (d *fastDoc) numberIs(s span, want []byte) bool { return bytes.Equal(d.text(s), want) }

// passport interprets the scanned leaves into p, which must have room for the
// gaps (len(p.QualificationGaps) == maxGaps) and returns the signature. ok
// is false for anything the slow path would read differently or report as a
// parse error.
func (d *fastDoc) passport(p *Passport) (sig sigInfo, ok bool) {
	var te, cr *Dimension = &p.Dimensions.TechnicalExecution, &p.Dimensions.CommercialReliability
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
	c := p.Counts()
	res, err := score.Compute(c)
	if err != nil {
		return sig, false
	}
	want := [2]score.Dimension{res.Conduit(), res.AP2()}
	var ns numbers
	ns.set(numTERate, want[0].Rate())
	ns.set(numTEVolume, want[0].VolumeFactor())
	ns.set(numCRRate, want[1].Rate())
	ns.set(numCRVolume, want[1].VolumeFactor())
	var esc [8]byte
	escText, _ := res.Escrow.AppendText(esc[:0])
	if !d.numberIs(d.leaf[lTE+dRate], ns.get(numTERate)) || !d.numberIs(d.leaf[lTE+dVolume], ns.get(numTEVolume)) ||
		!d.numberIs(d.leaf[lCR+dRate], ns.get(numCRRate)) || !d.numberIs(d.leaf[lCR+dVolume], ns.get(numCRVolume)) ||
		!d.numberIs(d.leaf[lEscrow], escText) {
		return sig, false
	}
	te.SuccessRate, te.VolumeFactor = want[0].Rate(), want[0].VolumeFactor()
	cr.SuccessRate, cr.VolumeFactor = want[1].Rate(), want[1].VolumeFactor()
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

	// The free strings, copied into one allocation.
	sigText, ok1 := d.str(d.leaf[lSignature])
	pid, ok2 := d.str(d.leaf[lPassportID])
	agent, ok3 := d.str(d.leaf[lAgentID])
	platform, ok4 := d.str(d.leaf[lPlatform])
	if !ok1 || !ok2 || !ok3 || !ok4 || len(sigText) != 64 || len(pid) > 64 || len(agent) > maxAgentIDLen || len(platform) > maxPlatformLen {
		return sig, false // a malformed signature and the rest: let the slow path say
	}
	for _, c := range sigText {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return sig, false
		}
	}
	var buf [64 + 64 + maxAgentIDLen + maxPlatformLen]byte
	b := append(buf[:0], sigText...)
	b = append(b, pid...)
	b = append(b, agent...)
	if d.escaped {
		for i := 0; i < len(platform); i++ {
			if platform[i] == '\\' {
				i++
			}
			b = append(b, platform[i])
		}
	} else {
		b = append(b, platform...)
	}
	all := string(b)
	sig = sigInfo{found: true, wellFormed: true, value: all[:64]}
	p.Issuer.Signature = sig.value
	all = all[64:]
	p.AgentPassportID, all = all[:len(pid)], all[len(pid):]
	p.AgentID, p.Issuer.Platform = all[:len(agent)], all[len(agent):]
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
	v       Verification
	p       Passport
	gaps    [maxGaps]score.Gap
	expires time.Time
}

// fastVerify returns the verification, or nil if the document must take the
// slow path.
func fastVerify(doc []byte, keys []Key, at time.Time) *Verification {
	if slowOnly {
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
	if onFastPath != nil {
		onFastPath()
	}
	r.p.QualificationGaps = r.gaps[:d.nGaps:d.nGaps]
	v := &r.v
	*v = Verification{Errors: []Problem{}, Warnings: []Problem{}, Document: append([]byte(nil), doc...), KeyIndex: -1}
	buf := spliceBufs.Get().(*[]byte)
	msg := d.message((*buf)[:0])
	v.SignatureValid = v.checkSignature(&sig, msg, keys)
	*buf = msg
	spliceBufs.Put(buf)
	v.finish(&r.p, nil, true, at, &r.expires)
	return v
}
