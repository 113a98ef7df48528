package apitest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"petstore/testkit/apitest"
)

// recorder is a testing.TB that records failures instead of failing the test, so that a test
// can assert that the Validator fails.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Error(args ...any) { r.record(fmt.Sprint(args...)) }

func (r *recorder) Errorf(format string, args ...any) { r.record(fmt.Sprintf(format, args...)) }

func (r *recorder) Fatal(args ...any) { r.record(fmt.Sprint(args...)) }

func (r *recorder) Fatalf(format string, args ...any) { r.record(fmt.Sprintf(format, args...)) }

func (r *recorder) record(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, msg)
}

// newValidator returns a Validator of the service's own document.
func newValidator(t *testing.T) *apitest.Validator {
	t.Helper()
	doc, err := os.ReadFile("../../rest/openapi.json")
	if err != nil {
		t.Fatalf("reading the document: %v", err)
	}
	return apitest.NewValidator(t, doc)
}

const (
	petJSON   = `{"id":7,"name":"Rex","categoryId":3,"status":"available"}`
	errorJSON = `{"code":"invalid_request","message":"limit must be an integer from 1 to 100; got \"0\"","status":400}`
)

// headers returns a JSON response's headers with the rate-limit fields, plus kv pairs; a pair
// with an empty value deletes that header.
func headers(kv ...string) http.Header {
	h := http.Header{
		"Content-Type":          {"application/json; charset=utf-8"},
		"X-Ratelimit-Limit":     {"60"},
		"X-Ratelimit-Remaining": {"47"},
		"X-Ratelimit-Reset":     {"1767225660"},
		"Ratelimit-Policy":      {`"minute";q=60;w=60, "day";q=1000;w=86400`},
		"Ratelimit":             {`"minute";r=47;t=13`},
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			h.Del(kv[i])
		} else {
			h.Set(kv[i], kv[i+1])
		}
	}
	return h
}

// read returns the headers of a listPets 200 or 304, plus kv pairs as in headers.
func read(kv ...string) http.Header {
	return headers(append([]string{
		"ETag", `"3f2a9c4e8b1d7a60"`,
		"Cache-Control", "private, no-cache",
	}, kv...)...)
}

// deprecated returns the headers of a getPet 200 or 304, plus kv pairs as in headers.
func deprecated(kv ...string) http.Header {
	return read(append([]string{
		"Cache-Control", "private, max-age=31536000, immutable",
		"Deprecation", "@1767225600",
		"Sunset", "Thu, 05 Dec 2030 00:00:00 GMT",
		"Link", `</v1/pets>; rel="successor-version"`,
	}, kv...)...)
}

type exchange struct {
	name        string
	method, url string
	status      int
	header      http.Header
	body        string
	wantChecked bool   // Check returns true
	wantFailure string // a substring of the failure; empty: no failure
}

func run(t *testing.T, v *apitest.Validator, tests []exchange) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{TB: t}
			req := httptest.NewRequest(tt.method, tt.url, nil)
			checked := v.Check(rec, req, tt.status, tt.header, []byte(tt.body))
			for _, f := range rec.failures {
				t.Logf("recorded failure: %s", f)
			}
			if checked != tt.wantChecked {
				t.Errorf("Check: got %v; want %v", checked, tt.wantChecked)
			}
			switch {
			case tt.wantFailure == "" && len(rec.failures) > 0:
				t.Errorf("failures: got %q; want none", rec.failures)
			case tt.wantFailure != "" && len(rec.failures) == 0:
				t.Errorf("failures: got none; want one containing %q", tt.wantFailure)
			case tt.wantFailure != "" && !strings.Contains(strings.Join(rec.failures, "\n"), tt.wantFailure):
				t.Errorf("failures: got %q; want one containing %q", rec.failures, tt.wantFailure)
			}
		})
	}
}

func TestCheckPassesGoodResponses(t *testing.T) {
	v := newValidator(t)
	run(t, v, []exchange{
		{"list", "GET", "/v1/pets?limit=5", 200, read(), "[" + petJSON + `,{"id":8,"name":"Mia","categoryId":1}]`, true, ""},
		{"empty list", "GET", "/v1/pets", 200, read(), "[]", true, ""},
		{"absolute URL", "GET", "http://127.0.0.1:8080/v1/pets?status=sold", 200, read(), "[]", true, ""},
		{"list not modified", "GET", "/v1/pets", 304, read("Content-Type", "", "Cache-Control", "private, max-age=31536000, immutable"), "", true, ""},
		{"get not modified", "GET", "/v1/pets/7", 304, deprecated("Content-Type", ""), "", true, ""},
		{"bad limit", "GET", "/v1/pets?limit=500", 400, headers(), errorJSON, true, ""},
		{"create", "POST", "/v1/pets", 201, headers(), petJSON, true, ""},
		{"replay", "POST", "/v1/pets", 201, headers("Idempotent-Replayed", "true"), petJSON, true, ""},
		{"key reused", "POST", "/v1/pets", 422, headers(), `{"code":"idempotency_key_reused","message":"m","status":422}`, true, ""},
		{"too large", "POST", "/v1/pets", 413, headers(), `{"code":"payload_too_large","message":"m","status":413}`, true, ""},
		{"get", "GET", "/v1/pets/7", 200, deprecated(), petJSON, true, ""},
		{"not found", "GET", "/v1/pets/999", 404, headers(), `{"code":"not_found","message":"m","status":404}`, true, ""},
		{"petId not an integer", "GET", "/v1/pets/abc", 400, headers(), errorJSON, true, ""},
		{"unauthorized", "GET", "/v1/pets", 401, headers("WWW-Authenticate", `Bearer realm="petstore"`), `{"code":"unauthorized","message":"m","status":401}`, true, ""},
		{"rate limited", "POST", "/v1/pets", 429, headers("Retry-After", "13"), `{"code":"rate_limited","message":"m","status":429}`, true, ""},
		{"orders", "GET", "/v1/store/orders", 501, headers(), `{"code":"not_implemented","message":"m","status":501}`, true, ""},
		{"unavailable", "GET", "/v1/store/orders", 503, headers("Retry-After", "1"), `{"code":"unavailable","message":"m","status":503}`, true, ""},
	})
}

func TestCheckFailsBadResponses(t *testing.T) {
	v := newValidator(t)
	run(t, v, []exchange{
		{"list is an object", "GET", "/v1/pets", 200, read(), `{"pets":[]}`, true, "doesn't match schema"},
		{"list without ETag", "GET", "/v1/pets", 200, read("ETag", ""), "[]", true, "ETag"},
		{"304 without ETag", "GET", "/v1/pets", 304, read("Content-Type", "", "ETag", ""), "", true, "ETag"},
		{"Cache-Control public", "GET", "/v1/pets/7", 200, deprecated("Cache-Control", "public, max-age=60"), petJSON, true, "Cache-Control"},
		{"no rate-limit headers", "GET", "/v1/pets", 200, http.Header{"Content-Type": {"application/json"}, "Etag": {`"x"`}, "Cache-Control": {"private, no-cache"}}, "[]", true, "RateLimit"},
		{"304 with a body", "GET", "/v1/pets", 304, read("Content-Type", ""), "[]", true, "with a body"},
		{"304 undeclared", "GET", "/v1/store/orders", 304, read("Content-Type", ""), "", true, "does not declare"},
		{"undeclared status", "GET", "/v1/pets", 418, headers(), errorJSON, true, "status is not supported"},
		{"404 on listPets", "GET", "/v1/pets", 404, headers(), errorJSON, true, "status is not supported"},
		{"pet without id", "GET", "/v1/pets/7", 200, deprecated(), `{"name":"Rex","categoryId":3}`, true, `"id"`},
		{"pet with null status", "POST", "/v1/pets", 201, headers(), `{"id":7,"name":"Rex","categoryId":3,"status":null}`, true, "status"},
		{"pet with string id", "POST", "/v1/pets", 201, headers(), `{"id":"7","name":"Rex","categoryId":3}`, true, "id"},
		{"malformed body", "POST", "/v1/pets", 201, headers(), `{"id":7,`, true, "decode"},
		{"401 without WWW-Authenticate", "GET", "/v1/pets", 401, headers(), `{"code":"unauthorized","message":"m","status":401}`, true, "WWW-Authenticate"},
		{"429 without Retry-After", "GET", "/v1/pets", 429, headers(), `{"code":"rate_limited","message":"m","status":429}`, true, "Retry-After"},
		{"Retry-After zero", "GET", "/v1/pets", 429, headers("Retry-After", "0"), `{"code":"rate_limited","message":"m","status":429}`, true, "Retry-After"},
		{"getPet without Sunset", "GET", "/v1/pets/7", 200, deprecated("Sunset", ""), petJSON, true, "Sunset"},
		{"getPet without Deprecation", "GET", "/v1/pets/7", 200, deprecated("Deprecation", ""), petJSON, true, "Deprecation"},
		{"rate-limit header not an integer", "GET", "/v1/pets", 200, read("X-RateLimit-Remaining", "many"), "[]", true, "X-RateLimit-Remaining"},
		{"text content type", "GET", "/v1/pets", 200, read("Content-Type", "text/plain"), "[]", true, "text/plain"},
		{"no content type", "GET", "/v1/store/orders", 501, headers("Content-Type", ""), `{"code":"not_implemented","message":"m","status":501}`, true, "Content-Type"},
		{"unknown error code", "GET", "/v1/store/orders", 501, headers(), `{"code":"nope","message":"m","status":501}`, true, "code"},
		{"error status differs", "GET", "/v1/pets/7", 404, headers(), errorJSON, true, "whose status is 400"},
		{"error without status", "GET", "/v1/pets/7", 404, headers(), `{"code":"not_found","message":"m"}`, true, "status"},
	})
}

func TestCheckSkipsUndocumentedRoutes(t *testing.T) {
	v := newValidator(t)
	run(t, v, []exchange{
		{"graphql", "POST", "/v1/graphql", 200, headers(), `{"data":{}}`, false, ""},
		{"graphql get", "GET", "/v1/graphql?query={pets{id}}", 200, headers(), `{"data":{}}`, false, ""},
		{"openapi", "GET", "/v1/openapi.json", 200, headers(), `{}`, false, ""},
		{"unknown path", "GET", "/v1/nope", 404, headers(), errorJSON, false, ""},
		{"trailing slash", "GET", "/v1/pets/", 404, headers(), `{"code":"not_found","message":"m","status":404}`, false, ""},
		{"trailing slash on a pet", "GET", "/v1/pets/7/", 404, headers(), `{"code":"not_found","message":"m","status":404}`, false, ""},
		{"below a pet", "GET", "/v1/pets/7/toys", 404, headers(), `{"code":"not_found","message":"m","status":404}`, false, ""},
		{"without prefix", "GET", "/pets", 404, headers(), errorJSON, false, ""},
		{"undocumented method", "DELETE", "/v1/pets", 405, headers(), errorJSON, false, ""},
		{"head", "HEAD", "/v1/pets", 200, headers(), "", false, ""},
		{"healthz", "GET", "/healthz", 200, http.Header{}, "ok", false, ""},
	})
}

func TestNewValidatorFailsInvalidDocuments(t *testing.T) {
	tests := []struct{ name, doc string }{
		{"not JSON", "{"},
		{"no info", `{"openapi":"3.0.3","paths":{}}`},
		{"dangling reference", `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/pets":{"get":{"responses":{"200":{"$ref":"#/components/responses/Nope"}}}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			if v := apitest.NewValidator(rec, []byte(tt.doc)); v != nil {
				t.Errorf("NewValidator: got %v; want nil", v)
			}
			if len(rec.failures) == 0 {
				t.Errorf("failures: got none; want one")
			}
		})
	}
}
