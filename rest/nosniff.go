package rest

import "net/http"

// nosniff is the value of X-Content-Type-Options, allocated once.
var nosniff = []string{"nosniff"}

// NoSniff returns h with X-Content-Type-Options: nosniff on every answer, whatever writes it
// (a page, a list, a created pet, GraphQL, the OpenAPI document, an error, a CORS preflight,
// /metrics): a browser then never reads a body as another type than the one it is sent as.
func NoSniff(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["X-Content-Type-Options"] = nosniff
		h.ServeHTTP(w, r)
	})
}
