package graph_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"petstore/graph"
	"petstore/graph/guard"
	"petstore/testkit/dbtest"
)

// TestAPQSharedThroughRedis runs the APQ round trip on three instances sharing one Redis: the
// query that one learns, the others know.
func TestAPQSharedThroughRedis(t *testing.T) {
	client, prefix := dbtest.Redis(t)
	instance := func() *server {
		opts := graph.DefaultOptions()
		opts.APQCache = guard.NewRedisAPQCache(client, prefix+"apq:", time.Minute)
		return newServer(t, opts)
	}
	checkAPQRoundTrip(t, instance(), instance(), instance())
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
