// Package jcsstr writes a JSON string as RFC 8785 (JCS) canonicalizes it.
// It is the one string escaper of the hand-written canonical encoders
// (passports, checkpoints, ledger records, audit bundles), which skip a
// general canonicalizer because it builds a generic tree first. It imports
// nothing of this module, so every package may use it.
package jcsstr

const hexDigits = "0123456789abcdef"

// Append appends s to dst as an RFC 8785 string (§3.2.2.2) and returns the
// extended slice: in quotes, with quote and backslash escaped by a
// backslash, U+0008, U+0009, U+000A, U+000C and U+000D as \b \t \n \f \r,
// the other characters below U+0020 as \u00xx in lowercase hex, and every
// other byte as it is. s must be valid UTF-8, as JCS requires; an invalid
// byte is copied unchanged, never replaced, so that two different strings
// never write the same bytes.
func Append(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendContent(dst, s)
	return append(dst, '"')
}

// appendContent writes what Append writes between the quotes, copying the
// runs that need no escape at once.
func appendContent(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = appendEscape(dst, c)
		start = i + 1
	}
	return append(dst, s[start:]...)
}

// appendEscape writes the escape of c, a control character, quote or
// backslash.
func appendEscape(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}
