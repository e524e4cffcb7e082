package audit

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// scanner reads a bundle strictly and in one pass. encoding/json would take
// the last of two members with one name and replace invalid UTF-8 without a
// word, so a bundle could read one way here and another way in the tool a
// person inspects it with; its tokenizer is also an order of magnitude
// slower than this, which decides how long verifying a large bundle takes.
type scanner struct {
	data  []byte
	pos   int
	depth int
	// intern holds the strings read so far, up to maxInterned of them:
	// member names, agents, operators, statuses and types repeat in every
	// record, and reading them as one string each saves most of the
	// allocations of a large bundle.
	intern map[string]string
}

// maxInterned bounds intern, so that a document of distinct strings costs
// no more than one without interning.
const maxInterned = 4096

// maxDepth bounds nesting: a bundle nests five deep; the passport and the
// checkpoint it embeds a few more.
const maxDepth = 64

// ParseError is why a bundle could not be read: the byte offset and the
// reason. It matches errkind.ErrInvalid.
type ParseError struct {
	Offset int
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("malformed bundle at byte %d: %s", e.Offset, e.Reason)
}

// Is makes errors.Is(err, errkind.ErrInvalid) true.
func (e *ParseError) Is(target error) bool { return target == errkind.ErrInvalid }

func (s *scanner) fail(format string, args ...any) error {
	return &ParseError{Offset: s.pos, Reason: fmt.Sprintf(format, args...)}
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *scanner) expect(c byte, what string) error {
	if s.peek() != c {
		return s.fail("%s: want %q, found %s", what, c, s.found())
	}
	s.pos++
	return nil
}

// found describes the next token for a message.
func (s *scanner) found() string {
	switch c := s.peek(); {
	case c == 0:
		return "the end of the document"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == '-' || '0' <= c && c <= '9':
		return "a number"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	default:
		return strconv.QuoteRune(rune(c))
	}
}

// object reads an object, handing each member's name to member, which must
// read its value. Names must be unique; member decides which are known.
func (s *scanner) object(what string, member func(name string) error) error {
	if err := s.expect('{', what); err != nil {
		return err
	}
	if s.depth++; s.depth > maxDepth {
		return s.fail("%s: nested more than %d deep", what, maxDepth)
	}
	var seenBuf [16]string
	seen := seenBuf[:0]
	if s.peek() == '}' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.fail("%s: want a member name, found %s", what, s.found())
		}
		name, err := s.str(what)
		if err != nil {
			return err
		}
		for _, n := range seen {
			if n == name {
				return s.fail("%s: duplicate member %s", what, strconv.Quote(name))
			}
		}
		seen = append(seen, name)
		if err := s.expect(':', what); err != nil {
			return err
		}
		if err := member(name); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			s.depth--
			return nil
		default:
			return s.fail("%s: want ',' or '}', found %s", what, s.found())
		}
	}
}

// array reads an array, handing each element's index to elem.
func (s *scanner) array(what string, elem func(i int) error) error {
	if err := s.expect('[', what); err != nil {
		return err
	}
	if s.depth++; s.depth > maxDepth {
		return s.fail("%s: nested more than %d deep", what, maxDepth)
	}
	if s.peek() == ']' {
		s.pos++
		s.depth--
		return nil
	}
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			s.depth--
			return nil
		default:
			return s.fail("%s: want ',' or ']', found %s", what, s.found())
		}
	}
}

// str reads a string. Invalid UTF-8, raw control characters and lone
// surrogate escapes are refused: RFC 8785 cannot canonicalise them, so no
// honest bundle holds one.
func (s *scanner) str(what string) (string, error) {
	b, escaped, err := s.strBytes(what)
	if err != nil || escaped {
		return string(b), err
	}
	if v, ok := s.intern[string(b)]; ok { // no allocation for the lookup
		return v, nil
	}
	v := string(b)
	if len(s.intern) < maxInterned {
		if s.intern == nil {
			s.intern = make(map[string]string)
		}
		s.intern[v] = v
	}
	return v, nil
}

// strBytes reads a string and returns its bytes: a slice of the document
// when it has no escapes, a new slice otherwise (escaped true).
func (s *scanner) strBytes(what string) ([]byte, bool, error) {
	if s.peek() != '"' {
		return nil, false, s.fail("%s: want a string, found %s", what, s.found())
	}
	s.pos++
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			v := s.data[start:s.pos]
			s.pos++
			return v, false, nil
		case c == '\\':
			b, err := s.strSlow(what, start)
			return b, true, err
		case c < 0x20:
			return nil, false, s.fail("%s: control character %#02x in a string", what, c)
		case c < utf8.RuneSelf:
			s.pos++
		default:
			r, n := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && n <= 1 {
				return nil, false, s.fail("%s: invalid UTF-8 in a string", what)
			}
			s.pos += n
		}
	}
	return nil, false, s.fail("%s: unterminated string", what)
}

// strSlow finishes a string that has escapes, from its first byte at start.
func (s *scanner) strSlow(what string, start int) ([]byte, error) {
	b := append([]byte(nil), s.data[start:s.pos]...)
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return b, nil
		case c == '\\':
			if s.pos+1 >= len(s.data) {
				return nil, s.fail("%s: unterminated escape", what)
			}
			e := s.data[s.pos+1]
			s.pos += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, err := s.hex4(what)
				if err != nil {
					return nil, err
				}
				if utf16.IsSurrogate(r) {
					if r >= 0xdc00 || s.pos+1 >= len(s.data) || s.data[s.pos] != '\\' || s.data[s.pos+1] != 'u' {
						return nil, s.fail("%s: lone surrogate \\u%04x", what, r)
					}
					s.pos += 2
					r2, err := s.hex4(what)
					if err != nil {
						return nil, err
					}
					if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
						return nil, s.fail("%s: lone surrogate before \\u%04x", what, r2)
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				return nil, s.fail("%s: invalid escape \\%c", what, e)
			}
		case c < 0x20:
			return nil, s.fail("%s: control character %#02x in a string", what, c)
		case c < utf8.RuneSelf:
			b = append(b, c)
			s.pos++
		default:
			r, n := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && n <= 1 {
				return nil, s.fail("%s: invalid UTF-8 in a string", what)
			}
			b = append(b, s.data[s.pos:s.pos+n]...)
			s.pos += n
		}
	}
	return nil, s.fail("%s: unterminated string", what)
}

func (s *scanner) hex4(what string) (rune, error) {
	if s.pos+4 > len(s.data) {
		return 0, s.fail("%s: short \\u escape", what)
	}
	var r rune
	for _, c := range s.data[s.pos : s.pos+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, s.fail("%s: invalid \\u escape", what)
		}
	}
	s.pos += 4
	return r, nil
}

// maxInteger is the largest integer a bundle holds: JSON numbers are
// doubles to most readers, exact up to 2^53 − 1.
const maxInteger = 1<<53 - 1

// integer reads a non-negative integer written as plain digits (no sign,
// fraction or exponent, no leading zero), at most 2^53 − 1: one spelling
// per number, as the canonical content it is hashed from has.
func (s *scanner) integer(what string) (int64, error) {
	s.ws()
	start := s.pos
	for s.pos < len(s.data) && '0' <= s.data[s.pos] && s.data[s.pos] <= '9' {
		s.pos++
	}
	digits := s.data[start:s.pos]
	if len(digits) == 0 {
		s.pos = start
		return 0, s.fail("%s: want an integer, found %s", what, s.found())
	}
	if s.pos < len(s.data) {
		if c := s.data[s.pos]; c == '.' || c == 'e' || c == 'E' {
			return 0, s.fail("%s: want an integer written as digits", what)
		}
	}
	if len(digits) > 1 && digits[0] == '0' {
		return 0, s.fail("%s: integer with a leading zero", what)
	}
	v, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil || v > maxInteger {
		return 0, s.fail("%s: integer above 2^53-1", what)
	}
	return v, nil
}

// null consumes a null if one is next.
func (s *scanner) null() bool {
	if s.peek() == 'n' && s.literal("null") {
		return true
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if len(s.data)-s.pos >= len(lit) && string(s.data[s.pos:s.pos+len(lit)]) == lit {
		s.pos += len(lit)
		return true
	}
	return false
}

// raw skips one JSON value of any kind and returns its bytes, for the
// documents a bundle embeds (the passport, the checkpoint, a proof), which
// their own packages then parse as strictly as they do on their own.
func (s *scanner) raw(what string) ([]byte, error) {
	s.ws()
	start := s.pos
	if err := s.skip(what); err != nil {
		return nil, err
	}
	return s.data[start:s.pos], nil
}

func (s *scanner) skip(what string) error {
	switch c := s.peek(); {
	case c == '{':
		return s.object(what, func(string) error { return s.skip(what) })
	case c == '[':
		return s.array(what, func(int) error { return s.skip(what) })
	case c == '"':
		_, err := s.str(what)
		return err
	case c == 't':
		if s.literal("true") {
			return nil
		}
	case c == 'f':
		if s.literal("false") {
			return nil
		}
	case c == 'n':
		if s.literal("null") {
			return nil
		}
	case c == '-' || '0' <= c && c <= '9':
		return s.number(what)
	}
	return s.fail("%s: want a JSON value, found %s", what, s.found())
}

// number skips a number of RFC 8259's grammar.
func (s *scanner) number(what string) error {
	digits := func() int {
		n := 0
		for s.pos < len(s.data) && '0' <= s.data[s.pos] && s.data[s.pos] <= '9' {
			s.pos++
			n++
		}
		return n
	}
	if s.data[s.pos] == '-' {
		s.pos++
	}
	start := s.pos
	if n := digits(); n == 0 || n > 1 && s.data[start] == '0' {
		return s.fail("%s: malformed number", what)
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if digits() == 0 {
			return s.fail("%s: malformed number", what)
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if digits() == 0 {
			return s.fail("%s: malformed number", what)
		}
	}
	return nil
}

// end checks that nothing but whitespace follows the document.
func (s *scanner) end() error {
	if s.peek() != 0 {
		return s.fail("trailing data after the bundle")
	}
	return nil
}
