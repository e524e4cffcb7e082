package passport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/swarmscore/swarmscore/score"
)

// Parse reads a signed passport document strictly: one JSON object, within
// MaxDocumentSize, valid I-JSON, no duplicate member names at any depth, every
// required member present with its JSON type (counts and contributions
// integral), times in RFC 3339 UTC, and issuer.signature lowercase hex of 64
// or 128 characters. Numbers mean what their RFC 8785 form says, as that is
// what is signed: 80.0 is the count 80. Unknown members are allowed, and so
// are what §6.1 leaves open: no agent_id, issuer.kid or issuer.alg, and
// elements of qualification_gaps that are not gaps (left out of
// QualificationGaps). It does not check the signature, the score's
// consistency or expiry: use Verify for that.
//
// The error is a Problem (matching ErrInvalid) carrying the first problem's
// code.
func Parse(doc []byte) (*Passport, error) {
	if len(doc) > MaxDocumentSize {
		return nil, Problem{CodeTooLarge, fmt.Sprintf("document is %d bytes, the limit is %d", len(doc), MaxDocumentSize)}
	}
	var ps parser
	ps.parse(doc)
	if ps.fatal != nil {
		return nil, *ps.fatal
	}
	var buf []byte
	if _, err := canonicalize(doc, &ps.sig, &buf); err != nil {
		return nil, *err
	}
	if len(ps.rep.errs) > 0 {
		return nil, ps.rep.errs[0]
	}
	switch {
	case !ps.sig.found:
		return nil, Problem{CodeSignatureMissing, "issuer.signature is missing"}
	case !ps.sig.wellFormed:
		return nil, Problem{CodeSignatureMalformed, "issuer.signature must be lowercase hex: 64 characters for HS256 (HMAC-SHA256), 128 for EdDSA (Ed25519)"}
	}
	return ps.p, nil
}

// maxDepth bounds nesting. A passport nests three levels; unknown members may
// nest further, but not without bound: the parser recurses.
const maxDepth = 64

// sigInfo locates issuer.signature in the document and says which of
// issuer.kid and issuer.alg the document has.
type sigInfo struct {
	found      bool
	wellFormed bool     // a string of 64 or 128 lowercase hex characters
	raw        [64]byte // value decoded, when wellFormed
	n          int      // its length: 32 (HS256) or 64 (EdDSA)
	first      bool     // it is issuer's first member
	start, end int64    // the byte span to cut so that the rest is the signed document

	hasKID, hasAlg bool // issuer.kid, issuer.alg are present (as strings)
}

// parser walks a document token by token with encoding/json (which checks the
// syntax) and fills a Passport. It does what json.Unmarshal does not: it
// rejects duplicate member names, matches names exactly (json.Unmarshal
// ignores case, which would let "Signature" stand in for "signature"), keeps
// number text (for exact escrow modifiers), reports every missing or mistyped
// member, and records the byte span of issuer.signature.
type parser struct {
	doc   []byte
	dec   *json.Decoder
	p     *Passport
	rep   report
	sig   sigInfo
	depth int
	fatal *Problem

	haveComputed, haveExpiry bool // p.Issuer.ComputedAt, p.ExpiresAt were read
}

// errFatal aborts the walk; the problem is in parser.fatal.
var errFatal = errors.New("fatal")

func (ps *parser) stop(code, format string, args ...any) error {
	if ps.fatal == nil {
		ps.fatal = &Problem{code, fmt.Sprintf(format, args...)}
	}
	return errFatal
}

func (ps *parser) parse(doc []byte) {
	ps.doc = doc
	ps.dec = json.NewDecoder(bytes.NewReader(doc))
	ps.dec.UseNumber()
	ps.p = &Passport{}
	if err := ps.top(); err != nil {
		if ps.fatal == nil {
			ps.fatal = &Problem{CodeInvalidJSON, err.Error()}
		}
		return
	}
	if _, err := ps.dec.Token(); err != io.EOF {
		_ = ps.stop(CodeTrailingData, "data after the passport object at byte %d", ps.dec.InputOffset())
	}
}

// token reads the next token, turning a syntax error into a fatal problem.
func (ps *parser) token() (json.Token, error) {
	tok, err := ps.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, ps.stop(CodeInvalidJSON, "invalid JSON at byte %d: %s", se.Offset, se.Error())
		case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
			return nil, ps.stop(CodeInvalidJSON, "invalid JSON: unexpected end of input")
		}
		return nil, ps.stop(CodeInvalidJSON, "invalid JSON: %s", err.Error())
	}
	return tok, nil
}

func (ps *parser) wrongType(path, want string, tok json.Token) error {
	ps.rep.fail(CodeWrongType, "%s must be %s, got %s", path, want, kindOf(tok))
	return ps.skip(tok, path)
}

func kindOf(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "the number " + clip(string(t))
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// skip consumes the rest of the value that starts with tok, checking it for
// duplicate names and depth like any other part of the document.
func (ps *parser) skip(tok json.Token, path string) error {
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if ps.depth++; ps.depth > maxDepth {
		return ps.stop(CodeTooDeep, "%s nests deeper than %d levels", quotePath(path), maxDepth)
	}
	defer func() { ps.depth-- }()
	var seen names
	for i := 0; ps.dec.More(); i++ {
		elem := path
		if d == '{' {
			k, err := ps.key(path, &seen)
			if err != nil {
				return err
			}
			elem = path + "." + clip(k)
		} else {
			elem = path + "[" + strconv.Itoa(i) + "]"
		}
		v, err := ps.token()
		if err != nil {
			return err
		}
		if err := ps.skip(v, elem); err != nil {
			return err
		}
	}
	_, err := ps.token() // the closing delimiter
	return err
}

// names detects duplicate member names in one object.
type names struct {
	list []string
	set  map[string]struct{}
}

// add reports whether name is new.
func (n *names) add(name string) bool {
	if n.set != nil {
		if _, dup := n.set[name]; dup {
			return false
		}
		n.set[name] = struct{}{}
		return true
	}
	for _, s := range n.list {
		if s == name {
			return false
		}
	}
	n.list = append(n.list, name)
	if len(n.list) > 16 { // large objects only come from unknown members
		n.set = make(map[string]struct{}, 2*len(n.list))
		for _, s := range n.list {
			n.set[s] = struct{}{}
		}
	}
	return true
}

// key reads a member name and rejects a duplicate. Names are compared after
// unescaping, so "sign\u0061ture" duplicates "signature".
func (ps *parser) key(path string, seen *names) (string, error) {
	tok, err := ps.token()
	if err != nil {
		return "", err
	}
	k, ok := tok.(string)
	if !ok { // encoding/json only returns strings in key position
		return "", ps.stop(CodeInvalidJSON, "%s: expected a member name", path)
	}
	if !seen.add(k) {
		return "", ps.stop(CodeDuplicateKey, "%s has the member %q twice", quotePath(path), clip(k))
	}
	return k, nil
}

// quotePath renders a member path for a message. Paths below unknown members
// contain names from the document, so they are quoted (and clipped) to keep
// messages one printable line.
func quotePath(path string) string {
	if path == "" {
		return "the document"
	}
	return strconv.Quote(clip(path))
}

// member is one known member of an object: its name and how to read its
// value (which must consume exactly one value).
type member struct {
	name string
	read func(path string, tok json.Token) error
}

// object reads the value starting with tok as an object with the given known
// members, reporting unknown members as warnings and absent ones as errors.
func (ps *parser) object(path string, tok json.Token, members []member) error {
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		if path == "" {
			return ps.stop(CodeWrongType, "the document must be a JSON object, got %s", kindOf(tok))
		}
		return ps.wrongType(path, "an object", tok)
	}
	if ps.depth++; ps.depth > maxDepth {
		return ps.stop(CodeTooDeep, "%s nests deeper than %d levels", quotePath(path), maxDepth)
	}
	defer func() { ps.depth-- }()
	var seen names
	var found uint32
	for i := 0; ps.dec.More(); i++ {
		start := ps.dec.InputOffset()
		k, err := ps.key(path, &seen)
		if err != nil {
			return err
		}
		child := k
		if path != "" {
			child = path + "." + k
		}
		v, err := ps.token()
		if err != nil {
			return err
		}
		j := 0
		for j < len(members) && members[j].name != k {
			j++
		}
		if j == len(members) {
			ps.rep.warns = append(ps.rep.warns, Problem{CodeUnknownField, fmt.Sprintf("%q is not a member this version knows; it is covered by the signature but not checked", clip(child))})
			if err := ps.skip(v, child); err != nil {
				return err
			}
			continue
		}
		found |= 1 << j
		if path == "issuer" && k == "signature" {
			ps.sig.found, ps.sig.start = true, start
			ps.sig.first = i == 0
		}
		if err := members[j].read(child, v); err != nil {
			return err
		}
		if path == "issuer" && k == "signature" {
			ps.sig.end = ps.dec.InputOffset()
		}
	}
	if _, err := ps.token(); err != nil {
		return err
	}
	for j, m := range members {
		if found&(1<<j) != 0 {
			continue
		}
		switch {
		case path == "issuer" && m.name == "signature":
			// A missing signature is CodeSignatureMissing, not a malformed
			// passport.
		case path == "issuer" && (m.name == "kid" || m.name == "alg"):
			// Optional: passports before keyrings, and other issuers', have
			// neither.
		case path == "" && m.name == "agent_id":
			ps.p.agentIDAbsent = true // §6.1 has none: a warning
		default:
			name := m.name
			if path != "" {
				name = path + "." + m.name
			}
			ps.rep.fail(CodeMissingField, "%s is missing", name)
		}
	}
	return nil
}

func (ps *parser) top() error {
	tok, err := ps.token()
	if err != nil {
		return err
	}
	p := ps.p
	err = ps.object("", tok, []member{
		{"swarmscore_version", ps.str(&p.SwarmScoreVersion)},
		{"agent_passport_id", ps.str(&p.AgentPassportID)},
		{"agent_id", ps.str(&p.AgentID)},
		{"issuer", func(path string, tok json.Token) error {
			return ps.object(path, tok, []member{
				{"platform", ps.str(&p.Issuer.Platform)},
				{"computed_at", ps.time(&p.Issuer.ComputedAt, &ps.haveComputed)},
				{"alg", ps.present(&p.Issuer.Alg, &ps.sig.hasAlg)},
				{"kid", ps.present(&p.Issuer.KID, &ps.sig.hasKID)},
				{"signature", ps.signature},
			})
		}},
		{"score", func(path string, tok json.Token) error {
			return ps.object(path, tok, []member{
				{"value", ps.integer(func(n int64) { p.Score.Value = int(n) })},
				{"tier", ps.tier(&p.Score.Tier)},
				{"conduit_contribution", ps.integer(func(n int64) { p.Score.ConduitContribution = int(n) })},
				{"ap2_contribution", ps.integer(func(n int64) { p.Score.AP2Contribution = int(n) })},
			})
		}},
		{"dimensions", func(path string, tok json.Token) error {
			return ps.object(path, tok, []member{
				{"technical_execution", ps.dimension(&p.Dimensions.TechnicalExecution)},
				{"commercial_reliability", ps.dimension(&p.Dimensions.CommercialReliability)},
			})
		}},
		{"escrow_modifier", ps.number(func(path, n string) {
			m, err := score.ParseModifier(n)
			if err != nil {
				ps.rep.fail(CodeInvalidValue, "%s is %s, not a multiple of 0.0001 between 0 and 1", path, clip(n))
				return
			}
			p.EscrowModifier = m
		})},
		{"qualification_gaps", ps.gaps},
		{"formula_version", ps.str(&p.FormulaVersion)},
		{"expires_at", ps.time(&p.ExpiresAt, &ps.haveExpiry)},
	})
	if err != nil {
		return err
	}
	if ps.sig.found && ps.sig.first {
		// The signature was issuer's first member: cut the comma after it
		// too (a later member's span already starts at the comma before it).
		i := ps.sig.end
		for i < int64(len(ps.doc)) && isSpace(ps.doc[i]) {
			i++
		}
		if i < int64(len(ps.doc)) && ps.doc[i] == ',' {
			ps.sig.end = i + 1
		}
	}
	return nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (ps *parser) str(dst *string) func(string, json.Token) error {
	return func(path string, tok json.Token) error {
		s, ok := tok.(string)
		if !ok {
			return ps.wrongType(path, "a string", tok)
		}
		*dst = s
		return nil
	}
}

// present reads a string and records that it was there.
func (ps *parser) present(dst *string, there *bool) func(string, json.Token) error {
	read := ps.str(dst)
	return func(path string, tok json.Token) error {
		_, *there = tok.(string)
		return read(path, tok)
	}
}

// time reads an RFC 3339 UTC time with whole seconds and a Z suffix, the only
// form issued, so that each instant has one spelling.
func (ps *parser) time(dst *time.Time, ok *bool) func(string, json.Token) error {
	return func(path string, tok json.Token) error {
		s, isStr := tok.(string)
		if !isStr {
			return ps.wrongType(path, "an RFC 3339 time string", tok)
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil || t.UTC().Format(time.RFC3339) != s {
			ps.rep.fail(CodeInvalidValue, "%s is %q; want RFC 3339 UTC with whole seconds, like 2026-03-17T14:30:00Z", path, clip(s))
			return nil
		}
		*dst = t.UTC()
		if ok != nil {
			*ok = true
		}
		return nil
	}
}

func (ps *parser) signature(path string, tok json.Token) error {
	s, ok := tok.(string)
	if !ok {
		return ps.skip(tok, path) // reported as CodeSignatureMalformed by the caller
	}
	ps.p.Issuer.Signature = s
	ps.sig.n, ps.sig.wellFormed = decodeSignature(s, &ps.sig.raw)
	return nil
}

// decodeSignature decodes a signature of 64 (HS256) or 128 (EdDSA)
// lowercase hex digits into raw and returns its length in bytes; ok is false
// for anything else.
func decodeSignature[S string | []byte](s S, raw *[64]byte) (n int, ok bool) {
	if len(s) != 64 && len(s) != 128 {
		return 0, false
	}
	n = len(s) / 2
	for i := range n {
		hi, lo := lowerHexValue[s[2*i]], lowerHexValue[s[2*i+1]]
		if hi|lo > 0xf {
			return 0, false
		}
		raw[i] = hi<<4 | lo
	}
	return n, true
}

const hexDigits = "0123456789abcdef"

// lowerHexValue is the value of each lowercase hex digit, and 0xff for any
// other byte.
var lowerHexValue = func() (t [256]byte) {
	for c := range t {
		t[c] = 0xff
	}
	for i, c := range hexDigits {
		t[c] = byte(i)
	}
	return t
}()

// number reads a number and passes on its RFC 8785 text: the document means
// what its canonical form, the signed message, says. So 80, 80.0 and 8e1 are
// the same count, and 0.392 and 3.920e-1 the same escrow modifier.
func (ps *parser) number(set func(path, canonical string)) func(string, json.Token) error {
	return func(path string, tok json.Token) error {
		n, ok := tok.(json.Number)
		if !ok {
			return ps.wrongType(path, "a number", tok)
		}
		c, ok := canonicalNumber(n)
		if !ok { // beyond a double: the canonicalizer rejects the document too
			ps.rep.fail(CodeInvalidValue, "%s is %s, beyond the range of a double", path, clip(string(n)))
			return nil
		}
		set(path, c)
		return nil
	}
}

func canonicalNumber(n json.Number) (string, bool) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return "", false
	}
	s, err := jcs.NumberToJSON(f)
	return s, err == nil
}

// integer reads an integral number in [-MaxCount, MaxCount]: within that range
// every reader of the JSON agrees on the value.
func (ps *parser) integer(set func(int64)) func(string, json.Token) error {
	return ps.number(func(path, n string) {
		var v int64
		if !wireInt(json.Number(n), &v) {
			if strings.ContainsAny(n, ".e") {
				ps.rep.fail(CodeWrongType, "%s must be an integer, got %s", path, clip(n))
			} else {
				ps.rep.fail(CodeInvalidValue, "%s is %s, beyond ±%d", path, clip(n), int64(MaxCount))
			}
			return
		}
		set(v)
	})
}

func (ps *parser) float(dst *float64) func(string, json.Token) error {
	return ps.number(func(_, n string) { wireFloat(json.Number(n), dst) })
}

func (ps *parser) tier(dst *score.Tier) func(string, json.Token) error {
	return func(path string, tok json.Token) error {
		s, ok := tok.(string)
		if !ok {
			return ps.wrongType(path, "a tier name", tok)
		}
		t, err := score.ParseTier(s)
		if err != nil {
			ps.rep.fail(CodeInvalidValue, "%s is %q; want NONE, STANDARD or ELITE", path, clip(s))
			return nil
		}
		*dst = t
		return nil
	}
}

func (ps *parser) dimension(d *Dimension) func(string, json.Token) error {
	return func(path string, tok json.Token) error {
		return ps.object(path, tok, []member{
			{"label", ps.str(&d.Label)},
			{"sessions_90d", ps.integer(func(n int64) { d.Sessions90d = n })},
			{"successful_sessions_90d", ps.integer(func(n int64) { d.SuccessfulSessions90d = n })},
			{"success_rate", ps.float(&d.SuccessRate)},
			{"volume_factor", ps.float(&d.VolumeFactor)},
			{"max_contribution", ps.integer(func(n int64) { d.MaxContribution = int(n) })},
			{"actual_contribution", ps.integer(func(n int64) { d.ActualContribution = int(n) })},
		})
	}
}

func (ps *parser) gaps(path string, tok json.Token) error {
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return ps.wrongType(path, "an array", tok)
	}
	// §6.1 shows only an empty array and defines no element: an element
	// that is not a gap this version reads is left out and warned about
	// (checkPassport), never an error. The document must still be strict
	// JSON throughout.
	gaps := []score.Gap{}
	for i := 0; ps.dec.More(); i++ {
		v, err := ps.token()
		if err != nil {
			return err
		}
		elem := path + "[" + strconv.Itoa(i) + "]"
		if d, ok := v.(json.Delim); !ok || d != '{' {
			ps.p.gapsUnread = true
			if err := ps.skip(v, elem); err != nil {
				return err
			}
			continue
		}
		var g score.Gap
		errs := len(ps.rep.errs)
		err = ps.object(elem, v, []member{
			{"tier", ps.tier(&g.Tier)},
			{"requirement", ps.str(&g.Requirement)},
			{"required", ps.integer(func(n int64) { g.Required = n })},
			{"actual", ps.integer(func(n int64) { g.Actual = n })},
		})
		if err != nil {
			return err
		}
		if len(ps.rep.errs) > errs {
			ps.rep.errs = ps.rep.errs[:errs]
			ps.p.gapsUnread = true
			continue
		}
		gaps = append(gaps, g)
	}
	if _, err := ps.token(); err != nil {
		return err
	}
	ps.p.QualificationGaps = gaps
	return nil
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
