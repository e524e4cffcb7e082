package witness

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"testing"
)

// FuzzNewCosignatureVerifier: a key is accepted only in its one canonical
// form (name, the key id in lower-case hex, strict base64 of 0x04 and 32
// bytes), so the key an operator configured is the key checked.
func FuzzNewCosignatureVerifier(f *testing.F) {
	f.Add("witness.example/w1+d62133af+BIV3qewrFCUdxhhynjif4cqcHuSMX6eDhoNBP8V8DfI9")
	f.Add("witness.example/w1+D62133AF+BIV3qewrFCUdxhhynjif4cqcHuSMX6eDhoNBP8V8DfI9")
	f.Add("witness.example/w1+d62133af+AYV3qewrFCUdxhhynjif4cqcHuSMX6eDhoNBP8V8DfI9")
	f.Add("a+00000000+")
	f.Add("witness.example/w1+d62133af+BIV3qewrFCUdxhhynjif4cq\ncHuSMX6eDhoNBP8V8DfI9")
	f.Fuzz(func(t *testing.T, vkey string) {
		v, err := NewCosignatureVerifier(vkey)
		if err != nil {
			return
		}
		canon := fmt.Sprintf("%s+%08x+%s", v.Name(), v.KeyHash(), base64.StdEncoding.EncodeToString(append([]byte{algCosignatureV1}, v.key...)))
		if canon != vkey && canon != lowerHash(vkey) {
			t.Fatalf("accepted %q, whose canonical form is %q", vkey, canon)
		}
		if v.Verify([]byte("a\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"), make([]byte, cosignatureSize)) {
			t.Fatal("verified a zero signature")
		}
	})
}

// lowerHash is vkey with its key id in lower case (ParseUint reads both).
func lowerHash(vkey string) string {
	b := []byte(vkey)
	for i := range b {
		if b[i] == '+' {
			for j := i + 1; j < len(b) && j <= i+8; j++ {
				if 'A' <= b[j] && b[j] <= 'F' {
					b[j] += 'a' - 'A'
				}
			}
			break
		}
	}
	return string(b)
}

// FuzzHeldSize: a 409 body is read only as a decimal size without leading
// zeroes and one newline, and then as exactly that size.
func FuzzHeldSize(f *testing.F) {
	for _, s := range []string{"0\n", "11\n", "011\n", "11", "18446744073709551615\n", "18446744073709551616\n", "+1\n", " 1\n", "1\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := heldSize(body)
		if err != nil {
			return
		}
		if string(body) != strconv.FormatUint(n, 10)+"\n" {
			t.Fatalf("read %q as %d", body, n)
		}
	})
}
