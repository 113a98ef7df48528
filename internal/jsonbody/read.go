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
// length is the length the request announced (-1 when unknown); the body is read into a
// buffer of that size, not grown to it as io.ReadAll would.
func Read(r io.Reader, length int64) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	size := 512
	if length >= 0 && length <= MaxBytes {
		size = int(length) + 1 // the byte past the length lets the last Read see io.EOF
	}
	body := make([]byte, 0, size)
	lr := io.LimitedReader{R: r, N: MaxBytes + 1}
	for {
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)]
		}
		n, err := lr.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		switch {
		case len(body) > MaxBytes || errors.As(err, new(*http.MaxBytesError)):
			return nil, ErrTooLarge
		case err == io.EOF:
			return body, nil
		case err != nil:
			return nil, apierr.Invalid("the request body could not be read")
		}
	}
}
