// Package jsonstr writes JSON strings without reflection, for the encoders written by hand on
// the hot paths (pets in models, request lines in observe).
package jsonstr

import "unicode/utf8"

// Append appends s as a JSON string the way encoding/json does by default: ", \ and
// control characters escaped (\b \f \n \r \t, else \u00XX), and so are <, > and & (for HTML)
// and U+2028 and U+2029 (for JavaScript); invalid UTF-8 becomes \ufffd.
func Append(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		if c := s[i]; c >= 0xc2 && c < 0xe0 && i+1 < len(s) && s[i+1]&0xc0 == 0x80 { // two bytes, valid: as they are
			i += 2
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

// safe reports the ASCII characters that Append copies as they are: all but the control
// characters, ", \\, <, > and &.
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()
