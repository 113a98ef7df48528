package jsonbody

import (
	"errors"
	"io"
	"net/http"

	"petstore/apierr"
)

// MaxBytes is the largest request body the service reads: 1 MiB.
const MaxBytes = 1 << 20

// ErrTooLarge is the answer to a body over MaxBytes: 413 payload_too_large.
var ErrTooLarge = apierr.New(apierr.PayloadTooLarge, "the request body must be at most %d bytes (1 MiB)", MaxBytes)

// Read reads a request body of at most MaxBytes: ErrTooLarge past it (whether r stops there,
// as an http.MaxBytesReader does, or not), an invalid_request error when it cannot be read.
func Read(r io.Reader) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if errors.As(err, new(*http.MaxBytesError)) || len(body) > MaxBytes {
		return nil, ErrTooLarge
	}
	if err != nil {
		return nil, apierr.Invalid("the request body could not be read")
	}
	return body, nil
}
