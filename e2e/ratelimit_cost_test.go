package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/app"
	"petstore/auth"
	"petstore/testkit/dbtest"
)

// tenAliases is the query: ten root fields, each a full page of pets.
var tenAliases = "{" + numberedFields(10, "pets(limit: 100) { id }") + " }"

// numberedFields returns n aliases, a0 to a(n-1), of field.
func numberedFields(n int, field string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, " a%d: %s", i, field)
	}
	return b.String()
}

// forEachCounters runs fn against the service on SQLite with its rate limiter in process, and
// on MySQL with its rate limiter in Redis.
func forEachCounters(t *testing.T, fn func(t *testing.T, api *testAPI)) {
	for _, tc := range []struct{ name, dialect string }{{"sqlite/in process", "sqlite"}, {"mysql/redis", "mysql"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, cfg := dbtest.New(t, tc.dialect), app.DefaultConfig()
			var rdb *redis.Client
			if tc.dialect == "mysql" {
				rdb, cfg.RedisKeyPrefix = dbtest.Redis(t)
			}
			h := newInstance(t, cfg, db, rdb)
			fn(t, &testAPI{h: h, db: db, cfg: cfg, v: validator(t, h)})
		})
	}
}

// gqlPost returns the POST of query with variables (nil for none) and extensions (nil for none).
func gqlPost(query string, variables, extensions map[string]any) request {
	body := map[string]any{"query": query}
	if query == "" {
		delete(body, "query")
	}
	if variables != nil {
		body["variables"] = variables
	}
	if extensions != nil {
		body["extensions"] = extensions
	}
	b, _ := json.Marshal(body)
	return post("/v1/graphql", string(b))
}

// gqlGet returns the GET of the query parameters params.
func gqlGet(params url.Values) request { return get("/v1/graphql?" + params.Encode()) }

// persisted returns the extensions naming query as a persisted query.
func persisted(query string) map[string]any {
	sum := sha256.Sum256([]byte(query))
	return map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
}

// costOf returns extensions.cost of a GraphQL answer, -1 when it has none.
func costOf(t *testing.T, resp response) int {
	t.Helper()
	var body struct {
		Extensions struct{ Cost *int }
	}
	if err := json.Unmarshal([]byte(resp.body), &body); err != nil {
		t.Fatalf("answer %q is not JSON: %v", resp.body, err)
	}
	if body.Extensions.Cost == nil {
		return -1
	}
	return *body.Extensions.Cost
}

// remainingOf returns X-RateLimit-Remaining of resp.
func remainingOf(t *testing.T, resp response) int {
	t.Helper()
	n, err := strconv.Atoi(resp.header.Get("X-RateLimit-Remaining"))
	if err != nil {
		t.Fatalf("X-RateLimit-Remaining: %q", resp.header.Get("X-RateLimit-Remaining"))
	}
	return n
}

// TestGraphQLChargedByCost: a GraphQL operation costs what it returns, the whole cost charged
// at once: X-RateLimit-Remaining drops by it and extensions.cost says it, over POST, GET and
// persisted queries, on both stores with both counters.
func TestGraphQLChargedByCost(t *testing.T) {
	fragments := `query { ...A ...B p: pets { id } }
		fragment A on Query { p: pets { id } q: pet(id: 1) { id } }
		fragment B on Query { ...A q: pet(id: 1) { id } __typename r: pets @skip(if: true) { id } }`
	// Persisted queries live in Redis as long as its APQ TTL: a query no run sent before.
	apq := "{" + numberedFields(3, "petsConnection(first: 100) { edges { cursor } }") + " } # " + strconv.FormatInt(time.Now().UnixNano(), 10)
	apqExtensions, _ := json.Marshal(persisted(apq))
	steps := []struct {
		name   string
		req    request
		status int
		cost   int // -1: not a GraphQL answer
	}{
		{"REST", get("/v1/pets"), http.StatusOK, -1},
		{"ten aliases", gqlPost(tenAliases, nil, nil), http.StatusOK, 10},
		{"fragments, by response name", gqlPost(fragments, nil, nil), http.StatusOK, 2},
		{"introspection only", gqlPost(`{ __schema { queryType { name } } __typename }`, nil, nil), http.StatusOK, 1},
		{"mutation", gqlPost(`mutation { createPet(input: {name: "Rex", categoryId: 1}) { id } }`, nil, nil), http.StatusOK, 1},
		{"a size from a variable", gqlPost(`query($n: Int) { pets(limit: $n) { id } b: pets(limit: $n) { id } }`, map[string]any{"n": 100}, nil), http.StatusOK, 2},
		{"a size out of range", gqlPost(`query($n: Int) { pets(limit: $n) { id } }`, map[string]any{"n": 100000}, nil), http.StatusOK, 1},
		{"GET", gqlGet(url.Values{"query": {"{ a: pets { id } b: pets { id } }"}}), http.StatusOK, 2},
		{"unknown persisted query", gqlPost("", nil, persisted(apq)), http.StatusOK, 1},
		{"persisted with its query", gqlPost(apq, nil, persisted(apq)), http.StatusOK, 3},
		{"persisted, by hash over GET", gqlGet(url.Values{"extensions": {string(apqExtensions)}}), http.StatusOK, 3},
		{"does not parse", gqlPost("{ pets {", nil, nil), http.StatusOK, 1},
		{"no GraphQL request", post("/v1/graphql", `{"query": 7}`), http.StatusBadRequest, 1},
		{"not JSON", post("/v1/graphql", `{`), http.StatusBadRequest, 1},
		{"not application/json", request{method: http.MethodPost, path: "/v1/graphql", body: "{}", header: http.Header{"Content-Type": {"text/plain"}}},
			http.StatusUnsupportedMediaType, -1},
	}
	forEachCounters(t, func(t *testing.T, api *testAPI) {
		api.key = api.createKey(t, auth.KeySpec{Plan: "enterprise", PerMinute: 100, PerDay: 1000})
		awayFromMinuteEdge(t)
		left := 100
		for _, st := range steps {
			resp := api.do(t, st.req)
			if resp.status != st.status {
				t.Fatalf("%s: got %d %s; want %d", st.name, resp.status, resp.body, st.status)
			}
			charged := max(st.cost, 1)
			if got := remainingOf(t, resp); got != left-charged {
				t.Errorf("%s: X-RateLimit-Remaining %d; want %d (%d charged)", st.name, got, left-charged, charged)
			}
			left -= charged
			if st.cost > 0 && costOf(t, resp) != st.cost {
				t.Errorf("%s: extensions.cost of %s; want %d", st.name, resp.body, st.cost)
			}
		}
	})
}

// TestGraphQLCostOverWhatRemains: an operation costing more than what remains gets 429
// rate_limited with Retry-After and charges nothing; one costing more than a window's whole
// limit, which no wait would admit, gets INVALID_REQUEST and costs one request.
func TestGraphQLCostOverWhatRemains(t *testing.T) {
	forEachCounters(t, func(t *testing.T, api *testAPI) {
		api.key = api.createKey(t, auth.KeySpec{Plan: "enterprise", PerMinute: 12, PerDay: 1000})
		awayFromMinuteEdge(t)
		if resp := api.do(t, gqlPost(tenAliases, nil, nil)); resp.status != http.StatusOK || remainingOf(t, resp) != 2 {
			t.Fatalf("first: got %d with %q left; want 200 with 2", resp.status, resp.header.Get("X-RateLimit-Remaining"))
		}
		resp := api.do(t, gqlPost(tenAliases, nil, nil))
		checkError(t, resp, http.StatusTooManyRequests, "rate_limited", "costs 10 and 2 are left")
		if secs, err := strconv.Atoi(resp.header.Get("Retry-After")); err != nil || secs < 1 || remainingOf(t, resp) != 2 {
			t.Errorf("429: Retry-After %q, %d left; want whole seconds and 2 left (nothing charged)", resp.header.Get("Retry-After"), remainingOf(t, resp))
		}
		checkError(t, api.do(t, gqlGet(url.Values{"query": {tenAliases}})), http.StatusTooManyRequests, "rate_limited", "costs 10")
		if resp := api.do(t, get("/v1/pets")); remainingOf(t, resp) != 1 {
			t.Errorf("REST after the refusals: %d left; want 1: nothing charged for them", remainingOf(t, resp))
		}

		api.key = api.createKey(t, auth.KeySpec{Plan: "enterprise", PerMinute: 4, PerDay: 1000})
		resp = api.do(t, gqlPost(tenAliases, nil, nil))
		if resp.status != http.StatusBadRequest || !strings.Contains(resp.body, "INVALID_REQUEST") || !strings.Contains(resp.body, "4 per minute") ||
			remainingOf(t, resp) != 3 || costOf(t, resp) != 1 {
			t.Errorf("over the whole limit: got %d %s, %q left; want 400 INVALID_REQUEST naming the limit, charged 1", resp.status, resp.body, resp.header.Get("X-RateLimit-Remaining"))
		}
	})
}

// TestLiveOperationsChargedByCost: an operation on a WebSocket is charged its cost at once, its
// next message carries extensions.cost, and one costing more than remains gets RATE_LIMITED,
// charging nothing; a query over SSE costs the same, the stream's request included; on both
// stores with both counters.
func TestLiveOperationsChargedByCost(t *testing.T) {
	for _, dialect := range []string{"sqlite", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			db, cfg := dbtest.New(t, dialect), app.DefaultConfig()
			var rdb redis.UniversalClient
			if dialect == "mysql" {
				var c *redis.Client
				c, cfg.RedisKeyPrefix = dbtest.Redis(t)
				rdb = c
			}
			s := newLiveServer(t, db, rdb, cfg, "free")
			key, _, err := auth.CreateKey(context.Background(), db.DB, auth.PrefixFor(cfg.Env), auth.KeySpec{Plan: "enterprise", PerMinute: 30, PerDay: 1000})
			if err != nil {
				t.Fatal(err)
			}
			awayFromMinuteEdge(t)
			_, before, _ := s.remaining(t, key)
			w := s.connect(t, key) // one request
			query, _ := json.Marshal(map[string]any{"query": tenAliases})
			for _, id := range []string{"a", "b"} { // ten each
				w.send(wsMsg{Type: "subscribe", ID: id, Payload: query})
				if m := w.read(); m.Type != "next" || !strings.Contains(string(m.Payload), `"extensions":{"cost":10}`) {
					t.Fatalf("operation %s: got %s %s; want next with extensions.cost 10", id, m.Type, m.Payload)
				}
				if m := w.read(); m.Type != "complete" {
					t.Fatalf("operation %s: got %s; want complete", id, m.Type)
				}
			}
			w.send(wsMsg{Type: "subscribe", ID: "c", Payload: query}) // 10 > 8 left: refused, uncharged
			if m := w.read(); m.Type != "error" || !strings.Contains(string(m.Payload), "RATE_LIMITED") {
				t.Fatalf("over what remains: got %s %s; want an error with RATE_LIMITED", m.Type, m.Payload)
			}
			if m := w.read(); m.Type != "complete" {
				t.Fatalf("after the refusal: got %s; want complete", m.Type)
			}
			w.subscribe("d", "") // one
			s.waitActive(t, 1)
			s.createPet(t, key, "Rex", "") // one, over REST
			if m := w.read(); m.Type != "next" || strings.Contains(string(m.Payload), "extensions") {
				t.Fatalf("a subscription's event: got %s %s; want next without extensions", m.Type, m.Payload)
			}

			body, _ := json.Marshal(map[string]any{"query": "{" + numberedFields(5, "pets { id }") + " }"})
			req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/graphql", bytes.NewReader(body))
			req.Header = http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if e := recvEvent(t, sseEvents(resp.Body)); !strings.HasPrefix(e, "next ") || !strings.Contains(e, `"extensions":{"cost":5}`) {
				t.Fatalf("SSE: got %q; want next with extensions.cost 5", e)
			}
			_, after, _ := s.remaining(t, key)
			if want := 1 + 10 + 10 + 1 + 1 + 5 + 1; before-after != want { // and this check
				t.Errorf("budget %d -> %d; want %d spent", before, after, want)
			}
		})
	}
}
