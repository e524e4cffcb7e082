package jcsstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// oracle is s as gowebpki/jcs canonicalizes it.
func oracle(t testing.TB, s string) []byte {
	t.Helper()
	in, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jcs.Transform(in)
	if err != nil {
		t.Fatalf("jcs.Transform(%s): %v", in, err)
	}
	return out
}

// TestEscapes checks every ASCII character, alone and between others,
// against the escapes RFC 8785 §3.2.2.2 lists, and against the oracle.
func TestEscapes(t *testing.T) {
	short := map[byte]string{'"': `\"`, '\\': `\\`, '\b': `\b`, '\t': `\t`, '\n': `\n`, '\f': `\f`, '\r': `\r`}
	for c := range byte(0x80) {
		want, ok := short[c]
		switch {
		case ok:
		case c < 0x20:
			want = `\u00` + string(hexDigits[c>>4]) + string(hexDigits[c&0xf])
		default:
			want = string(c)
		}
		for _, s := range []string{string(c), "a" + string(c) + "é", string(c) + string(c)} {
			got := Append(nil, s)
			exp := `"` + strings.ReplaceAll(s, string(c), want) + `"`
			if string(got) != exp {
				t.Errorf("Append(%q) = %s, want %s", s, got, exp)
			}
			if o := oracle(t, s); !bytes.Equal(got, o) {
				t.Errorf("Append(%q) = %s, jcs %s", s, got, o)
			}
		}
	}
}

// TestAllRunes compares every scalar value, in blocks of 4096 with a
// control character and a quote between blocks, with the oracle: nothing
// above U+001F is escaped, not even what encoding/json escapes (<, >, &,
// U+2028, U+2029).
func TestAllRunes(t *testing.T) {
	var sb strings.Builder
	for lo := rune(0); lo <= utf8.MaxRune; lo += 0x1000 {
		sb.Reset()
		for r := lo; r < lo+0x1000; r++ {
			if utf8.ValidRune(r) {
				sb.WriteRune(r)
			}
		}
		sb.WriteString("\x01\"")
		s := sb.String()
		if got, want := Append(nil, s), oracle(t, s); !bytes.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Errorf("block U+%04X: first difference at byte %d: %q, jcs %q", lo, i, got[i:min(i+12, len(got))], want[i:min(i+12, len(want))])
		}
	}
}

// TestInvalidUTF8 checks that invalid bytes are copied, not replaced: a
// string holding U+FFFD and one holding the invalid byte it would replace
// stay apart.
func TestInvalidUTF8(t *testing.T) {
	for s, want := range map[string]string{
		"a\xffb":        "\"a\xffb\"",
		"\xed\xa0\x80":  "\"\xed\xa0\x80\"", // a surrogate's UTF-8 bytes
		"\xc3\n":        "\"\xc3\\n\"",
		"a\uFFFDb":      "\"a\uFFFDb\"",
		"":              `""`,
		"\x00\x1f\x7f ": `"\u0000\u001f` + "\x7f" + ` "`,
	} {
		if got := Append(nil, s); string(got) != want {
			t.Errorf("Append(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestAppendKeepsPrefix(t *testing.T) {
	buf := make([]byte, 0, 64)
	buf = append(buf, `{"a":`...)
	if got := string(Append(buf, "x\ty")); got != `{"a":"x\ty"` {
		t.Fatalf("got %s", got)
	}
	if n := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], "plain\nescaped") }); n != 0 {
		t.Fatalf("Append into a large enough buffer allocates %v times", n)
	}
}

// FuzzAppend checks valid UTF-8 against the oracle, and for any input that
// encoding/json reads back what Append wrote, each invalid byte as U+FFFD
// (as encoding/json reads one) and everything else as it was.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "agent-7", "a\"b\\c", "\b\f\n\r\t\x00\x1f", "<&>\u2028\u2029", "😀é", "\xff\xfe", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Append([]byte("x"), s)
		if got[0] != 'x' {
			t.Fatal("prefix overwritten")
		}
		got = got[1:]
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("Append(%q) = %q: not JSON: %v", s, got, err)
		}
		if want := string([]rune(s)); back != want {
			t.Fatalf("Append(%q) = %q reads back as %q", s, got, back)
		}
		if utf8.ValidString(s) {
			if want := oracle(t, s); !bytes.Equal(got, want) {
				t.Fatalf("Append(%q) = %s, jcs %s", s, got, want)
			}
		}
	})
}
