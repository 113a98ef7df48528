package graph

import (
	"encoding/base64"
	"strconv"
	"strings"

	"petstore/apierr"
	"petstore/store"
)

// Page sizes of the pets listing.
const (
	DefaultLimit = 20
	MinLimit     = 1
	MaxLimit     = 100
)

// petColumns are the columns a Pet is read from.
var petColumns = []string{"id", "name", "category_id", "status"}

// pageSize returns the page size that the argument name asks for: the default when nil, an
// invalid_request error outside MinLimit..MaxLimit (never clamped).
func pageSize(name string, size *int) (int, error) {
	if size == nil {
		return DefaultLimit, nil
	}
	if *size < MinLimit || *size > MaxLimit {
		return 0, LimitError(name, strconv.Itoa(*size))
	}
	return *size, nil
}

// LimitError is the invalid_request error for a page size, the argument name, that is not an
// integer from MinLimit to MaxLimit; got is the value as the client sent it.
func LimitError(name, got string) error {
	return apierr.Invalid("%s must be an integer from %d to %d; got %q", name, MinLimit, MaxLimit, got)
}

// cursorPrefix starts every cursor before encoding: cursors are opaque to clients, and the
// version lets their form change without breaking the ones in flight.
const cursorPrefix = "pet:v1:"

// encodeCursor returns the cursor that pages on after the pet with id.
func encodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(id, 10)))
}

// decodeCursor returns the id a cursor pages on after: 0 for none, an invalid_request error for
// anything this service did not issue.
func decodeCursor(cursor *string) (int64, error) {
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

// storeError turns a database error into an API error: unavailable when the database could
// not be reached, was too busy or did not answer in time, else internal_error. The cause is
// only logged.
func storeError(err error) error {
	if store.Unavailable(err) {
		return &apierr.Error{Code: apierr.Unavailable, Message: "the database is not answering; retry later", Err: err}
	}
	return apierr.Wrap(err)
}
