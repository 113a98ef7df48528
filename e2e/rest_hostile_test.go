package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"petstore/apierr"
)

// TestHostileInput sends what no honest client does: each gets a 4xx Error body, nothing is
// stored, and the service keeps serving.
func TestHostileInput(t *testing.T) {
	manyHeaders := http.Header{}
	for i := range 150 {
		manyHeaders.Set(fmt.Sprintf("X-Flood-%d", i), "x")
	}
	nest := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	for _, tc := range []errorCase{
		{"header flood", request{method: "GET", path: "/v1/pets", header: manyHeaders}, 400, apierr.InvalidRequest, "headers"},
		{"header flood on orders", request{method: "GET", path: "/v1/store/orders", header: manyHeaders}, 400, apierr.InvalidRequest, "headers"},
		{"huge header", request{method: "GET", path: "/v1/pets", header: http.Header{"X-Big": {strings.Repeat("a", 40<<10)}}}, 400, apierr.InvalidRequest, "headers"},
		{"long query string", get("/v1/pets?limit=5&x=" + strings.Repeat("a", 9000)), 400, apierr.InvalidRequest, "URL"},
		{"long path", get("/v1/pets/" + strings.Repeat("9", 9000)), 400, apierr.InvalidRequest, "URL"},
		{"long path unknown route", get("/v1/" + strings.Repeat("a", 9000)), 404, apierr.NotFound, "no such resource"},
		{"invalid UTF-8 in a name", post("/v1/pets", "{\"name\":\"Re\xffx\",\"categoryId\":1}"), 400, apierr.InvalidRequest, "UTF-8"},
		{"overlong UTF-8", post("/v1/pets", "{\"name\":\"\xc0\xafx\",\"categoryId\":1}"), 400, apierr.InvalidRequest, "UTF-8"},
		{"nesting bomb", post("/v1/pets", `{"name":"Rex","categoryId":1,"x":`+nest+`}`), 400, apierr.InvalidRequest, "JSON"},
		{"duplicate name", post("/v1/pets", `{"name":"Rex","name":"Max","categoryId":1}`), 400, apierr.InvalidRequest, "name"},
		{"duplicate categoryId", post("/v1/pets", `{"name":"Rex","categoryId":1,"categoryId":2}`), 400, apierr.InvalidRequest, "categoryId"},
		{"exponent", post("/v1/pets", `{"name":"Rex","categoryId":1E0}`), 400, apierr.InvalidRequest, "categoryId"},
		{"float with zero fraction", post("/v1/pets", `{"name":"Rex","categoryId":1.0}`), 400, apierr.InvalidRequest, "categoryId"},
		{"negative zero", post("/v1/pets", `{"name":"Rex","categoryId":-0}`), 400, apierr.InvalidRequest, "categoryId"},
		{"NUL in JSON", post("/v1/pets", "{\"name\":\"Rex\",\x00\"categoryId\":1}"), 400, apierr.InvalidRequest, "JSON"},
		{"byte order mark", post("/v1/pets", "\ufeff{\"name\":\"Rex\",\"categoryId\":1}"), 400, apierr.InvalidRequest, "JSON"},
		{"GraphQL nesting bomb", post("/v1/graphql", `{"query":"{ pets { id } }","variables":`+nest+`}`), 400, apierr.InvalidRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newTestAPI(t, dbtestSQLite(t))
			resp := api.do(t, tc.req)
			if tc.req.path == "/v1/graphql" {
				if resp.status < 400 || resp.status > 499 {
					t.Errorf("got %d %s; want a 4xx", resp.status, resp.body)
				}
			} else {
				checkError(t, resp, tc.status, tc.code, tc.word)
			}
			if got := api.do(t, get("/v1/pets")); got.status != 200 || got.body != "[]" {
				t.Errorf("afterwards: got %d %s; want 200 []", got.status, got.body)
			}
		})
	}
}
