// Package etag makes the validators of the API's answers and evaluates If-None-Match on reads,
// GET and HEAD (RFC 9110, sections 8.8.3 and 13.1.2); writes evaluate no precondition
// (docs/rest.md). A tag is derived from what an answer holds, so every instance gives the same
// answer the same tag.
package etag

import (
	"encoding/hex"
	"net/http"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Cache-Control of the answers that carry a validator. Every answer is private: it needs a key,
// and its rate-limit headers are the caller's own, so that a shared cache must neither store
// nor replay it. Immutable is for an answer that never changes while nothing but the API writes
// the pets (a full page that another follows, a single pet): a client may keep it for good.
// Anything else, the last page of a listing above all, must be revalidated at each use.
const (
	Immutable  = "private, max-age=31536000, immutable"
	Revalidate = "private, no-cache"
)

// Set gives the answer whose headers are h, and whose body and header value are those of Of,
// its ETag and the Cache-Control cc, and reports whether req's If-None-Match matches the tag
// (NoneMatch): the answer is then 304 Not Modified, without a body.
func Set(h, req http.Header, body []byte, header, cc string) (notModified bool) {
	tag := Of(body, header)
	h["Etag"] = []string{tag}
	h["Cache-Control"] = []string{cc}
	return NoneMatch(req, tag)
}

// Of returns the strong entity tag of an answer: its body, and header, the header values that
// change with it. The tag is the quoted xxHash64 of both, each closed by a zero byte. On the
// path of every read, it allocates only the tag.
func Of(body []byte, header string) string {
	var d xxhash.Digest
	d.Reset()
	_, _ = d.Write(body)
	_, _ = d.WriteString("\x00")
	_, _ = d.WriteString(header)
	_, _ = d.WriteString("\x00")
	var sum [8]byte
	var tag [18]byte
	tag[0], tag[17] = '"', '"'
	hex.Encode(tag[1:17], d.Sum(sum[:0]))
	return string(tag[:])
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
	if len(fields) == 1 && strings.Trim(fields[0], " \t") == "*" {
		return true
	}
	want, match := opaque(tag), false
	for _, f := range fields {
		tags, ok := parseList(f)
		if !ok {
			return false // "*" beside anything, or not an entity tag
		}
		match = match || slices.Contains(tags, want)
	}
	return match
}

// parseList returns the opaque tags, without their weakness indicators, of field, a list of
// entity tags (#entity-tag: empty elements allowed), and whether it is one. A comma may sit
// inside a tag's quotes.
func parseList(field string) ([]string, bool) {
	var tags []string
	for rest := field; ; {
		rest = strings.TrimLeft(rest, " \t,")
		if rest == "" {
			return tags, true
		}
		tag, after, ok := parseTag(rest)
		if !ok {
			return nil, false
		}
		tags = append(tags, tag)
		rest = strings.TrimLeft(after, " \t")
		if rest != "" && rest[0] != ',' {
			return nil, false
		}
	}
}

// parseTag reads the entity tag at the start of s, [W/] DQUOTE *etagc DQUOTE, and returns its
// opaque tag, what follows it, and whether s starts with one.
func parseTag(s string) (tag, rest string, ok bool) {
	s, _ = strings.CutPrefix(s, "W/")
	if s == "" || s[0] != '"' {
		return "", "", false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[:i+1], s[i+1:], true
		case c != 0x21 && (c < 0x23 || c == 0x7f): // etagc: %x21 / %x23-7E / obs-text
			return "", "", false
		}
	}
	return "", "", false
}

// opaque returns tag without its weakness indicator.
func opaque(tag string) string {
	t, _ := strings.CutPrefix(tag, "W/")
	return t
}
