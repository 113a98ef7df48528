package guard

import (
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/vektah/gqlparser/v2/gqlerror"
)

// checkEscapes refuses a document whose string values hold a \u escape of half a UTF-16
// surrogate pair without its other half (such as "\ud800"). gqlparser's lexer writes one as
// U+FFFD, so a name sent that way would be stored changed; the strict reading of JSON bodies
// and variables (internal/jsonbody) refuses the same escape. Block strings and comments have
// no escapes and are skipped.
func checkEscapes(query string) *gqlerror.Error {
	if !strings.Contains(query, `\u`) {
		return nil
	}
	if at := loneSurrogate(query); at >= 0 {
		return refusal(nil, "the query holds %s at byte %d, half of a UTF-16 surrogate pair: strings must be valid Unicode", query[at:at+6], at)
	}
	return nil
}

// loneSurrogate returns the offset of the first lone surrogate escape in a string value of
// query, or -1.
func loneSurrogate(q string) int {
	for i := 0; i < len(q); i++ {
		switch {
		case q[i] == '#':
			for i < len(q) && q[i] != '\n' && q[i] != '\r' {
				i++
			}
		case strings.HasPrefix(q[i:], `"""`):
			i = blockStringEnd(q, i+3) - 1
		case q[i] == '"':
			end, at := stringEnd(q, i+1)
			if at >= 0 {
				return at
			}
			i = end
		}
	}
	return -1
}

// blockStringEnd returns the offset just past the """ that closes the block string whose text
// starts at i (len(q) when none does); \""" does not close it.
func blockStringEnd(q string, i int) int {
	for ; i < len(q); i++ {
		if q[i] == '\\' && strings.HasPrefix(q[i+1:], `"""`) {
			i += 3
			continue
		}
		if strings.HasPrefix(q[i:], `"""`) {
			return i + 3
		}
	}
	return len(q)
}

// stringEnd returns the offset of the quote (or line end) that closes the string whose text
// starts at i, and the offset of its first lone surrogate escape, -1 when it has none.
func stringEnd(q string, i int) (end, lone int) {
	for ; i < len(q) && q[i] != '"' && q[i] != '\n' && q[i] != '\r'; i++ {
		if q[i] != '\\' || i+1 >= len(q) {
			continue
		}
		if q[i+1] != 'u' {
			i++ // the escaped character
			continue
		}
		r, ok := hex4(q, i+2)
		switch {
		case !ok || !utf16.IsSurrogate(r):
		case r < 0xDC00: // high: a low half must follow
			if low, ok := hex4(q, i+8); ok && q[i+6] == '\\' && q[i+7] == 'u' && low >= 0xDC00 && low <= 0xDFFF {
				i += 6
				break
			}
			return i, i
		default: // a low half on its own
			return i, i
		}
		i += 5
	}
	return i, -1
}

// hex4 parses the four hexadecimal digits at q[i:i+4].
func hex4(q string, i int) (rune, bool) {
	if i+4 > len(q) {
		return 0, false
	}
	n, err := strconv.ParseUint(q[i:i+4], 16, 16)
	return rune(n), err == nil
}
