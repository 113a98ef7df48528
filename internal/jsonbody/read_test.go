package jsonbody

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"petstore/apierr"
)

// TestRead checks that Read returns the whole body whatever length the request announced, and
// ErrTooLarge for a body over MaxBytes, cut by an http.MaxBytesReader or not.
func TestRead(t *testing.T) {
	const body = `{"name":"Rex","categoryId":3}`
	for _, length := range []int64{-1, 0, 5, int64(len(body)), int64(len(body)) + 100, MaxBytes, MaxBytes + 1} {
		got, err := Read(strings.NewReader(body), length)
		if err != nil || string(got) != body {
			t.Errorf("Read(length %d) = %q, %v; want the body", length, got, err)
		}
	}
	huge := strings.Repeat(" ", MaxBytes+1)
	for name, open := range map[string]func() io.Reader{
		"plain": func() io.Reader { return strings.NewReader(huge) },
		"MaxBytesReader": func() io.Reader {
			return http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader(huge)), MaxBytes)
		},
	} {
		for _, length := range []int64{-1, 10, MaxBytes + 1} {
			if _, err := Read(open(), length); !errors.Is(err, ErrTooLarge) {
				t.Errorf("%s, length %d: got %v; want ErrTooLarge", name, length, err)
			}
		}
	}
	if _, err := Read(io.MultiReader(strings.NewReader("{"), errReader{}), 2); apierr.From(err).Code != apierr.InvalidRequest {
		t.Errorf("a failing body: got %v; want invalid_request", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
