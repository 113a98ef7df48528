package apierr

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   Code
		msg    string
	}{
		{Invalid("limit must be %d", 1), 400, InvalidRequest, "limit must be 1"},
		{New(NotFound, "pet 3 not found"), 404, NotFound, "pet 3 not found"},
		{errors.New("sql: secret detail"), 500, Internal, "internal error"},
		{&Error{Code: Unavailable, Message: "down", Err: errors.New("dial tcp")}, 503, Unavailable, "down"},
	} {
		rec := httptest.NewRecorder()
		Write(rec, httptest.NewRequest(http.MethodGet, "/v1/pets", nil), tc.err)
		var b Body
		if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil || rec.Code != tc.status || b != (Body{tc.code, tc.msg, tc.status}) {
			t.Errorf("Write(%v): got %d %s; want %d %s %q", tc.err, rec.Code, rec.Body, tc.status, tc.code, tc.msg)
		}
	}
}

// TestWriteClientGone checks that a request whose client went away is recorded as 499 with no
// body, not as a failure of the service.
func TestWriteClientGone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	Write(rec, httptest.NewRequest(http.MethodGet, "/v1/pets", nil).WithContext(ctx), Wrap(context.Canceled))
	if rec.Code != StatusClientClosedRequest || rec.Body.Len() != 0 {
		t.Errorf("got %d %q; want 499 and no body", rec.Code, rec.Body)
	}
}
