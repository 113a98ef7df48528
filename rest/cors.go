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
	return cors.New(cors.Options{
		AllowedOrigins: origins,
		AllowedMethods: []string{http.MethodGet, http.MethodPost},
		AllowedHeaders: []string{"Authorization", "Content-Type", "Accept", "Idempotency-Key", "X-Request-ID"},
		ExposedHeaders: []string{
			"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit", "RateLimit-Policy",
			"Retry-After", "Link", "Location", "Deprecation", "Sunset", "WWW-Authenticate", "X-Request-ID",
			"Idempotent-Replayed",
		},
		MaxAge: 600, // seconds a browser may reuse a preflight answer
	}).Handler(h)
}
