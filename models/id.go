package models

import (
	"encoding/json"
	"io"
	"strconv"

	"github.com/99designs/gqlgen/graphql"

	"petstore/apierr"
)

// ParseID parses the decimal identifier s named field (an id, petId or categoryId); anything
// that is not a 64-bit signed integer is an invalid_request error.
func ParseID(field, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, apierr.Invalid("%s must be an integer from 1 to %d", field, int64(MaxCategoryID))
	}
	return id, nil
}

// MarshalID writes an int64 identifier as a GraphQL ID (a string).
func MarshalID(id int64) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		var buf [24]byte
		_, _ = w.Write(AppendGQLID(buf[:0], id))
	})
}

// AppendGQLID appends id as MarshalID writes it: a quoted decimal string.
func AppendGQLID(b []byte, id int64) []byte {
	return append(strconv.AppendInt(append(b, '"'), id, 10), '"')
}

// UnmarshalID reads a GraphQL ID, given as a string or an integer, into an int64.
func UnmarshalID(v any) (int64, error) {
	switch v := v.(type) {
	case string:
		return ParseID("ID", v)
	case json.Number:
		return ParseID("ID", v.String())
	case int64:
		return v, nil
	case int:
		return int64(v), nil
	}
	return 0, apierr.Invalid("ID must be an integer from 1 to %d", int64(MaxCategoryID))
}
