package rest

import (
	"net/http"

	"github.com/rs/cors"
)

// CORS lets browser apps on the given origins ("*" for any) call the API: preflight requests
// are answered before authentication (they carry no key), Authorization may be sent, and the
// rate-limit, paging, deprecation and request-ID headers are readable by scripts. With no
// origins, h is returned as is and browsers keep to the same origin.
func CORS(origins []string, h http.Handler) http.Handler {
	if len(origins) == 0 {
		return h
	}
	return newCORS(origins).Handler(h)
}

// AllowsOrigin returns whether a request's Origin is one of origins, matched as CORS matches
// it ("*" for any, "https://*.example.com" for a site's subdomains); with no origins, none is.
func AllowsOrigin(origins []string) func(*http.Request) bool {
	if len(origins) == 0 {
		return func(*http.Request) bool { return false }
	}
	return newCORS(origins).OriginAllowed
}

// newCORS returns the CORS handler of origins, which must not be empty.
func newCORS(origins []string) *cors.Cors {
	return cors.New(cors.Options{
		AllowedOrigins: origins,
		AllowedMethods: []string{http.MethodGet, http.MethodHead, http.MethodPost},
		AllowedHeaders: []string{"Authorization", "Content-Type", "Accept", "Idempotency-Key", "X-Request-ID"},
		ExposedHeaders: []string{
			"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit", "RateLimit-Policy",
			"Retry-After", "Link", "Location", "Deprecation", "Sunset", "WWW-Authenticate", "X-Request-ID",
			"Idempotent-Replayed",
		},
		MaxAge: 600, // seconds a browser may reuse a preflight answer
	})
}
