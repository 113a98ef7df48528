package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"petstore/apierr"
	"petstore/auth"
	"petstore/config"
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

// checkError checks that resp is the contract's Error body with status and code, whose
// message names word.
func checkError(t *testing.T, resp response, status int, code apierr.Code, word string) {
	t.Helper()
	if resp.status != status {
		t.Fatalf("status: got %d; want %d (body %s)", resp.status, status, resp.body)
	}
	if ct := resp.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type: got %q; want application/json", ct)
	}
	var e apierr.Body
	if err := json.Unmarshal([]byte(resp.body), &e); err != nil {
		t.Fatalf("body %q is not an Error: %v", resp.body, err)
	}
	if e.Code != code || e.Status != status {
		t.Errorf("body: got code %q status %d; want %q %d", e.Code, e.Status, code, status)
	}
	if !strings.Contains(e.Message, word) {
		t.Errorf("message %q does not name %q", e.Message, word)
	}
}

func TestMethodNotAllowedListsAllowed(t *testing.T) {
	api := newTestAPI(t, dbtestSQLite(t))
	resp := api.do(t, request{method: http.MethodDelete, path: "/v1/pets"})
	if got := resp.header.Get("Allow"); got != "GET, POST" {
		t.Errorf("Allow: got %q; want %q", got, "GET, POST")
	}
}

func TestCreateAndRead(t *testing.T) {
	forEachStore(t, func(t *testing.T, api *testAPI) {
		names := []string{
			`Rex`, `O'Brien "the dog"`, `Robert'); DROP TABLE pets;--`, `🐶🐱 Müsli ñ 漢字`, `back\slash`,
			strings.Repeat("é", models.MaxNameLength), "  padded  ", "<script>alert(1)</script>",
		}
		for i, name := range names {
			body, _ := json.Marshal(map[string]any{"name": name, "categoryId": i + 1, "status": "pending", "id": 999, "extra": true})
			created := api.do(t, post("/v1/pets", string(body)))
			if created.status != http.StatusCreated {
				t.Fatalf("create %q: got %d %s; want 201", name, created.status, created.body)
			}
			pet := decodePet(t, created.body)
			want := models.Pet{ID: pet.ID, Name: name, CategoryID: int64(i + 1), Status: ptr(models.PetStatusPending)}
			if pet.ID == 999 || !samePet(pet, want) {
				t.Errorf("created: got %+v; want %+v with a service-assigned id", pet, want)
			}
			if loc := created.header.Get("Location"); loc != fmt.Sprintf("/v1/pets/%d", pet.ID) {
				t.Errorf("Location: got %q", loc)
			}
			fetched := api.do(t, get(fmt.Sprintf("/v1/pets/%d", pet.ID)))
			if fetched.status != 200 || fetched.body != created.body {
				t.Errorf("get: got %d %s; want 200 %s", fetched.status, fetched.body, created.body)
			}
		}
		list := api.do(t, get("/v1/pets?limit=100"))
		var pets []models.Pet
		if err := json.Unmarshal([]byte(list.body), &pets); err != nil || len(pets) != len(names) {
			t.Fatalf("list: got %s (%v); want %d pets", list.body, err, len(names))
		}
		for i, p := range pets {
			if p.Name != names[i] {
				t.Errorf("pet %d name: got %q; want %q", i, p.Name, names[i])
			}
		}
	})
}

func TestCreateOptionalStatusAndLimits(t *testing.T) {
	forEachStore(t, func(t *testing.T, api *testAPI) {
		for _, tc := range []struct{ name, body, want string }{
			{"no status", `{"name":"A","categoryId":1}`, `{"id":1,"name":"A","categoryId":1}`},
			{"null status", `{"name":"B","categoryId":2,"status":null}`, `{"id":2,"name":"B","categoryId":2}`},
			{"largest categoryId", `{"name":"C","categoryId":9223372036854775807,"status":"sold"}`, `{"id":3,"name":"C","categoryId":9223372036854775807,"status":"sold"}`},
			{"charset parameter", `{"name":"D","categoryId":1,"status":"available"}`, `{"id":4,"name":"D","categoryId":1,"status":"available"}`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req := post("/v1/pets", tc.body)
				req.header = http.Header{"Content-Type": {"application/json; charset=utf-8"}}
				got := api.do(t, req)
				if got.status != 201 || got.body != tc.want {
					t.Errorf("got %d %s; want 201 %s", got.status, got.body, tc.want)
				}
			})
		}
	})
}

func TestList(t *testing.T) {
	forEachStore(t, func(t *testing.T, api *testAPI) {
		statuses := []string{"available", "pending", "sold"}
		for i := range 30 {
			body := fmt.Sprintf(`{"name":"pet%d","categoryId":1,"status":%q}`, i, statuses[i%3])
			if i%5 == 4 {
				body = fmt.Sprintf(`{"name":"pet%d","categoryId":1}`, i)
			}
			if r := api.do(t, post("/v1/pets", body)); r.status != 201 {
				t.Fatalf("seed: got %d %s", r.status, r.body)
			}
		}
		for _, tc := range []struct {
			path   string
			count  int
			status string
		}{
			{"/v1/pets", 20, ""},
			{"/v1/pets?limit=1", 1, ""},
			{"/v1/pets?limit=100", 30, ""},
			{"/v1/pets?status=sold&limit=100", 8, "sold"},
			{"/v1/pets?status=available", 8, "available"},
			{"/v1/pets?limit=3&status=pending", 3, "pending"},
		} {
			t.Run(tc.path, func(t *testing.T) {
				resp := api.do(t, get(tc.path))
				var pets []models.Pet
				if err := json.Unmarshal([]byte(resp.body), &pets); err != nil || resp.status != 200 {
					t.Fatalf("got %d %s", resp.status, resp.body)
				}
				if len(pets) != tc.count {
					t.Errorf("count: got %d; want %d", len(pets), tc.count)
				}
				for i, p := range pets {
					if i > 0 && p.ID <= pets[i-1].ID {
						t.Errorf("not ordered by id: %d after %d", p.ID, pets[i-1].ID)
					}
					if tc.status != "" && (p.Status == nil || string(*p.Status) != tc.status) {
						t.Errorf("pet %d status: got %v; want %s", p.ID, p.Status, tc.status)
					}
				}
			})
		}
	})
}

// TestAnswerLength checks that JSON answers over HTTP carry their Content-Length and are not
// sent in chunks, whether net/http sends the length (a body it holds whole) or the handler
// does (a larger one).
func TestAnswerLength(t *testing.T) {
	api := newTestAPI(t, dbtestSQLite(t))
	for i := range 40 {
		if r := api.do(t, post("/v1/pets", fmt.Sprintf(`{"name":"pet with a longer name %d","categoryId":1}`, i))); r.status != 201 {
			t.Fatalf("seed: got %d %s", r.status, r.body)
		}
	}
	srv := httptest.NewServer(api.h)
	defer srv.Close()
	for _, path := range []string{"/v1/pets?limit=2", "/v1/pets?limit=40", "/v1/pets/1"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+api.key)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: got %d %s, %v", path, resp.StatusCode, body, err)
		}
		if resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) > 0 {
			t.Errorf("%s: Content-Length %d, Transfer-Encoding %v, body of %d bytes; want the body's length, not chunked",
				path, resp.ContentLength, resp.TransferEncoding, len(body))
		}
	}
}

func TestGetPetDeprecation(t *testing.T) {
	api := newTestAPI(t, dbtestSQLite(t))
	api.do(t, post("/v1/pets", `{"name":"Rex","categoryId":1}`))
	for _, path := range []string{"/v1/pets/1", "/v1/pets/2", "/v1/pets/x"} {
		resp := api.do(t, get(path))
		for h, want := range map[string]string{
			"Deprecation": "@1767225600",
			"Sunset":      "Thu, 05 Dec 2030 00:00:00 GMT",
			"Link":        `</v1/pets>; rel="successor-version"`,
		} {
			if got := resp.header.Get(h); got != want {
				t.Errorf("%s %s: got %q; want %q", path, h, got, want)
			}
		}
	}
}

func TestAuthentication(t *testing.T) {
	forEachStore(t, func(t *testing.T, api *testAPI) {
		revoked := api.createKey(t, auth.KeySpec{Plan: "free"})
		if err := auth.RevokeKey(t.Context(), api.db.DB, 2); err != nil {
			t.Fatal(err)
		}
		unknown := auth.NewKey(auth.TestPrefix)
		badSum := api.key[:len(api.key)-1] + flip(api.key[len(api.key)-1])
		live := auth.NewKey(auth.LivePrefix)
		const challenge, invalid = `Bearer realm="petstore"`, `Bearer realm="petstore", error="invalid_token"`
		for i, tc := range []struct {
			name, header, challenge string
		}{
			{"missing", "", challenge},
			{"basic scheme", "Basic dXNlcjpwYXNz", challenge},
			{"key without scheme", api.key, challenge},
			{"scheme without key", "Bearer", invalid},
			{"malformed", "Bearer not-a-key", invalid},
			{"bad checksum", "Bearer " + badSum, invalid},
			{"unknown", "Bearer " + unknown, invalid},
			{"revoked", "Bearer " + revoked, invalid},
			{"live key on a test server", "Bearer " + live, invalid},
			{"key with a tail", "Bearer " + api.key + " x", invalid},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, req := range []request{get("/v1/pets"), post("/v1/pets", `{"name":"Rex","categoryId":1}`), get("/v1/pets/1"), get("/v1/store/orders"), post("/v1/graphql", `{"query":"{ pets { id } }"}`)} {
					req.noAuth = true
					req.remoteAddr = fmt.Sprintf("198.51.100.%d:4000", i+1) // each case within the per-address limit
					if tc.header != "" {
						req.header = http.Header{"Authorization": {tc.header}}
					}
					resp := api.do(t, req)
					checkError(t, resp, 401, apierr.Unauthorized, "API key")
					if got := resp.header.Get("WWW-Authenticate"); got != tc.challenge {
						t.Errorf("%s %s WWW-Authenticate: got %q; want %q", req.method, req.path, got, tc.challenge)
					}
				}
			})
		}
		for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
			req := get("/v1/pets")
			req.header = http.Header{"Authorization": {scheme + " " + api.key}}
			if resp := api.do(t, req); resp.status != 200 {
				t.Errorf("scheme %q: got %d; want 200", scheme, resp.status)
			}
		}
		if got := api.do(t, get("/v1/pets")); got.status != 200 {
			t.Errorf("nothing was stored by refused requests: got %d %s", got.status, got.body)
		} else if got.body != "[]" {
			t.Errorf("refused creates stored pets: %s", got.body)
		}
	})
}

func TestUnauthenticatedRoutes(t *testing.T) {
	api := newTestAPI(t, dbtestSQLite(t))
	for _, path := range []string{"/healthz", "/readyz", "/v1/openapi.json"} {
		req := get(path)
		req.noAuth = true
		if resp := api.do(t, req); resp.status != 200 {
			t.Errorf("%s: got %d %s; want 200", path, resp.status, resp.body)
		}
	}
}

func TestDatabaseFailureHidesInternals(t *testing.T) {
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

func decodePet(t *testing.T, body string) models.Pet {
	t.Helper()
	var p models.Pet
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("body %q is not a Pet: %v", body, err)
	}
	return p
}

func samePet(a, b models.Pet) bool {
	sa, sb := "", ""
	if a.Status != nil {
		sa = string(*a.Status)
	}
	if b.Status != nil {
		sb = string(*b.Status)
	}
	return a.ID == b.ID && a.Name == b.Name && a.CategoryID == b.CategoryID && sa == sb
}

func ptr[T any](v T) *T { return &v }

// flip returns another base-62 character than c.
func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// TestBodyLimitWithoutContentLength checks the 1 MiB cap on a streamed body whose length is
// not announced, on REST and GraphQL alike.
func TestBodyLimitWithoutContentLength(t *testing.T) {
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

// TestNoSniffOnEveryAnswer: every answer carries X-Content-Type-Options: nosniff, whichever
// part of the service writes it.
func TestNoSniffOnEveryAnswer(t *testing.T) {
	cfg := config.Default()
	cfg.CORSOrigins = []string{"https://app.example"}
	api := newTestAPIConfig(t, dbtestSQLite(t), cfg)
	preflight := request{method: http.MethodOptions, path: "/v1/pets", noAuth: true, header: http.Header{
		"Origin": {"https://app.example"}, "Access-Control-Request-Method": {"POST"}}}
	keyless := get("/v1/pets")
	keyless.noAuth = true
	for _, req := range []request{
		get("/v1/pets"), post("/v1/pets", `{"name":"Rex","categoryId":1}`), get("/v1/pets/1"), get("/v1/pets/999999"),
		post("/v1/graphql", `{"query":"{ pets { id } }"}`), get("/v1/graphql?query=%7B%20pets%20%7B%20id%20%7D%20%7D"),
		get("/v1/openapi.json"), get("/v1/graphql/schema.graphql"), get("/healthz"), get("/readyz"), get("/metrics"),
		get("/v1/store/orders"), get("/v1/nowhere"), {method: http.MethodDelete, path: "/v1/pets"}, keyless, preflight,
	} {
		resp := api.do(t, req)
		if got := resp.header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s (%d): X-Content-Type-Options %q; want nosniff", req.method, req.path, resp.status, got)
		}
	}
}
