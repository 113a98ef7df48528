package apierr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
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

// TestWriteLogsFailuresOnly: a failure of the service is logged with its cause; a client
// error, not_implemented and a 503 given on purpose (a draining instance) are not.
func TestWriteLogsFailuresOnly(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	for _, tc := range []struct {
		err    error
		logged bool
	}{
		{errors.New("sql: secret detail"), true},
		{&Error{Code: Unavailable, Message: "down", Err: errors.New("dial tcp")}, true},
		{New(Unavailable, "the instance is shutting down"), false},
		{New(NotImplemented, "not yet"), false},
		{Invalid("bad"), false},
	} {
		buf.Reset()
		Write(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v1/pets", nil), tc.err)
		if got := strings.Contains(buf.String(), "request failed"); got != tc.logged {
			t.Errorf("%v: logged %v (%q); want %v", tc.err, got, buf.String(), tc.logged)
		}
	}
}
