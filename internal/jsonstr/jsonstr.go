// Package jsonstr writes JSON strings as encoding/json writes them, without its cost for the
// strings the service writes most: pet names, statuses and the request log's fields.
package jsonstr

import "encoding/json"

// Append appends s quoted as json.Marshal writes a string, byte for byte: <, > and & escaped
// among others, invalid UTF-8 replaced. A string of printable ASCII that needs no escape, the
// common case, is copied as it is; any other goes through json.Marshal, which allocates.
func Append(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
