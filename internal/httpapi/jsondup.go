package httpapi

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Duplicate member names. encoding/json keeps the last of two members with
// one name, so {"amount_cents":1,"amount_cents":100000} would quote a hold
// on 100000 that a reader keeping the first (many do) would show as 1.
// RFC 8259 leaves the meaning of such a document open; we refuse it, as
// the event and passport parsers do: every request body is checked before
// it is used.

// duplicateMember returns the path of the first member name that appears
// twice in one object of the valid JSON document b ("amount_cents",
// "certificate.issuer"), looking maxDepth objects deep (0: every depth).
// Names are compared as they decode, so "\u0061" repeats "a". b must be
// valid JSON (decode it first); what is not is reported as no duplicate.
func duplicateMember(b []byte, maxDepth int) (path string, found bool) {
	d := dupScanner{b: b, max: maxDepth}
	d.value(0)
	return d.dup, d.found
}

type dupScanner struct {
	b     []byte
	i     int
	max   int
	stack []string // the names leading to the current value, where checked
	dup   string   // the repeated name's path, once found
	found bool
}

func (d *dupScanner) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\r', '\n':
			d.i++
		default:
			return
		}
	}
}

// value skips one value starting at d.i (after white space), checking the
// objects in it at depth+1 and below.
func (d *dupScanner) value(depth int) {
	d.space()
	if d.i >= len(d.b) || d.found {
		return
	}
	switch d.b[d.i] {
	case '{':
		d.object(depth + 1)
	case '[':
		d.i++
		d.space()
		if d.i < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return
		}
		for d.i < len(d.b) && !d.found {
			d.value(depth)
			d.space()
			if d.i >= len(d.b) {
				return
			}
			c := d.b[d.i]
			d.i++
			if c != ',' {
				return // ']'
			}
		}
	case '"':
		d.str()
	default: // a number, true, false, null
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case ',', ']', '}', ' ', '\t', '\r', '\n':
				return
			}
			d.i++
		}
	}
}

// object checks the object at d.i, at depth, for a repeated name.
func (d *dupScanner) object(depth int) {
	d.i++ // '{'
	check := d.max == 0 || depth <= d.max
	var names []string
	var set map[string]bool // past a few names, a set instead of a scan
	for !d.found {
		d.space()
		if d.i >= len(d.b) {
			return
		}
		if d.b[d.i] == '}' {
			d.i++
			return
		}
		raw := d.str()
		if check {
			name := string(raw)
			if bytes.IndexByte(raw, '\\') >= 0 {
				var s string
				if json.Unmarshal(d.b[d.i-len(raw)-2:d.i], &s) == nil {
					name = s
				}
			}
			seen := false
			if set != nil {
				seen = set[name]
				set[name] = true
			} else {
				for _, n := range names {
					if n == name {
						seen = true
						break
					}
				}
				names = append(names, name)
				if len(names) > 16 {
					set = make(map[string]bool, 2*len(names))
					for _, n := range names {
						set[n] = true
					}
				}
			}
			if seen {
				d.dup, d.found = strings.Join(append(d.stack, name), "."), true
				return
			}
			d.stack = append(d.stack, name)
		}
		d.space()
		if d.i < len(d.b) && d.b[d.i] == ':' {
			d.i++
		}
		d.value(depth)
		if check {
			d.stack = d.stack[:len(d.stack)-1]
		}
		d.space()
		if d.i < len(d.b) && d.b[d.i] == ',' {
			d.i++
		}
	}
}

// str skips the string at d.i and returns its raw content (escapes kept),
// leaving d.i after its closing quote.
func (d *dupScanner) str() []byte {
	d.i++ // '"'
	start := d.i
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case '\\':
			d.i += 2
			continue
		case '"':
			d.i++
			return d.b[start : d.i-1]
		}
		d.i++
	}
	return d.b[start:min(d.i, len(d.b))]
}

// checkDuplicates is the problem for a repeated member name in the valid
// JSON document b (maxDepth as for duplicateMember), or nil.
func checkDuplicates(b []byte, maxDepth int) error {
	if path, ok := duplicateMember(bytes.TrimSpace(b), maxDepth); ok {
		if path == "" || strings.HasSuffix(path, ".") {
			path += `""` // the empty name
		}
		return errorf(ptInvalid, "field %s appears more than once; each member name may appear once per object", path)
	}
	return nil
}
