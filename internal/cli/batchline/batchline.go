// Package batchline reads one line of `swarmscore score --batch` input: a
// JSON object of the four counts of §3.1.
//
// It is a package of its own so that its fuzz target's test binary links
// nothing else. 'go test -fuzz' instruments every package in the binary for
// coverage, and the binary of internal/cli holds both database drivers and
// the whole CLI: there the target took longer to build than to run, and
// each execution paid for the larger coverage map (issue 28,
// docs/BENCHMARKS.md).
package batchline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/score"
)

// Fields are the input fields, in the order of score.Counts.
var Fields = [4]string{"conduit_total", "conduit_success", "ap2_total", "ap2_success"}

// Error is why a line was refused. It matches errkind.ErrInvalid; its
// message names the field, without the kind's name.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Is makes errors.Is(err, errkind.ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == errkind.ErrInvalid }

func invalidf(format string, args ...any) error {
	return &Error{fmt.Sprintf(format, args...)}
}

// Parse parses one batch line into counts. It checks syntax and types only
// (score.Compute checks the values). blank reports a line of JSON
// whitespace only. The line must be valid JSON (RFC 8259): one object with
// the four Fields exactly once each (keys compared after unescaping,
// case-sensitively), each an integer in int64 range without fraction or
// exponent. An error is an *Error naming the field. The common case goes
// through scan, a hand-written scanner for exactly this flat object;
// anything it does not accept, valid or not, is decided by parseStrict,
// which uses encoding/json and produces the specific error.
func Parse(line []byte) (c score.Counts, blank bool, err error) {
	switch c, st := scan(line); st {
	case scanOK:
		return c, false, nil
	case scanBlank:
		return c, true, nil
	}
	return parseStrict(line)
}

var (
	quotedConduitTotal   = []byte(`"conduit_total"`)
	quotedConduitSuccess = []byte(`"conduit_success"`)
	quotedAP2Total       = []byte(`"ap2_total"`)
	quotedAP2Success     = []byte(`"ap2_success"`)
)

type scanStatus uint8

const (
	scanOK scanStatus = iota
	scanBlank
	scanFallback // not decided: let parseStrict decide and explain
)

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scan accepts the canonical shape: an object with each of the four
// fields exactly once, in any order, unescaped keys, and non-negative integers
// of at most 18 digits (so no overflow check is needed), with JSON whitespace
// anywhere JSON allows it. It never accepts anything encoding/json rejects
// (FuzzBatchLine checks this).
func scan(b []byte) (c score.Counts, st scanStatus) {
	i := skipSpace(b, 0)
	if i == len(b) {
		return c, scanBlank
	}
	if b[i] != '{' {
		return c, scanFallback
	}
	i++
	var vals [4]int64
	var seen uint8
	for {
		i = skipSpace(b, i)
		if i == len(b) || b[i] != '"' {
			return c, scanFallback
		}
		// Match the quoted key as a whole literal, closing quote included,
		// so a longer key or an escaped one falls through to the strict
		// parser.
		rest := b[i:]
		var f int
		switch {
		case bytes.HasPrefix(rest, quotedConduitTotal):
			f, i = 0, i+len(quotedConduitTotal)
		case bytes.HasPrefix(rest, quotedConduitSuccess):
			f, i = 1, i+len(quotedConduitSuccess)
		case bytes.HasPrefix(rest, quotedAP2Total):
			f, i = 2, i+len(quotedAP2Total)
		case bytes.HasPrefix(rest, quotedAP2Success):
			f, i = 3, i+len(quotedAP2Success)
		default:
			return c, scanFallback
		}
		if seen&(1<<f) != 0 {
			return c, scanFallback
		}
		seen |= 1 << f
		i = skipSpace(b, i)
		if i == len(b) || b[i] != ':' {
			return c, scanFallback
		}
		i++
		i = skipSpace(b, i)
		digits := i
		var v int64
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			v = v*10 + int64(b[i]-'0')
			i++
		}
		if n := i - digits; n == 0 || n > 18 || (n > 1 && b[digits] == '0') {
			return c, scanFallback
		}
		vals[f] = v
		i = skipSpace(b, i)
		if i == len(b) {
			return c, scanFallback
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] != '}' {
			return c, scanFallback
		}
		i++
		break
	}
	i = skipSpace(b, i)
	if i != len(b) || seen != 0xF {
		return c, scanFallback
	}
	return score.Counts{ConduitTotal: vals[0], ConduitSuccess: vals[1], AP2Total: vals[2], AP2Success: vals[3]}, scanOK
}

// parseStrict is the strict, general parser: valid JSON (RFC 8259) in
// UTF-8, one object, the four fields exactly once each (keys compared after unescaping,
// case-sensitively, unlike encoding/json's struct decoding), each an integer
// in int64 range written without fraction or exponent. Errors match
// errkind.ErrInvalid and name the field.
func parseStrict(line []byte) (c score.Counts, blank bool, err error) {
	if len(bytes.TrimLeft(line, " \t\r\n")) == 0 {
		return c, true, nil
	}
	// RFC 8259 §8.1: JSON text is UTF-8. encoding/json would read on,
	// replacing each bad byte with U+FFFD in a copy, to fail the line later
	// as an unknown field or a string.
	if !utf8.Valid(line) {
		return c, false, invalidf("invalid UTF-8 at byte %d", invalidUTF8At(line))
	}
	if !json.Valid(line) {
		var raw json.RawMessage
		err := json.Unmarshal(line, &raw)
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return c, false, invalidf("invalid JSON at byte %d: %s", syn.Offset, syn.Error())
		}
		return c, false, invalidf("invalid JSON: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return c, false, invalidf("invalid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return c, false, invalidf("want a JSON object with %s, got %s", strings.Join(Fields[:], ", "), jsonKind(tok))
	}
	var vals [4]int64
	var seen uint8
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return c, false, invalidf("invalid JSON: %v", err)
		}
		key, _ := tok.(string) // json.Valid guarantees object keys are strings
		f := -1
		for i, name := range Fields {
			if key == name {
				f = i
			}
		}
		if f < 0 {
			return c, false, invalidf("unknown field %q (want %s)", key, strings.Join(Fields[:], ", "))
		}
		if seen&(1<<f) != 0 {
			return c, false, invalidf("duplicate field %q", key)
		}
		seen |= 1 << f
		tok, err = dec.Token()
		if err != nil {
			return c, false, invalidf("invalid JSON: %v", err)
		}
		num, ok := tok.(json.Number)
		if !ok {
			return c, false, invalidf("%s: want an integer, got %s", key, jsonKind(tok))
		}
		v, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
				return c, false, invalidf("%s: %s is out of range", key, num)
			}
			return c, false, invalidf("%s: want an integer, got %s", key, num)
		}
		vals[f] = v
	}
	for i, name := range Fields {
		if seen&(1<<i) == 0 {
			return c, false, invalidf("missing field %q", name)
		}
	}
	return score.Counts{ConduitTotal: vals[0], ConduitSuccess: vals[1], AP2Total: vals[2], AP2Success: vals[3]}, false, nil
}

// invalidUTF8At is the 1-based position of the first byte of b that does
// not start a valid UTF-8 sequence, or 0 when b is valid.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i + 1
		}
		i += n
	}
	return 0
}

// jsonKind names the type of a JSON token for error messages.
func jsonKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case json.Number:
		return "the number " + v.String()
	}
	return fmt.Sprintf("%T", tok)
}
