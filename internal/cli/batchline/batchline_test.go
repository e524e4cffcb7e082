package batchline

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/score"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		line  string
		want  score.Counts
		blank bool
		err   string
	}{
		{line: `{"conduit_total":80,"conduit_success":76,"ap2_total":40,"ap2_success":38}` + "\n", want: score.Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38}},
		{line: `{"ap2_success":1,"ap2_total":2,"conduit_success":3,"conduit_t\u006ftal":4}`, want: score.Counts{ConduitTotal: 4, ConduitSuccess: 3, AP2Total: 2, AP2Success: 1}},
		{line: " \t\r\n", blank: true},
		{line: `{"conduit_total":1,"conduit_success":1,"ap2_total":1}`, err: `missing field "ap2_success"`},
		{line: `{"conduit_total":1,"conduit_total":1,"conduit_success":1,"ap2_total":1,"ap2_success":1}`, err: `duplicate field "conduit_total"`},
		{line: `{"Conduit_total":1,"conduit_success":1,"ap2_total":1,"ap2_success":1}`, err: `unknown field "Conduit_total"`},
		{line: `{"conduit_total":1e0,"conduit_success":1,"ap2_total":1,"ap2_success":1}`, err: `conduit_total: want an integer, got 1e0`},
		{line: `{"conduit_total":9223372036854775808,"conduit_success":1,"ap2_total":1,"ap2_success":1}`, err: `conduit_total: 9223372036854775808 is out of range`},
		{line: `[1]`, err: `want a JSON object with conduit_total, conduit_success, ap2_total, ap2_success, got an array`},
		{line: `{"conduit_total":1,}`, err: `invalid JSON at byte 20`},
		{line: "{\"conduit_total\":1,\"a\xff\":2}", err: `invalid UTF-8 at byte 22`},
		{line: "\"\xe2\x82", err: `invalid UTF-8 at byte 2`},
	} {
		got, blank, err := Parse([]byte(c.line))
		if c.err != "" {
			var e *Error
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.As(err, &e) || !errors.Is(err, errkind.ErrInvalid) {
				t.Errorf("%q: %v, want an *Error containing %q", c.line, err, c.err)
			}
			continue
		}
		if err != nil || blank != c.blank || got != c.want {
			t.Errorf("%q: %+v blank %v %v", c.line, got, blank, err)
		}
	}
}

// refParse is the reference verdict for one batch line, from encoding/json
// alone: decode into pointers (so missing fields show) and into a map (so
// unknown keys show). encoding/json matches struct keys case-insensitively
// and lets the last duplicate win, so the map decides the key set.
func refParse(line []byte) (c score.Counts, ok bool) {
	// encoding/json reads invalid UTF-8, which RFC 8259 §8.1 excludes, as
	// U+FFFD.
	if !utf8.Valid(line) || !json.Valid(line) {
		return c, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil || len(m) != 4 {
		return c, false
	}
	var v struct {
		CT *int64 `json:"conduit_total"`
		CS *int64 `json:"conduit_success"`
		AT *int64 `json:"ap2_total"`
		AS *int64 `json:"ap2_success"`
	}
	if json.Unmarshal(line, &v) != nil || v.CT == nil || v.CS == nil || v.AT == nil || v.AS == nil {
		return c, false
	}
	for _, k := range Fields {
		raw, found := m[k]
		if !found || !jsonInteger.Match(raw) {
			return c, false
		}
	}
	return score.Counts{ConduitTotal: *v.CT, ConduitSuccess: *v.CS, AP2Total: *v.AT, AP2Success: *v.AS}, true
}

var jsonInteger = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// maxFuzzLine bounds the lines FuzzBatchLine explores. The engine
// minimizes every input that finds new coverage, in up to n² runs for n
// bytes, and a long line whose coverage depends on its length (a run of
// "[" nests the JSON scanner's stack, bytes that are not UTF-8 each cost a
// U+FFFD) kept every worker busy for the rest of the run (issue 28,
// docs/BENCHMARKS.md). A line of the four counts at 18 digits each, the
// longest the fast scanner takes without white space, is 137 bytes;
// nothing in the parsers depends on a line's length beyond that.
const maxFuzzLine = 256

// FuzzBatchLine checks the two batch parsers against each other and against
// encoding/json: the fast scanner never accepts what the strict parser
// rejects, the strict parser accepts exactly the lines encoding/json decodes
// into the four integer fields (less duplicate keys), and nothing panics.
func FuzzBatchLine(f *testing.F) {
	for _, s := range []string{
		`{"conduit_total":80,"conduit_success":76,"ap2_total":40,"ap2_success":38}`,
		` { "ap2_success" : 0 , "ap2_total" : 0 , "conduit_success" : 0 , "conduit_total" : 0 } ` + "\r\n",
		`{"conduit\u005ftotal":1,"conduit_success":1,"ap2_total":1,"ap2_success":1}`,
		`{"conduit_total":1,"conduit_success":1,"ap2_total":1,"ap2_success":1,"conduit_total":1}`,
		`{"conduit_total":01,"conduit_success":1,"ap2_total":1,"ap2_success":1}`,
		`{"conduit_total":-0,"conduit_success":1e0,"ap2_total":1.0,"ap2_success":1}`,
		`{"conduit_total":999999999999999999,"conduit_success":9223372036854775807,"ap2_total":9223372036854775808,"ap2_success":1}`,
		`{"CONDUIT_TOTAL":1,"conduit_success":1,"ap2_total":1,"ap2_success":1}`,
		`{"conduit_total":1,"conduit_success":1,"ap2_total":1}`,
		`{}`, `[]`, `null`, "", " \t", `{"conduit_total":1,}`, "{\"a\xff\":1}",
		// Issue 28: minimizing longer lines like this one, a quote and
		// bytes that are not UTF-8, stalled the fuzzer.
		"\"" + strings.Repeat("\x9e", 200),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(line) > maxFuzzLine {
			return
		}
		fast, st := scan(line)
		slow, blank, err := parseStrict(line)
		switch st {
		case scanOK:
			if err != nil || blank || slow != fast {
				t.Fatalf("scanner accepted %q as %+v; strict parser: %+v, blank %v, %v", line, fast, slow, blank, err)
			}
		case scanBlank:
			if !blank || err != nil {
				t.Fatalf("scanner says %q is blank; strict parser: blank %v, %v", line, blank, err)
			}
		}
		if blank {
			if len(bytes.Trim(line, " \t\r\n")) != 0 {
				t.Fatalf("%q reported blank", line)
			}
			return
		}
		ref, refOK := refParse(line)
		switch {
		case err == nil && !refOK:
			t.Fatalf("strict parser accepted %q as %+v; encoding/json does not", line, slow)
		case err == nil && ref != slow:
			t.Fatalf("%q: strict parser %+v, encoding/json %+v", line, slow, ref)
		case err != nil && refOK && !strings.Contains(err.Error(), "duplicate field"):
			t.Fatalf("strict parser rejected %q (%v); encoding/json reads %+v", line, err, ref)
		}
		if got, _, gerr := Parse(line); (gerr == nil) != (err == nil) || got != slow {
			t.Fatalf("Parse(%q) = %+v, %v; strict parser %+v, %v", line, got, gerr, slow, err)
		}
	})
}

// BenchmarkBatchLineParse isolates the input side: the scanner on a typical line.
func BenchmarkBatchLineParse(b *testing.B) {
	line := []byte(`{"conduit_total":1234,"conduit_success":1200,"ap2_total":567,"ap2_success":561}` + "\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, st := scan(line); st != scanOK {
			b.Fatal(st)
		}
	}
}
