package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/app"
	"petstore/auth"
	"petstore/migrations"
	"petstore/rest"
	"petstore/testkit/dbtest"
)

// TestOpenAPIErrorExamples sends, for every example of an error answer in the served OpenAPI
// document (and the Error schema's own, should it get one), the request that produces it, and
// checks that the service answers that status and exactly that body (as JSON values: the
// service escapes < and >). An error response without an example, an example without a
// request here, and a request here whose example is gone all fail, so that a new response
// cannot go unchecked. The 409 and the database 503s need MySQL.
func TestOpenAPIErrorExamples(t *testing.T) {
	examples := errorExamples(t, servedDocument(t))
	cases := exampleCases()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		if _, ok := examples[name]; !ok {
			t.Errorf("%s: got no such example in the document; want every request here to produce one", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(examples)) {
		want := examples[name]
		t.Run(name, func(t *testing.T) {
			run, ok := cases[name]
			if !ok {
				t.Fatal("got no request that produces this example; want one in exampleCases")
			}
			resp := run(t)
			if resp.status != want.status {
				t.Fatalf("status: got %d %s; want %d", resp.status, resp.body, want.status)
			}
			var got any
			if err := json.Unmarshal([]byte(resp.body), &got); err != nil {
				t.Fatalf("body %q: %v", resp.body, err)
			}
			if !reflect.DeepEqual(got, want.value) {
				wantJSON, _ := json.Marshal(want.value)
				t.Errorf("body: got %s; want the example %s", strings.TrimSpace(resp.body), wantJSON)
			}
		})
	}
}

// example is an error answer the document shows: its HTTP status and its body.
type example struct {
	status int
	value  any
}

// servedDocument returns the document the service serves, parsed.
func servedDocument(t *testing.T) *openapi3.T {
	t.Helper()
	rec := httptest.NewRecorder()
	newTestAPI(t, dbtestSQLite(t)).h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil))
	doc, err := openapi3.NewLoader().LoadFromData(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// errorExamples returns the error examples of doc by name: "OPERATION STATUS EXAMPLE" for each
// named example (or "OPERATION STATUS example" for a lone one) of each 4xx and 5xx response of
// each operation, and "schema Error" for the Error schema's. It fails t for an error response
// that has none.
func errorExamples(t *testing.T, doc *openapi3.T) map[string]example {
	t.Helper()
	out := map[string]example{}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for code, resp := range op.Responses.Map() {
				status, err := strconv.Atoi(code)
				if err != nil || status < http.StatusBadRequest {
					continue
				}
				where := op.OperationID + " " + code
				mt := resp.Value.Content.Get("application/json")
				if mt == nil || (mt.Example == nil && len(mt.Examples) == 0) {
					t.Errorf("%s: got no example; want the body the service answers", where)
					continue
				}
				if mt.Example != nil {
					out[where+" example"] = example{status, mt.Example}
				}
				for name, ex := range mt.Examples {
					out[where+" "+name] = example{status, ex.Value.Value}
				}
			}
		}
	}
	if v := doc.Components.Schemas["Error"].Value.Example; v != nil {
		out["schema Error"] = example{int(v.(map[string]any)["status"].(float64)), v}
	}
	return out
}

// exampleOp is an operation of the document with a request that reaches its handler.
type exampleOp struct {
	id  string
	req request
}

var (
	listPetsOp   = exampleOp{"listPets", get("/v1/pets")}
	createPetOp  = exampleOp{"createPet", post("/v1/pets", `{"name":"Rex","categoryId":3}`)}
	getPetOp     = exampleOp{"getPet", get("/v1/pets/1")}
	listOrdersOp = exampleOp{"listOrders", get("/v1/store/orders")}
)

// exampleCases returns, by the name errorExamples gives it, a run for each example: it sends
// the request that produces the example and returns the answer.
func exampleCases() map[string]func(*testing.T) response {
	cases := map[string]func(*testing.T) response{
		"listPets 400 limit":              fresh(get("/v1/pets?limit=0")),
		"listPets 400 status":             fresh(get("/v1/pets?status=lost")),
		"listPets 400 after":              fresh(get("/v1/pets?after=xyz")),
		"createPet 400 nameMissing":       fresh(post("/v1/pets", `{"categoryId":3}`)),
		"createPet 400 categoryIdMissing": fresh(post("/v1/pets", `{"name":"Rex"}`)),
		"createPet 400 malformed":         fresh(post("/v1/pets", `{"name":"Rex",`)),
		"createPet 400 idempotencyKey":    fresh(withHeader(createPetOp.req, "Idempotency-Key", "")),
		"createPet 409 inUse":             keyInUse,
		"createPet 413 tooLarge":          fresh(post("/v1/pets", `{"name":"`+strings.Repeat("a", 1<<20)+`","categoryId":3}`)),
		"createPet 415 textPlain":         fresh(withHeader(createPetOp.req, "Content-Type", "text/plain")),
		"createPet 422 reused":            keyReused,
		"getPet 400 petId":                fresh(get("/v1/pets/abc")),
		"getPet 404 notFound":             fresh(get("/v1/pets/42")),
		"listOrders 400 url":              fresh(get("/v1/store/orders?q=" + strings.Repeat("a", 8200))),
		"listOrders 400 headers":          fresh(withHeaders(listOrdersOp.req, 101)),
		"listOrders 500 internal":         panicking(listOrdersOp.req),
		"listOrders 501 notImplemented":   fresh(listOrdersOp.req),
	}
	for _, op := range []exampleOp{listPetsOp, createPetOp, getPetOp, listOrdersOp} {
		noKey := op.req
		noKey.noAuth = true
		cases[op.id+" 401 missingKey"] = fresh(noKey)
		cases[op.id+" 401 scheme"] = fresh(withHeader(op.req, "Authorization", "Basic cGV0OnN0b3Jl"))
		cases[op.id+" 401 invalidKey"] = fresh(withHeader(op.req, "Authorization", "Bearer "+auth.NewKey(auth.TestPrefix)))
		cases[op.id+" 429 rateLimited"] = refusedUntil(apierr.RateLimited, op.req)
		cases[op.id+" 429 keySuspended"] = refusedUntil(apierr.KeySuspended, op.req)
		cases[op.id+" 503 keyCheck"] = keyUnchecked(op.req)
	}
	for _, op := range []exampleOp{listPetsOp, createPetOp, getPetOp} {
		cases[op.id+" 500 internal"] = databaseClosed(op.req)
	}
	cases["listPets 503 database"] = databaseCut(listPetsOp.req)
	cases["getPet 503 database"] = databaseCut(getPetOp.req)
	// With an Idempotency-Key the claim fails first; without one, the cut insert may have been
	// stored, and the answer says so.
	cases["createPet 503 database"] = databaseCut(withHeader(createPetOp.req, "Idempotency-Key", "cut"))
	addWebhookExampleCases(cases)
	return cases
}

// withHeader returns req with the header name set to value.
func withHeader(req request, name, value string) request {
	req.header = req.header.Clone()
	if req.header == nil {
		req.header = http.Header{}
	}
	req.header.Set(name, value)
	return req
}

// withHeaders returns req with n more header fields.
func withHeaders(req request, n int) request {
	for i := range n {
		req = withHeader(req, "X-Extra-"+strconv.Itoa(i), "x")
	}
	return req
}

// fresh sends req to the service on a fresh database, with a business key.
func fresh(req request) func(*testing.T) response {
	return func(t *testing.T) response { return newTestAPI(t, dbtestSQLite(t)).do(t, req) }
}

// refusedUntil sends req with a free key, the clock 13 seconds before the minute ends, until
// the limiter refuses it with code.
func refusedUntil(code apierr.Code, req request) func(*testing.T) response {
	return func(t *testing.T) response {
		at := time.Date(2026, 1, 1, 0, 0, 47, 0, time.UTC)
		api := newTestAPIClock(t, dbtestSQLite(t), func() time.Time { return at })
		api.key = api.createKey(t, auth.KeySpec{Plan: auth.Free.Name})
		for range 100 {
			resp := api.do(t, req)
			var e apierr.Body
			if json.Unmarshal([]byte(resp.body), &e) == nil && e.Code == code {
				return resp
			}
		}
		t.Fatalf("got no %s answer after 100 requests", code)
		return response{}
	}
}

// keyUnchecked sends req with a key that is not cached while the database is closed.
func keyUnchecked(req request) func(*testing.T) response {
	return func(t *testing.T) response {
		api := newTestAPI(t, dbtestSQLite(t))
		api.key = api.createKey(t, auth.KeySpec{Plan: auth.Pro.Name}) // never sent: not cached
		if err := api.db.Close(); err != nil {
			t.Fatal(err)
		}
		return api.do(t, req)
	}
}

// databaseClosed sends req with a cached key once the database is closed: its statements fail
// with an error that says nothing of a retry.
func databaseClosed(req request) func(*testing.T) response {
	return func(t *testing.T) response {
		api := newTestAPI(t, dbtestSQLite(t))
		api.do(t, listOrdersOp.req) // caches the key
		if err := api.db.Close(); err != nil {
			t.Fatal(err)
		}
		return api.do(t, req)
	}
}

// databaseCut sends req with a cached key once the connection to MySQL is cut.
func databaseCut(req request) func(*testing.T) response {
	return func(t *testing.T) response {
		db, proxy := dbtest.Proxied(t)
		api := newTestAPI(t, db)
		api.do(t, listOrdersOp.req) // caches the key
		proxy.Cut()
		return api.do(t, req)
	}
}

// panicking sends req to a router whose handler panics as it answers: a bug, where no
// dependency fails (listOrders reads no database), which the router's recovery answers.
func panicking(req request) func(*testing.T) response {
	return func(t *testing.T) response {
		cfg, db := app.DefaultConfig(), dbtestSQLite(t)
		deps := newDeps(t, cfg, db, nil)
		deps.Limit = panicOnAnswer{deps.Limit}
		h := rest.NewRouter(deps)
		api := &testAPI{h: h, db: db, cfg: cfg, v: validator(t, h)}
		api.key = api.createKey(t, auth.KeySpec{Plan: auth.Business.Name})
		return api.do(t, req)
	}
}

// panicOnAnswer is the rate limiter, charging as before, whose next handler panics as it
// writes its answer's status: the limiter's headers are set, the answer is not written yet.
type panicOnAnswer struct{ rest.Limiter }

// Middleware runs the limiter with a writer that panics at the first status written.
func (l panicOnAnswer) Middleware(c *gin.Context) {
	c.Writer = &panicAtStatus{ResponseWriter: c.Writer}
	l.Limiter.Middleware(c)
}

// panicAtStatus panics at its first WriteHeader, and writes the ones after it.
type panicAtStatus struct {
	gin.ResponseWriter
	panicked bool
}

// WriteHeader panics the first time.
func (w *panicAtStatus) WriteHeader(code int) {
	if !w.panicked {
		w.panicked = true
		panic("the handler's bug")
	}
	w.ResponseWriter.WriteHeader(code)
}

// keyInUse sends a create with an Idempotency-Key while the first one with that key and body
// is still running: on MySQL, held by a lock on the pets table once its claim is committed.
func keyInUse(t *testing.T) response {
	api := newTestAPI(t, dbtest.New(t, migrations.MySQL))
	sqlDB, err := api.db.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	unlock := lockTable(t, sqlDB, "pets")
	req := withHeader(createPetOp.req, "Idempotency-Key", "first")
	var first response
	done := make(chan struct{})
	go func() { defer close(done); first = api.do(t, req) }()
	release := sync.OnceFunc(func() { unlock(); <-done })
	defer release()
	for deadline := time.Now().Add(5 * time.Second); !claimed(t, sqlDB); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first request made no claim within 5s")
		}
	}
	resp := api.do(t, req)
	release()
	if first.status != http.StatusCreated {
		t.Errorf("the first request: got %d %s; want 201", first.status, first.body)
	}
	return resp
}

// lockTable write-locks table on a connection of db of its own, and returns what unlocks it.
func lockTable(t *testing.T, db *sql.DB, table string) (unlock func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "LOCK TABLES "+table+" WRITE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := conn.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
			t.Error(err)
		}
		_ = conn.Close()
	}
}

// claimed reports whether an Idempotency-Key has a record in db.
func claimed(t *testing.T, db *sql.DB) bool {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM idempotency_keys").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// keyReused sends a create with an Idempotency-Key already used with another body.
func keyReused(t *testing.T) response {
	api := newTestAPI(t, dbtestSQLite(t))
	if resp := api.do(t, withHeader(createPetOp.req, "Idempotency-Key", "k")); resp.status != http.StatusCreated {
		t.Fatalf("first create: got %d %s; want 201", resp.status, resp.body)
	}
	return api.do(t, withHeader(post("/v1/pets", `{"name":"Max","categoryId":3}`), "Idempotency-Key", "k"))
}
