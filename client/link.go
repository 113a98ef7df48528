package client

import "strings"

// nextLink returns the target of the link with the relation "next" in the Link header
// values (RFC 8288: `<URI>; rel="next"`, several links separated by commas, relation types
// separated by spaces and compared case-insensitively), "" when there is none.
func nextLink(values []string) string {
	for _, v := range values {
		for {
			v = strings.TrimLeft(v, " \t,")
			if !strings.HasPrefix(v, "<") {
				break // the end, or a malformed link: nothing more can be trusted
			}
			end := strings.IndexByte(v, '>')
			if end < 0 {
				break
			}
			target := v[1:end]
			params, rest := cutLinkParams(v[end+1:])
			if hasRel(params, "next") {
				return target
			}
			v = rest
		}
	}
	return ""
}

// cutLinkParams splits s, the text after one link's `>`, at the comma that ends the link's
// parameters (the first outside a quoted string).
func cutLinkParams(s string) (params, rest string) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// hasRel reports whether the link parameters params (`; rel="next"; title="x"`) have a rel
// parameter listing the relation type rel.
func hasRel(params, rel string) bool {
	for p := range strings.SplitSeq(params, ";") {
		name, value, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "rel") {
			continue
		}
		for r := range strings.FieldsSeq(strings.Trim(strings.TrimSpace(value), `"`)) {
			if strings.EqualFold(r, rel) {
				return true
			}
		}
		return false // only the first rel parameter counts (RFC 8288, 3.3)
	}
	return false
}
