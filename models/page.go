package models

import (
	"encoding/base64"
	"strconv"
	"strings"

	"petstore/apierr"
)

// The page size of the pets listing: REST's limit, GraphQL's limit and first.
const (
	DefaultPageSize = 20
	MinPageSize     = 1
	MaxPageSize     = 100
)

// PageSize returns the page size that the argument name asks for: DefaultPageSize when size
// is nil, an invalid_request error outside MinPageSize..MaxPageSize (never clamped).
func PageSize(name string, size *int) (int, error) {
	if size == nil {
		return DefaultPageSize, nil
	}
	if *size < MinPageSize || *size > MaxPageSize {
		return 0, pageSizeError(name, strconv.Itoa(*size))
	}
	return *size, nil
}

// ParsePageSize parses text, the decimal page size that the query parameter name gives; what
// is not an integer is refused in PageSize's words. The range is PageSize's to check.
func ParsePageSize(name, text string) (int, error) {
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, pageSizeError(name, text)
	}
	return n, nil
}

func pageSizeError(name, got string) error {
	return apierr.Invalid("%s must be an integer from %d to %d; got %q", name, MinPageSize, MaxPageSize, got)
}

// cursorPrefix starts every cursor before encoding: cursors are opaque to clients, and the
// version lets their form change without breaking the ones in flight.
const cursorPrefix = "pet:v1:"

// EncodeCursor returns the cursor that pages on after the pet with id: one allocation, the
// string, its text and encoding made on the stack.
func EncodeCursor(id int64) string {
	var enc [MaxCursorBytes]byte
	return string(AppendCursor(enc[:0], id))
}

// MaxCursorBytes is the length of the longest cursor: the encoding of the prefix and any int64.
const MaxCursorBytes = (len(cursorPrefix) + 20 + 2) / 3 * 4

// AppendCursor appends the cursor of EncodeCursor to b: the cursors of a page are made into
// one buffer.
func AppendCursor(b []byte, id int64) []byte {
	var text [len(cursorPrefix) + 20]byte // the prefix and any int64
	return base64.RawURLEncoding.AppendEncode(b, strconv.AppendInt(append(text[:0], cursorPrefix...), id, 10))
}

// DecodeCursor returns the id that cursor pages on after: 0 for none (nil), an
// invalid_request error for anything this service did not issue.
func DecodeCursor(cursor *string) (int64, error) {
	if cursor == nil {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(*cursor)
	idText, ok := strings.CutPrefix(string(raw), cursorPrefix)
	id, perr := strconv.ParseInt(idText, 10, 64)
	if err != nil || !ok || perr != nil || id < 0 {
		return 0, apierr.Invalid("after must be a cursor from a previous page (a Link header or an endCursor); got %q", *cursor)
	}
	return id, nil
}
