package models

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/99designs/gqlgen/graphql"

	"petstore/apierr"
)

// ParseID parses s, the decimal text of the identifier that field names: a pet's id (petId in
// REST, id in GraphQL) or a categoryId. Anything that is not a 64-bit signed integer is an
// invalid_request error in IDError's words. Whether the id names a pet is for the caller: one
// that names none, 0 and negatives included, is not found rather than invalid.
func ParseID(field, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, IDError(field, strconv.Quote(s))
	}
	return id, nil
}

// IDError is the invalid_request error for got, the value as sent (JSON text, or a quoted
// string), of the identifier field when it is not what that field takes: categoryId an integer
// from 1 to MaxCategoryID, any other id a 64-bit integer. REST and GraphQL word it alike.
func IDError(field, got string) error {
	if field == categoryIDField {
		return apierr.Invalid("categoryId must be an integer from 1 to %d; got %s", int64(MaxCategoryID), got)
	}
	return apierr.Invalid("%s must be a 64-bit integer; got %s", field, got)
}

// MarshalID writes an int64 identifier as a GraphQL ID (a string).
func MarshalID(id int64) graphql.ContextMarshaler {
	return graphql.ContextWriterFunc(func(_ context.Context, w io.Writer) error {
		var buf [24]byte
		_, err := w.Write(AppendGQLID(buf[:0], id))
		return err
	})
}

// AppendGQLID appends id as MarshalID writes it: a quoted decimal string.
func AppendGQLID(b []byte, id int64) []byte {
	return append(strconv.AppendInt(append(b, '"'), id, 10), '"')
}

// UnmarshalID reads a GraphQL ID, given as a string or an integer, into an int64. Its errors
// name the argument or input field being read (id, categoryId), from ctx.
func UnmarshalID(ctx context.Context, v any) (int64, error) {
	field := "ID"
	if pc := graphql.GetPathContext(ctx); pc != nil && pc.Field != nil {
		field = *pc.Field
	}
	switch v := v.(type) {
	case string:
		return ParseID(field, v)
	case json.Number:
		return ParseID(field, v.String())
	case int64:
		return v, nil
	case int:
		return int64(v), nil
	}
	return 0, IDError(field, fmt.Sprint(v))
}
