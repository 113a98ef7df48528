package graph

import (
	"context"
	"errors"
	"strconv"

	"petstore/apierr"
)

// Page sizes of the pets listing.
const (
	DefaultLimit = 20
	MinLimit     = 1
	MaxLimit     = 100
)

// petColumns are the columns a Pet is read from.
var petColumns = []string{"id", "name", "category_id", "status"}

// pageSize returns the page size that limit asks for: the default when nil, an
// invalid_request error outside MinLimit..MaxLimit (never clamped).
func pageSize(limit *int) (int, error) {
	if limit == nil {
		return DefaultLimit, nil
	}
	if *limit < MinLimit || *limit > MaxLimit {
		return 0, LimitError(strconv.Itoa(*limit))
	}
	return *limit, nil
}

// LimitError is the invalid_request error for a limit that is not an integer from MinLimit to
// MaxLimit; got is the value as the client sent it.
func LimitError(got string) error {
	return apierr.Invalid("limit must be an integer from %d to %d; got %q", MinLimit, MaxLimit, got)
}

// storeError turns a database error into an API error: unavailable when the database did not
// answer in time, else internal_error. The cause is only logged.
func storeError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &apierr.Error{Code: apierr.Unavailable, Message: "the database is not answering; retry later", Err: err}
	}
	return apierr.Wrap(err)
}
