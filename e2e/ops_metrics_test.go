package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestMetricsScrape sends a few requests through the wired service, scrapes /metrics and
// checks the series and their labels: route templates, never raw paths, keys or addresses.
func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	api.do(t, post("/v1/pets", `{"name":"Rex","categoryId":1}`))
	api.do(t, get("/v1/pets/1"))
	api.do(t, get("/v1/pets/12345"))
	api.do(t, get("/v1/no/such/path"))
	req := get("/v1/pets")
	req.noAuth = true
	api.do(t, req)

	rec := httptest.NewRecorder()
	api.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for _, want := range []string{
		`petstore_http_requests_total{method="POST",route="/v1/pets",status="201"} 1`,
		`petstore_http_requests_total{method="GET",route="/v1/pets/:petId",status="200"} 1`,
		`petstore_http_requests_total{method="GET",route="/v1/pets/:petId",status="404"} 1`,
		`petstore_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`petstore_http_requests_total{method="GET",route="/v1/pets",status="401"} 1`,
		`petstore_ratelimit_decisions_total{outcome="allowed",plan="business"} 4`, // the unknown path too
		`petstore_ratelimit_decisions_total{outcome="allowed",plan="anonymous"} 1`,
		`petstore_http_request_duration_seconds_bucket{method="GET",route="/v1/pets/:petId",status="200",le="+Inf"} 1`,
		`go_sql_open_connections{db_name="petstore"}`,
		`go_goroutines`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, leak := range []string{"12345", "/no/such/path", api.key, "192.0.2.1"} {
		if strings.Contains(text, leak) {
			t.Errorf("/metrics carries %q", leak)
		}
	}
	if !regexp.MustCompile(`(?m)^petstore_ratelimit_store_errors_total 0$`).MatchString(text) {
		t.Error("/metrics lacks petstore_ratelimit_store_errors_total 0")
	}
}
