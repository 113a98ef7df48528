package graph_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"petstore/graph"
	"petstore/store"
	"petstore/store/pets"
	"petstore/testkit/dbtest"
)

const (
	acceptGraphQL = "application/graphql-response+json"
	acceptJSON    = "application/json"
)

// server is the real GraphQL handler over a fresh SQLite database that counts its statements.
type server struct {
	h          http.Handler
	statements *atomic.Int64
}

// newServer returns the handler of opts over a fresh database.
func newServer(t testing.TB, opts graph.Options) *server {
	t.Helper()
	db := dbtest.New(t, "sqlite")
	s := &server{statements: new(atomic.Int64)}
	pool := &countingPool{ConnPool: db.Statement.ConnPool, n: s.statements}
	db.ConnPool, db.Statement.ConnPool = pool, pool
	s.h = graph.NewHandler(graph.NewResolver(pets.New(db, store.DefaultTimeout, nil), graph.ResolverOptions{}), opts)
	return s
}

// countingPool counts the statements sent through a GORM connection pool, however they were
// built: the resolvers send theirs as plain SQL, past GORM's callbacks.
type countingPool struct {
	gorm.ConnPool
	n *atomic.Int64
}

func (p *countingPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	p.n.Add(1)
	return p.ConnPool.ExecContext(ctx, query, args...)
}

func (p *countingPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	p.n.Add(1)
	return p.ConnPool.QueryContext(ctx, query, args...)
}

func (p *countingPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	p.n.Add(1)
	return p.ConnPool.QueryRowContext(ctx, query, args...)
}

// GetDBConn gives GORM the pool's *sql.DB, as the wrapped pool does.
func (p *countingPool) GetDBConn() (*sql.DB, error) {
	return p.ConnPool.(interface{ GetDBConn() (*sql.DB, error) }).GetDBConn()
}

// request is one HTTP request to the handler.
type request struct {
	method, target, body string
	header               map[string]string // Content-Type defaults to application/json on POST
}

// post returns a POST of the GraphQL request {"query": query}, accepting accept.
func post(query, accept string) request {
	return request{method: http.MethodPost, target: "/", body: marshal(map[string]any{"query": query}), header: map[string]string{"Accept": accept}}
}

// marshal returns the JSON of v as a client would send it, without escaping <, > and & (so a
// test's document keeps the size it was given).
func marshal(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return b.String()
}

// answer is a response, its body decoded.
type answer struct {
	status  int
	header  http.Header
	body    string
	hasData bool
	data    json.RawMessage
	errors  []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	}
}

// code returns the code of the first error, or "".
func (a answer) code() string {
	if len(a.errors) == 0 {
		return ""
	}
	code, _ := a.errors[0].Extensions["code"].(string)
	return code
}

func (s *server) do(t testing.TB, req request) answer {
	t.Helper()
	r := httptest.NewRequest(req.method, req.target, strings.NewReader(req.body))
	if req.method == http.MethodPost {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.header {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, r)
	a := answer{status: w.Code, header: w.Header(), body: w.Body.String()}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &fields); err != nil {
		t.Fatalf("%s %s: body %q is not a JSON object: %v", req.method, req.target, a.body, err)
	}
	a.data, a.hasData = fields["data"]
	if err := json.Unmarshal(fields["errors"], &a.errors); fields["errors"] != nil && err != nil {
		t.Fatalf("errors of %q: %v", a.body, err)
	}
	return a
}

// checkRefused checks that a is a request error with status and code whose first message
// contains msg, and that no statement ran.
func (s *server) checkRefused(t *testing.T, a answer, status int, code, msg string) {
	t.Helper()
	if a.status != status || a.code() != code || a.hasData {
		t.Errorf("got %d, code %q, data entry %v (%s); want %d, code %s, no data entry", a.status, a.code(), a.hasData, trim(a.body), status, code)
	}
	if len(a.errors) == 0 || !strings.Contains(a.errors[0].Message, msg) {
		t.Errorf("got body %s; want a message containing %q", trim(a.body), msg)
	}
	if n := s.statements.Load(); n != 0 {
		t.Errorf("got %d SQL statements; want none", n)
	}
}

func trim(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

func TestContentNegotiation(t *testing.T) {
	for _, tc := range []struct {
		accept, want string
	}{
		{acceptGraphQL, acceptGraphQL},
		{acceptJSON, acceptJSON},
		{"*/*", acceptJSON},
		{"", acceptJSON},
		{"application/*", acceptJSON},
		{"application/graphql-response+json, application/json;q=0.9", acceptGraphQL},
		{"application/json;q=0.5, application/graphql-response+json", acceptGraphQL},
		{"application/graphql-response+json;q=0, */*", acceptJSON},
		{"text/html", acceptJSON},
	} {
		t.Run(tc.accept, func(t *testing.T) {
			s := newServer(t, graph.DefaultOptions())
			a := s.do(t, post("{ pets { id } }", tc.accept))
			if ct := a.header.Get("Content-Type"); a.status != http.StatusOK || ct != tc.want+"; charset=utf-8" || string(a.data) != `{"pets":[]}` {
				t.Errorf("got %d %q %s; want 200 %q with the pets", a.status, ct, a.body, tc.want)
			}
			if vary := a.header.Get("Vary"); vary != "Accept" {
				t.Errorf("got Vary %q; want Accept", vary)
			}
		})
	}
}

// TestRequestErrors checks the answers to requests that do not run, as each media type.
func TestRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		req        request
		wantStatus map[string]int // by media type
		code, msg  string
	}{
		{"parse error", post("{", ""), statuses(400, 200), "INVALID_REQUEST", "Expected Name"},
		{"unknown field", post("{ owners { id } }", ""), statuses(400, 200), "INVALID_REQUEST", `Cannot query field "owners"`},
		{"bad variable", request{method: http.MethodPost, target: "/", body: `{"query":"query($n: Int!) { pets(limit: $n) { id } }","variables":{"n":"x"}}`}, statuses(400, 200), "INVALID_REQUEST", "cannot use string as Int"},
		{"no query", request{method: http.MethodPost, target: "/", body: `{"qeury":"{ pets { id } }"}`}, statuses(400, 400), "INVALID_REQUEST", "the request has no query"},
		{"not JSON", request{method: http.MethodPost, target: "/", body: `{"query": "{ pets`}, statuses(400, 400), "INVALID_REQUEST", "the request body is not valid JSON"},
		{"query not a string", request{method: http.MethodPost, target: "/", body: `{"query": 7}`}, statuses(400, 400), "INVALID_REQUEST", "query must be a JSON string; got a JSON number"},
		{"batch", request{method: http.MethodPost, target: "/", body: ` [{"query":"{ pets { id } }"},{"query":"{ pets { id } }"}]`}, statuses(400, 400), "INVALID_REQUEST", "batched requests"},
		{"not application/json", request{method: http.MethodPost, target: "/", body: `{"query":"{ pets { id } }"}`, header: map[string]string{"Content-Type": "text/plain"}}, statuses(415, 415), "UNSUPPORTED_MEDIA_TYPE", "Content-Type: application/json"},
		{"GET mutation", request{method: http.MethodGet, target: "/?query=" + url.QueryEscape(`mutation { createPet(input: {name: "Rex", categoryId: 1}) { id } }`)}, statuses(405, 405), "METHOD_NOT_ALLOWED", "GET runs queries only"},
		{"GET bad variables", request{method: http.MethodGet, target: "/?query=" + url.QueryEscape("{ pets { id } }") + "&variables=%7B"}, statuses(400, 400), "INVALID_REQUEST", "variables"},
	} {
		for media, status := range tc.wantStatus {
			t.Run(tc.name+"/"+media, func(t *testing.T) {
				s := newServer(t, graph.DefaultOptions())
				req := tc.req
				req.header = map[string]string{}
				for k, v := range tc.req.header {
					req.header[k] = v
				}
				req.header["Accept"] = media
				a := s.do(t, req)
				s.checkRefused(t, a, status, tc.code, tc.msg)
				if ct := a.header.Get("Content-Type"); ct != media+"; charset=utf-8" {
					t.Errorf("got Content-Type %q; want %s", ct, media)
				}
				if allow := a.header.Get("Allow"); status == http.StatusMethodNotAllowed && allow != http.MethodPost {
					t.Errorf("got Allow %q; want POST", allow)
				}
			})
		}
	}
}

func statuses(graphQLResponse, json int) map[string]int {
	return map[string]int{acceptGraphQL: graphQLResponse, acceptJSON: json}
}

func TestGetQuery(t *testing.T) {
	s := newServer(t, graph.DefaultOptions())
	create := s.do(t, post(`mutation { createPet(input: {name: "Rex", categoryId: 3}) { id } }`, ""))
	if create.status != http.StatusOK || len(create.errors) != 0 {
		t.Fatalf("createPet: got %d %s", create.status, create.body)
	}
	q := url.Values{"query": {"query($s: PetStatus) { pets(status: $s) { id name } }"}, "variables": {`{"s": null}`}}
	a := s.do(t, request{method: http.MethodGet, target: "/?" + q.Encode()})
	if want := `{"pets":[{"id":"1","name":"Rex"}]}`; a.status != http.StatusOK || string(a.data) != want {
		t.Errorf("got %d %s; want 200 with data %s", a.status, a.body, want)
	}
	if s.statements.Load() == 0 {
		t.Error("got no SQL statement counted; the counter of the refusal tests does not work")
	}
}
