package apierr

import (
	"encoding/json"
	"log/slog"
	"net/http"
)

// Body is the JSON Error body of the contract.
type Body struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

// Write writes err as a JSON Error body with its status. Failures of the service (5xx other
// than not_implemented) are logged with their cause; the client sees only the code and the
// safe message.
func Write(w http.ResponseWriter, r *http.Request, err error) {
	e := From(err)
	status := e.Status()
	if status >= http.StatusInternalServerError && e.Code != NotImplemented {
		slog.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path,
			"code", e.Code, "err", e.Error())
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(Body{Code: e.Code, Message: e.Message, Status: status})
}
