package apierr

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"unicode/utf8"
)

// Body is the JSON Error body of the contract.
type Body struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

// StatusClientClosedRequest is the status recorded (in logs and metrics) for a request whose
// client went away before its answer was ready, as nginx does; no client ever receives it.
const StatusClientClosedRequest = 499

// Write writes err as a JSON Error body with its status. Failures of the service (5xx other
// than not_implemented, and other than a 503 the service chose without a cause, such as a
// draining instance's /readyz) are logged with their cause; the client sees only the code and the
// safe message. An error caused by the client going away (the request's context cancelled)
// is not logged as a failure: its status is StatusClientClosedRequest, without a body. An
// unavailable answer (503) carries Retry-After: 1 unless the writer set one. The message is
// at most MaxMessageBytes (Shorten), whatever of the request it quotes.
func Write(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		slog.DebugContext(r.Context(), "client went away", "method", r.Method, "path", r.URL.Path, "err", err)
		w.WriteHeader(StatusClientClosedRequest)
		return
	}
	e := From(err)
	status := e.Status()
	if failed(e) {
		slog.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path,
			"code", e.Code, "err", e.Error())
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	if e.Code == Unavailable && h.Get("Retry-After") == "" {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(Body{Code: e.Code, Message: Shorten(e.Message, MaxMessageBytes), Status: status})
}

// MaxMessageBytes is the longest message of an Error body, in bytes: a message that quotes a
// long value the client sent (a cursor, a url) would otherwise make the answer as large as
// the request, or larger once escaped.
const MaxMessageBytes = 512

// Shorten returns msg cut to at most n bytes, at a character boundary, ending in "…" when cut.
func Shorten(msg string, n int) string {
	const ellipsis = "…"
	if len(msg) <= n {
		return msg
	}
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + ellipsis
}

// failed reports whether e is a failure of the service, to be logged: a 5xx other than
// not_implemented, unless it is an unavailable answer given on purpose (no cause).
func failed(e *Error) bool {
	switch {
	case e.Status() < http.StatusInternalServerError, e.Code == NotImplemented:
		return false
	case e.Code == Unavailable:
		return e.Err != nil
	}
	return true
}
