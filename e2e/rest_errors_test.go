package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"petstore/apierr"
	"petstore/models"
)

// errorCase is a request the contract refuses: its status, code and a word of the message.
type errorCase struct {
	name   string
	req    request
	status int
	code   apierr.Code
	word   string // the message names this (the offending field)
}

func badInputCases() []errorCase {
	bigName := strings.Repeat("é", models.MaxNameLength+1)
	huge := `{"name":"` + strings.Repeat("a", 1<<20) + `","categoryId":1}`
	return []errorCase{
		{"limit 0", get("/v1/pets?limit=0"), 400, apierr.InvalidRequest, "limit"},
		{"limit 101", get("/v1/pets?limit=101"), 400, apierr.InvalidRequest, "limit"},
		{"limit -1", get("/v1/pets?limit=-1"), 400, apierr.InvalidRequest, "limit"},
		{"limit abc", get("/v1/pets?limit=abc"), 400, apierr.InvalidRequest, "limit"},
		{"limit fraction", get("/v1/pets?limit=1.5"), 400, apierr.InvalidRequest, "limit"},
		{"limit empty", get("/v1/pets?limit="), 400, apierr.InvalidRequest, "limit"},
		{"limit beyond int64", get("/v1/pets?limit=99999999999999999999"), 400, apierr.InvalidRequest, "limit"},
		{"limit twice", get("/v1/pets?limit=5&limit=6"), 400, apierr.InvalidRequest, "limit"},
		{"status unknown", get("/v1/pets?status=lost"), 400, apierr.InvalidRequest, "status"},
		{"status upper case", get("/v1/pets?status=AVAILABLE"), 400, apierr.InvalidRequest, "status"},
		{"status empty", get("/v1/pets?status="), 400, apierr.InvalidRequest, "status"},
		{"query malformed", get("/v1/pets?limit=%zz"), 400, apierr.InvalidRequest, "query"},
		{"name missing", post("/v1/pets", `{"categoryId":1}`), 400, apierr.InvalidRequest, "name"},
		{"name null", post("/v1/pets", `{"name":null,"categoryId":1}`), 400, apierr.InvalidRequest, "name"},
		{"name empty", post("/v1/pets", `{"name":"","categoryId":1}`), 400, apierr.InvalidRequest, "name"},
		{"name blank", post("/v1/pets", `{"name":" \t\n","categoryId":1}`), 400, apierr.InvalidRequest, "name"},
		{"name number", post("/v1/pets", `{"name":5,"categoryId":1}`), 400, apierr.InvalidRequest, "name"},
		{"name too long", post("/v1/pets", `{"name":"`+bigName+`","categoryId":1}`), 400, apierr.InvalidRequest, "name"},
		{"categoryId missing", post("/v1/pets", `{"name":"Rex"}`), 400, apierr.InvalidRequest, "categoryId"},
		{"categoryId null", post("/v1/pets", `{"name":"Rex","categoryId":null}`), 400, apierr.InvalidRequest, "categoryId"},
		{"categoryId string", post("/v1/pets", `{"name":"Rex","categoryId":"3"}`), 400, apierr.InvalidRequest, "categoryId"},
		{"categoryId fraction", post("/v1/pets", `{"name":"Rex","categoryId":3.5}`), 400, apierr.InvalidRequest, "categoryId"},
		{"categoryId exponent", post("/v1/pets", `{"name":"Rex","categoryId":1e3}`), 400, apierr.InvalidRequest, "categoryId"},
		{"categoryId beyond int64", post("/v1/pets", `{"name":"Rex","categoryId":9223372036854775808}`), 400, apierr.InvalidRequest, "categoryId"},
		{"categoryId zero", post("/v1/pets", `{"name":"Rex","categoryId":0}`), 400, apierr.InvalidRequest, "categoryId"},
		{"categoryId negative", post("/v1/pets", `{"name":"Rex","categoryId":-4}`), 400, apierr.InvalidRequest, "categoryId"},
		{"categoryId bool", post("/v1/pets", `{"name":"Rex","categoryId":true}`), 400, apierr.InvalidRequest, "categoryId"},
		{"status unknown in body", post("/v1/pets", `{"name":"Rex","categoryId":1,"status":"lost"}`), 400, apierr.InvalidRequest, "status"},
		{"status upper case in body", post("/v1/pets", `{"name":"Rex","categoryId":1,"status":"SOLD"}`), 400, apierr.InvalidRequest, "status"},
		{"status number in body", post("/v1/pets", `{"name":"Rex","categoryId":1,"status":1}`), 400, apierr.InvalidRequest, "status"},
		{"body not JSON", post("/v1/pets", `{"name":"Rex",`), 400, apierr.InvalidRequest, "JSON"},
		{"body an array", post("/v1/pets", `[{"name":"Rex","categoryId":1}]`), 400, apierr.InvalidRequest, "object"},
		{"body a string", post("/v1/pets", `"Rex"`), 400, apierr.InvalidRequest, "object"},
		{"body null", post("/v1/pets", `null`), 400, apierr.InvalidRequest, "object"},
		{"body trailing data", post("/v1/pets", `{"name":"Rex","categoryId":1} {}`), 400, apierr.InvalidRequest, "JSON"},
		{"body empty", request{method: "POST", path: "/v1/pets", header: http.Header{"Content-Type": {"application/json"}}}, 400, apierr.InvalidRequest, "body"},
		{"body over 1 MiB", post("/v1/pets", huge), 413, apierr.PayloadTooLarge, "1 MiB"},
		{"content type text", request{method: "POST", path: "/v1/pets", body: `{"name":"Rex","categoryId":1}`, header: http.Header{"Content-Type": {"text/plain"}}}, 415, apierr.UnsupportedMediaType, "Content-Type"},
		{"content type missing", request{method: "POST", path: "/v1/pets", body: `{"name":"Rex","categoryId":1}`, header: http.Header{"Content-Type": nil}}, 415, apierr.UnsupportedMediaType, "Content-Type"},
		{"content type form", request{method: "POST", path: "/v1/pets", body: `name=Rex`, header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}}, 415, apierr.UnsupportedMediaType, "Content-Type"},
		{"petId not an integer", get("/v1/pets/abc"), 400, apierr.InvalidRequest, "petId"},
		{"petId fraction", get("/v1/pets/1.5"), 400, apierr.InvalidRequest, "petId"},
		{"petId beyond int64", get("/v1/pets/9223372036854775808"), 400, apierr.InvalidRequest, "petId"},
		{"petId unknown", get("/v1/pets/987654"), 404, apierr.NotFound, "987654"},
		{"orders", get("/v1/store/orders"), 501, apierr.NotImplemented, "orders"},
		{"unknown route", get("/v1/animals"), 404, apierr.NotFound, "/v1/animals"},
		{"trailing slash", get("/v1/pets/"), 404, apierr.NotFound, "/v1/pets/"},
		{"method not allowed", request{method: http.MethodDelete, path: "/v1/pets"}, 405, apierr.MethodNotAllowed, "DELETE"},
		{"method not allowed on a pet", request{method: http.MethodPut, path: "/v1/pets/1", body: `{}`}, 405, apierr.MethodNotAllowed, "PUT"},
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		for _, tc := range badInputCases() {
			t.Run(tc.name, func(t *testing.T) {
				checkError(t, api.do(t, tc.req), tc.status, tc.code, tc.word)
			})
		}
		// Nothing was stored, and the service still serves.
		if got := api.do(t, get("/v1/pets")); got.status != 200 || got.body != "[]" {
			t.Errorf("after bad input, list: got %d %s; want 200 []", got.status, got.body)
		}
	})
}

func TestMethodNotAllowedListsAllowed(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	resp := api.do(t, request{method: http.MethodDelete, path: "/v1/pets"})
	if got := resp.header.Get("Allow"); got != "GET, HEAD, POST" {
		t.Errorf("Allow: got %q; want %q", got, "GET, HEAD, POST")
	}
}

func TestDatabaseFailureHidesInternals(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	api.do(t, get("/v1/pets")) // warm the key cache
	if err := api.db.Close(); err != nil {
		t.Fatal(err)
	}
	resp := api.do(t, get("/v1/pets"))
	checkError(t, resp, 500, apierr.Internal, "internal error")
	if strings.Contains(strings.ToLower(resp.body), "sql") {
		t.Errorf("500 body leaks internals: %s", resp.body)
	}
	req := get("/readyz")
	req.noAuth = true
	checkError(t, api.do(t, req), 503, apierr.Unavailable, "database")
}

// TestHostileInput sends what no honest client does: each gets a 4xx Error body, nothing is
// stored, and the service keeps serving.
func TestHostileInput(t *testing.T) {
	t.Parallel()
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

// TestBodyLimitWithoutContentLength checks the 1 MiB cap on a streamed body whose length is
// not announced, on REST and GraphQL alike.
func TestBodyLimitWithoutContentLength(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	for _, path := range []string{"/v1/pets", "/v1/graphql"} {
		body := `{"name":"` + strings.Repeat("a", 2<<20) + `","categoryId":1}`
		r := httptest.NewRequest(http.MethodPost, path, io.MultiReader(strings.NewReader(body)))
		r.ContentLength = -1
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+api.key)
		rec := httptest.NewRecorder()
		api.h.ServeHTTP(rec, r)
		api.v.Check(t, r, rec.Code, rec.Header(), rec.Body.Bytes())
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: got %d %s; want 413", path, rec.Code, rec.Body)
		}
	}
}
