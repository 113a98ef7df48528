package graph_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"petstore/graph"
	"petstore/graph/guard"
	"petstore/internal/testkit/dbtest"
	"petstore/store"
	"petstore/store/pets"
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
	s.h = graph.NewHandler(graph.NewResolver(pets.New(db, store.DefaultTimeout), graph.ResolverOptions{}), opts)
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

// aliases returns an operation selecting field under n aliases.
func aliases(n int, field string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, " a%d: %s", i, field)
	}
	return b.String() + " }"
}

// fragmentDoubling returns an operation whose n fragments each spread the next twice: a
// selection of 2^n fields when every spread is followed.
func fragmentDoubling(n int) string {
	var b strings.Builder
	b.WriteString("{ ...F0 }\n")
	for i := range n {
		fmt.Fprintf(&b, "fragment F%d on Query { ...F%d ...F%d }\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "fragment F%d on Query { __typename }\n", n)
	return b.String()
}

func TestCostLimitsRefuse(t *testing.T) {
	pet := "pets(limit: 100) { id name categoryId status }" // costs 100*4+1
	for _, tc := range []struct {
		name, query, msg string
	}{
		{"alias bomb", aliases(10, pet), "operation has complexity 4010, which exceeds the limit of 2000"},
		{"alias bomb over the selections", aliases(500, "pets(limit: 100) { id }"), "the document has more than 200 selections"},
		{"five full lists", aliases(5, pet), "operation has complexity 2005, which exceeds the limit of 2000"},
		{"three full connection pages", aliases(3, "petsConnection(first: 100) { edges { cursor node { id name categoryId status } } pageInfo { hasNextPage endCursor } }"), "operation has complexity 3003"},
		{"fragments spread twice, 40 deep", fragmentDoubling(40), "operation has complexity of at least 1099511627776, which exceeds the limit of 2000"},
		{"deep introspection", `{ __schema { directives { args { type { fields { args { type { fields { args { type { name } } } } } } } } } } }`, "the operation nests fields 11 levels deep; the limit is 10"},
		{"deep introspection through a fragment", `{ __schema { directives { ...D } } } fragment D on __Directive { args { type { ofType { fields { args { type { fields { args { type { ofType { name } } } } } } } } } } }`, "the operation nests fields 11 levels deep"},
		{"cyclic introspection", `{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }`, "introspection query nests fields"},
		{"__schema twice", `{ __schema { queryType { name } } again: __schema { queryType { name } } }`, "the operation selects __schema 2 times; at most 1 is allowed"},
		{"__schema bomb", aliases(20, "__schema { types { fields { type { fields { name } } } } }"), "the operation selects __schema 20 times"},
		{"too many tokens", "{" + strings.Repeat(" __typename", graph.DefaultTokenLimit) + " }", "the query is too long: it exceeded token limit of 10000"},
	} {
		for _, accept := range []string{acceptGraphQL, acceptJSON} {
			t.Run(tc.name+"/"+accept, func(t *testing.T) {
				s := newServer(t, graph.DefaultOptions())
				s.checkRefused(t, s.do(t, post(tc.query, accept)), http.StatusBadRequest, "INVALID_REQUEST", tc.msg)
			})
		}
	}
}

func TestCostLimitsAdmit(t *testing.T) {
	introspection, err := os.ReadFile("testdata/introspection.graphql") // graphql-js getIntrospectionQuery, every option on
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, query string
	}{
		{"four full lists", aliases(4, "pets(limit: 100) { id name categoryId status }")},
		{"a full connection page", "{ petsConnection(first: 100) { edges { cursor node { id name categoryId status } } pageInfo { hasNextPage endCursor } } }"},
		{"GraphiQL's introspection query", string(introspection)},
		{"pet marked deprecated", `{ __type(name: "Query") { fields(includeDeprecated: true) { name isDeprecated deprecationReason } } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, graph.DefaultOptions())
			a := s.do(t, post(tc.query, acceptGraphQL))
			if a.status != http.StatusOK || len(a.errors) != 0 || !a.hasData {
				t.Errorf("got %d %s; want 200 with data and no error", a.status, trim(a.body))
			}
		})
	}
}

func TestCostLimitsAreOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  graph.Options
		query string
		msg   string
	}{
		{"complexity", graph.Options{ComplexityLimit: 100}, "{ pets(limit: 25) { id name categoryId status } }", "complexity 101, which exceeds the limit of 100"},
		{"complexity of the default limit", graph.Options{ComplexityLimit: 40}, "{ pets { id name } }", "complexity 41"},
		{"depth", graph.Options{DepthLimit: 2}, "{ petsConnection { edges { cursor } } }", "nests fields 3 levels deep; the limit is 2"},
		{"tokens", graph.Options{TokenLimit: 5}, "{ pets { id name } }", "exceeded token limit of 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.opts)
			s.checkRefused(t, s.do(t, post(tc.query, acceptJSON)), http.StatusBadRequest, "INVALID_REQUEST", tc.msg)
		})
	}
	t.Run("off", func(t *testing.T) {
		s := newServer(t, graph.Options{ComplexityLimit: -1, DepthLimit: -1, TokenLimit: -1})
		if a := s.do(t, post(aliases(10, "pets(limit: 100) { id name categoryId status }"), acceptJSON)); a.status != http.StatusOK || len(a.errors) != 0 {
			t.Errorf("got %d %s; want 200 without errors", a.status, trim(a.body))
		}
	})
}

// TestCostLimitsRemembered checks that an operation that passed the limits once is checked
// alike when sent again, and that the same text with other variables is checked anew.
func TestCostLimitsRemembered(t *testing.T) {
	s := newServer(t, graph.Options{ComplexityLimit: 100})
	for range 2 {
		if a := s.do(t, post("{ pets(limit: 20) { id name } }", acceptJSON)); a.status != http.StatusOK || len(a.errors) != 0 {
			t.Fatalf("got %d %s; want 200 without errors", a.status, trim(a.body))
		}
		s.statements.Store(0)
		s.checkRefused(t, s.do(t, post("{ pets(limit: 25) { id name categoryId status } }", acceptJSON)), http.StatusBadRequest, "INVALID_REQUEST", "complexity 101")
	}
	const query = "query($n: Int) { pets(limit: $n) { id name categoryId status } }"
	withLimit := func(n int) request {
		body := marshal(map[string]any{"query": query, "variables": map[string]any{"n": n}})
		return request{method: http.MethodPost, target: "/", body: body, header: map[string]string{"Accept": acceptJSON}}
	}
	if a := s.do(t, withLimit(20)); a.status != http.StatusOK || len(a.errors) != 0 {
		t.Fatalf("got %d %s; want 200 without errors", a.status, trim(a.body))
	}
	s.statements.Store(0)
	s.checkRefused(t, s.do(t, withLimit(25)), http.StatusBadRequest, "INVALID_REQUEST", "complexity 101")
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

// persisted returns a GraphQL request body of query (omitted when empty) with its APQ hash.
func persisted(query, hash string) string {
	body := map[string]any{"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hash}}}
	if query != "" {
		body["query"] = query
	}
	b, _ := json.Marshal(body)
	return string(b)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// checkAPQRoundTrip runs the round trip of automatic persisted queries: the hash alone (unknown:
// PERSISTED_QUERY_NOT_FOUND with 200, as Apollo's clients expect), the query with its hash
// (runs), the hash alone again (runs), on first, second and third in turn.
func checkAPQRoundTrip(t *testing.T, first, second, third *server) {
	t.Helper()
	query := `{ pets(limit: 5) { id name } }`
	hash := sha256Hex(query)
	for _, accept := range []string{acceptGraphQL, acceptJSON} {
		a := first.do(t, request{method: http.MethodPost, target: "/", body: persisted("", hash), header: map[string]string{"Accept": accept}})
		if a.status != http.StatusOK || a.code() != "PERSISTED_QUERY_NOT_FOUND" || a.hasData || a.errors[0].Message != "PersistedQueryNotFound" {
			t.Errorf("hash alone, %s: got %d %s; want 200 PersistedQueryNotFound with code PERSISTED_QUERY_NOT_FOUND", accept, a.status, a.body)
		}
	}
	a := second.do(t, request{method: http.MethodPost, target: "/", body: persisted(query, hash)})
	if a.status != http.StatusOK || string(a.data) != `{"pets":[]}` {
		t.Errorf("query and hash: got %d %s; want the pets", a.status, a.body)
	}
	a = third.do(t, request{method: http.MethodPost, target: "/", body: persisted("", hash)})
	if a.status != http.StatusOK || string(a.data) != `{"pets":[]}` {
		t.Errorf("hash alone after the query: got %d %s; want the pets", a.status, a.body)
	}
	ext := `{"persistedQuery":{"version":1,"sha256Hash":"` + hash + `"}}`
	a = third.do(t, request{method: http.MethodGet, target: "/?extensions=" + url.QueryEscape(ext)})
	if a.status != http.StatusOK || string(a.data) != `{"pets":[]}` {
		t.Errorf("GET with the hash alone: got %d %s; want the pets", a.status, a.body)
	}
	a = third.do(t, request{method: http.MethodPost, target: "/", body: persisted("{ pets { id } }", hash)})
	if a.status != http.StatusOK || a.code() != "INVALID_REQUEST" || a.hasData {
		t.Errorf("query with another's hash: got %d %s; want INVALID_REQUEST", a.status, a.body)
	}
}

func TestAPQInProcess(t *testing.T) {
	s := newServer(t, graph.DefaultOptions())
	checkAPQRoundTrip(t, s, s, s)
}

// TestAPQLongQueryNotKept checks that a query over MaxPersistedQueryBytes runs but is not kept.
func TestAPQLongQueryNotKept(t *testing.T) {
	s := newServer(t, graph.DefaultOptions())
	query := "{ pets { id } }" + strings.Repeat(" ", guard.MaxPersistedQueryBytes)
	hash := sha256Hex(query)
	if a := s.do(t, request{method: http.MethodPost, target: "/", body: persisted(query, hash)}); string(a.data) != `{"pets":[]}` {
		t.Errorf("long query with its hash: got %d %s; want the pets", a.status, trim(a.body))
	}
	if a := s.do(t, request{method: http.MethodPost, target: "/", body: persisted("", hash)}); a.code() != "PERSISTED_QUERY_NOT_FOUND" {
		t.Errorf("its hash alone: got %d %s; want PERSISTED_QUERY_NOT_FOUND", a.status, trim(a.body))
	}
}
