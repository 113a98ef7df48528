// Package etag makes the validators of the API's answers and evaluates If-None-Match (RFC 9110,
// sections 8.8.3 and 13.1.2). A tag is derived from what an answer holds, so every instance
// gives the same answer the same tag.
package etag

import (
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Of returns the strong entity tag of an answer made of parts (its body, and the header
// values that change with it): the quoted xxHash64 of the parts, each closed by a zero byte.
func Of(parts ...[]byte) string {
	d := xxhash.New()
	for _, p := range parts {
		_, _ = d.Write(p)
		_, _ = d.Write([]byte{0})
	}
	var sum [8]byte
	buf := make([]byte, 0, 18)
	buf = append(buf, '"')
	buf = hex.AppendEncode(buf, d.Sum(sum[:0]))
	return string(append(buf, '"'))
}

// NoneMatch reports whether the If-None-Match fields of h make a GET of a resource whose
// current representation has the entity tag tag fail its condition: the answer is then 304
// Not Modified. "*" matches any representation; a list matches when one of its tags matches
// tag by the weak comparison (W/ ignored). No field, or a field that is not "*" or a list of
// entity tags, is no condition: NoneMatch reports false, and the request is answered in full.
func NoneMatch(h http.Header, tag string) bool {
	fields := h.Values("If-None-Match")
	if len(fields) == 0 {
		return false
	}
	want := opaque(tag)
	star, match := false, false
	for _, f := range fields {
		for elem := range strings.SplitSeq(f, ",") {
			elem = strings.Trim(elem, " \t")
			switch {
			case elem == "": // empty list elements are allowed (RFC 9110, 5.6.1)
			case elem == "*":
				star = true
			default:
				t, ok := parse(elem)
				if !ok {
					return false
				}
				match = match || t == want
			}
		}
	}
	if star { // "*" stands alone, or the field is invalid
		return len(fields) == 1 && strings.Trim(fields[0], " \t") == "*"
	}
	return match
}

// parse returns the opaque tag of an entity-tag, without its weakness indicator, and whether
// elem is one: [W/] DQUOTE *etagc DQUOTE.
func parse(elem string) (string, bool) {
	elem, _ = strings.CutPrefix(elem, "W/")
	if len(elem) < 2 || elem[0] != '"' || elem[len(elem)-1] != '"' {
		return "", false
	}
	for i := 1; i < len(elem)-1; i++ {
		if c := elem[i]; c != 0x21 && (c < 0x23 || c == 0x7f) { // etagc: %x21 / %x23-7E / obs-text
			return "", false
		}
	}
	return elem, true
}

// opaque returns tag without its weakness indicator.
func opaque(tag string) string {
	t, _ := strings.CutPrefix(tag, "W/")
	return t
}
