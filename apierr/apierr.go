// Package apierr is the one error type of the service. Every error a client can see carries a
// code from the contract's vocabulary and a client-safe message; Status maps each code to its
// HTTP status, and no other code picks status codes.
package apierr

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is a machine-readable error code from the contract's vocabulary.
type Code string

// The contract's error codes.
const (
	InvalidRequest       Code = "invalid_request"
	Unauthorized         Code = "unauthorized"
	NotFound             Code = "not_found"
	MethodNotAllowed     Code = "method_not_allowed"
	IdempotencyKeyInUse  Code = "idempotency_key_in_use"
	PayloadTooLarge      Code = "payload_too_large"
	UnsupportedMediaType Code = "unsupported_media_type"
	IdempotencyKeyReused Code = "idempotency_key_reused"
	RateLimited          Code = "rate_limited"
	KeySuspended         Code = "key_suspended"
	Internal             Code = "internal_error"
	NotImplemented       Code = "not_implemented"
	Unavailable          Code = "unavailable"
	// The refusals of trusted documents (PETSTORE_DOCUMENTS), with the codes and statuses of
	// Apollo Router's safelisting, which clients already handle.
	PersistedQueryNotInList  Code = "persisted_query_not_in_list" // an id that names no listed document
	QueryNotInSafelist       Code = "query_not_in_safelist"       // a text that no listed document has
	PersistedQueryIDRequired Code = "persisted_query_id_required" // a text where only ids are taken
)

var statuses = map[Code]int{
	InvalidRequest:       http.StatusBadRequest,
	Unauthorized:         http.StatusUnauthorized,
	NotFound:             http.StatusNotFound,
	MethodNotAllowed:     http.StatusMethodNotAllowed,
	IdempotencyKeyInUse:  http.StatusConflict,
	PayloadTooLarge:      http.StatusRequestEntityTooLarge,
	UnsupportedMediaType: http.StatusUnsupportedMediaType,
	IdempotencyKeyReused: http.StatusUnprocessableEntity,
	RateLimited:          http.StatusTooManyRequests,
	KeySuspended:         http.StatusTooManyRequests,
	Internal:             http.StatusInternalServerError,
	NotImplemented:       http.StatusNotImplemented,
	Unavailable:          http.StatusServiceUnavailable,

	PersistedQueryNotInList:  http.StatusNotFound,
	QueryNotInSafelist:       http.StatusForbidden,
	PersistedQueryIDRequired: http.StatusBadRequest,
}

// Status returns the HTTP status of code; an unknown code is a 500.
func Status(code Code) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Error is an error a client may see: Code and Message go to the client, Err (the cause) is
// only logged.
type Error struct {
	Code    Code
	Message string
	Err     error
}

// Error returns the message, followed by the cause when there is one.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Status returns the HTTP status of the error's code.
func (e *Error) Status() int { return Status(e.Code) }

// New returns an Error with code and a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns an invalid_request Error with a formatted message.
func Invalid(format string, args ...any) *Error {
	return New(InvalidRequest, format, args...)
}

// Wrap returns an internal_error Error whose cause is err; the client sees only "internal error".
func Wrap(err error) *Error {
	return &Error{Code: Internal, Message: "internal error", Err: err}
}

// From returns err as an *Error: itself if it is (or wraps) one, else an internal error
// wrapping it.
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Wrap(err)
}
