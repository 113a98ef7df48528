package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/apierr"
	"petstore/app"
	"petstore/auth"
	"petstore/config"
	"petstore/ratelimit"
	"petstore/rest"
	"petstore/store"
	"petstore/testkit/apitest"
	"petstore/testkit/dbtest"
	"petstore/tracing"
)

// testAPI is the real handler of the service over a fresh database, with a business-plan key,
// and a validator that checks every response against the served OpenAPI document.
type testAPI struct {
	h   http.Handler
	db  *store.DB
	cfg config.Config
	key string
	v   *apitest.Validator
}

// forEachStore runs fn against a fresh testAPI on each store.
func forEachStore(t *testing.T, fn func(t *testing.T, api *testAPI)) {
	t.Helper()
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) { fn(t, newTestAPI(t, db)) })
}

func newTestAPI(t testing.TB, db *store.DB) *testAPI {
	t.Helper()
	return newTestAPIConfig(t, db, app.DefaultConfig())
}

// newTestAPIConfig is newTestAPI with the settings of cfg.
func newTestAPIConfig(t testing.TB, db *store.DB, cfg config.Config) *testAPI {
	t.Helper()
	h, err := newHandler(cfg, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	api := &testAPI{h: h, db: db, cfg: cfg, v: validator(t, h)}
	api.key = api.createKey(t, auth.KeySpec{Plan: "business"})
	return api
}

// newTestAPIClock is newTestAPI, without its key, with the rate limiter in process reading
// time from clock.
func newTestAPIClock(t *testing.T, db *store.DB, clock func() time.Time) *testAPI {
	t.Helper()
	cfg := app.DefaultConfig()
	deps := newDeps(t, cfg, db, nil)
	var err error
	if deps.Limit, err = ratelimit.New(ratelimit.DefaultConfig(), ratelimit.NewMemoryCounters(clock)); err != nil {
		t.Fatal(err)
	}
	h := rest.NewRouter(deps)
	return &testAPI{h: h, db: db, cfg: cfg, v: validator(t, h)}
}

// newHandler returns the service's whole HTTP handler (app.New, with opts) without tracing.
func newHandler(cfg config.Config, db *store.DB, rdb redis.UniversalClient, opts ...app.Option) (http.Handler, error) {
	return newTracedHandler(cfg, db, rdb, nil, opts...)
}

// newTracedHandler is newHandler traced by tr.
func newTracedHandler(cfg config.Config, db *store.DB, rdb redis.UniversalClient, tr *tracing.Tracer, opts ...app.Option) (http.Handler, error) {
	svc, err := app.New(cfg, db, rdb, tr, opts...)
	if err != nil {
		return nil, err
	}
	return svc.Handler, nil
}

// newDeps returns what the router of the service on db (and rdb when not nil) serves, for
// tests and benchmarks that serve a router with one part replaced.
func newDeps(t testing.TB, cfg config.Config, db *store.DB, rdb redis.UniversalClient) rest.Deps {
	t.Helper()
	svc, err := app.New(cfg, db, rdb, nil)
	if err != nil {
		t.Fatal(err)
	}
	return svc.Deps
}

// validator returns a validator of answers against the OpenAPI document that h serves.
func validator(t testing.TB, h http.Handler) *apitest.Validator {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: got %d; want 200", rec.Code)
	}
	return apitest.NewValidator(t, rec.Body.Bytes())
}

func (api *testAPI) createKey(t testing.TB, spec auth.KeySpec) string {
	t.Helper()
	key, _, err := auth.CreateKey(context.Background(), api.db.DB, auth.PrefixFor(api.cfg.Env), spec)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// request describes one HTTP exchange; by default it carries the API key and, with a body,
// Content-Type: application/json.
type request struct {
	method, path, body string
	header             http.Header // replaces the defaults for the headers it names
	noAuth             bool
	remoteAddr         string // the client's address; httptest's 192.0.2.1:1234 when empty
}

// response is what the service answered.
type response struct {
	status int
	header http.Header
	body   string
}

// do sends req through the real handler and checks the answer against the OpenAPI document.
func (api *testAPI) do(t *testing.T, req request) response {
	t.Helper()
	var body io.Reader
	if req.body != "" {
		body = strings.NewReader(req.body)
	}
	r := httptest.NewRequest(req.method, req.path, body)
	if req.body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	if !req.noAuth {
		r.Header.Set("Authorization", "Bearer "+api.key)
	}
	if req.remoteAddr != "" {
		r.RemoteAddr = req.remoteAddr
	}
	for k, vs := range req.header {
		r.Header[k] = vs
	}
	rec := httptest.NewRecorder()
	api.h.ServeHTTP(rec, r)
	api.v.Check(t, r, rec.Code, rec.Header(), rec.Body.Bytes())
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
}

func get(path string) request { return request{method: http.MethodGet, path: path} }

func post(path, body string) request { return request{method: http.MethodPost, path: path, body: body} }

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

// awayFromMinuteEdge waits out the current minute when less than 10 s of it are left, so that
// a test counting requests against a key's or an address's budget stays within one minute
// window (the limiter's windows are calendar minutes, of the process clock or Redis TIME).
func awayFromMinuteEdge(t testing.TB) {
	t.Helper()
	now := time.Now()
	if left := now.Truncate(time.Minute).Add(time.Minute).Sub(now); left < 10*time.Second {
		time.Sleep(left + 50*time.Millisecond)
	}
}

// dbtestSQLite returns a fresh SQLite database, for tests that do not depend on the store.
func dbtestSQLite(t *testing.T) *store.DB { return dbtest.New(t, "sqlite") }
