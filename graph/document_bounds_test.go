package graph_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/graph"
	"petstore/graph/guard"
	"petstore/testkit/dbtest"
)

// numbered returns n copies of format, each %d in it replaced by the copy's index, joined by
// spaces.
func numbered(n int, format string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strings.ReplaceAll(format, "%d", strconv.Itoa(i))
	}
	return strings.Join(parts, " ")
}

// TestDocumentBounds checks that documents whose validation would be expensive are refused
// before validation: the bounds are linear checks of the parsed document.
func TestDocumentBounds(t *testing.T) {
	typenames := "{" + strings.Repeat(" __typename", graph.DefaultTokenLimit-3) + " }"
	for _, tc := range []struct {
		name, query, msg string
	}{
		{"10,000 __typename", typenames, "the document has more than 200 selections"},
		{"10,000 __typename, a trailing space", typenames + " ", "the document has more than 200 selections"},
		{"201 __typename", "{" + strings.Repeat(" __typename", guard.MaxDocumentSelections+1) + " }", "more than 200 selections"},
		{"selections in fragments", "{ ...F } fragment F on Query {" + strings.Repeat(" __typename", guard.MaxDocumentSelections) + " }", "more than 200 selections"},
		{"many fragments", "{ ...F0 }\n" + numbered(guard.MaxDocumentDefinitions, "fragment F%d on Query { a%d: __typename }"), "defines 51 operations and fragments; at most 50"},
		{"many operations", numbered(guard.MaxDocumentDefinitions+1, "query Q%d { a%d: __typename }"), "defines 51 operations and fragments"},
	} {
		for _, accept := range []string{acceptGraphQL, acceptJSON} {
			t.Run(tc.name+"/"+accept, func(t *testing.T) {
				s := newServer(t, graph.DefaultOptions())
				s.checkRefused(t, s.do(t, post(tc.query, accept)), http.StatusBadRequest, "INVALID_REQUEST", tc.msg)
			})
		}
	}
}

// TestDocumentBoundsAdmit checks documents at the bounds run.
func TestDocumentBoundsAdmit(t *testing.T) {
	for _, tc := range []struct {
		name, query string
	}{
		{"200 selections", "{" + strings.Repeat(" __typename", guard.MaxDocumentSelections) + " }"},
		{"50 definitions", "{ " + spreads(guard.MaxDocumentDefinitions-1) + " }\n" + numbered(guard.MaxDocumentDefinitions-1, "fragment F%d on Query { a%d: __typename }")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, graph.DefaultOptions())
			if a := s.do(t, post(tc.query, acceptGraphQL)); a.status != http.StatusOK || len(a.errors) != 0 {
				t.Errorf("got %d %s; want 200 without errors", a.status, trim(a.body))
			}
		})
	}
}

// spreads returns the spreads of fragments F0 to Fn-1.
func spreads(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("...F%d", i)
	}
	return strings.Join(parts, " ")
}

// TestUnknownFragmentsRefusedEarly checks that spreads of undefined fragments, whose pairs
// validation compares, are a validation error found before validation.
func TestUnknownFragmentsRefusedEarly(t *testing.T) {
	s := newServer(t, graph.DefaultOptions())
	a := s.do(t, post("{ "+spreads(150)+" }", acceptGraphQL))
	s.checkRefused(t, a, http.StatusBadRequest, "INVALID_REQUEST", `Unknown fragment "F0".`)
	if len(a.errors) != 1 {
		t.Errorf("got %d errors; want 1", len(a.errors))
	}
}

// TestRequestErrorsTruncated checks that a document with thousands of validation errors (every
// pair of fields that share a response name conflicts) is answered with at most 100.
func TestRequestErrorsTruncated(t *testing.T) {
	s := newServer(t, graph.DefaultOptions())
	query := "{" + strings.Repeat(" p: pet(id: 1) { id } p: pet(id: 2) { id }", 40) + " }"
	a := s.do(t, post(query, acceptGraphQL))
	s.checkRefused(t, a, http.StatusBadRequest, "INVALID_REQUEST", "conflict")
	if last := a.errors[len(a.errors)-1].Message; len(a.errors) != 100 || !strings.HasSuffix(last, "more errors left out") {
		t.Errorf("got %d errors, the last %q; want 100, the last saying how many more", len(a.errors), last)
	}
}

// TestRootFieldBounds checks that one request does one write and a bounded number of SQL
// statements: a mutation selects one field, a query ten root fields at most.
func TestRootFieldBounds(t *testing.T) {
	create := `createPet(input: {name: "Rex", categoryId: 1}) { id }`
	for _, tc := range []struct {
		name, query, msg string
	}{
		{"two writes", "mutation { a: " + create + " b: " + create + " }", "a mutation may select at most 1 field; this one selects 2"},
		{"hundreds of writes", "mutation { " + numbered(100, "a%d: createPet(input: {name: \"Rex\", categoryId: %d}) { id }") + " }", "this one selects 100"},
		{"writes through fragments", "mutation { ...M ... on Mutation { b: " + create + " } } fragment M on Mutation { a: " + create + " }", "this one selects 2"},
		{"eleven pet(id:)", "{ " + numbered(guard.MaxQueryFields+1, "a%d: pet(id: %d) { id }") + " }", "a query may select at most 10 root fields other than __typename, __schema and __type; this one selects 11"},
		{"eleven lists", "{ " + numbered(guard.MaxQueryFields+1, "a%d: pets(limit: 1) { id }") + " }", "this one selects 11"},
		{"lists through fragments", "{ ...Q ...Q " + numbered(6, "b%d: pet(id: %d) { id }") + " } fragment Q on Query { " + numbered(5, "a%d: petsConnection(first: 1) { pageInfo { hasNextPage } }") + " }", "this one selects 11"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, graph.DefaultOptions())
			s.checkRefused(t, s.do(t, post(tc.query, acceptJSON)), http.StatusBadRequest, "INVALID_REQUEST", tc.msg)
		})
	}
}

// TestRootFieldBoundsAdmit checks what stays within the root field bounds runs.
func TestRootFieldBoundsAdmit(t *testing.T) {
	create := `createPet(input: {name: "Rex", categoryId: 1}) { id }`
	for _, tc := range []struct {
		name, query string
		statements  int64
	}{
		{"one write and __typename", "mutation { " + create + " __typename }", 1},
		{"one write selected twice", "mutation { " + create + " " + create + " ...M } fragment M on Mutation { " + create + " }", 1},
		{"ten pet(id:) and introspection", "{ __typename __type(name: \"Pet\") { name } " + numbered(guard.MaxQueryFields, "a%d: pet(id: %d) { id }") + " }", 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, graph.DefaultOptions())
			a := s.do(t, post(tc.query, acceptJSON))
			if a.status != http.StatusOK || !a.hasData {
				t.Errorf("got %d %s; want 200 with data", a.status, trim(a.body))
			}
			if n := s.statements.Load(); n != tc.statements {
				t.Errorf("got %d SQL statements; want %d", n, tc.statements)
			}
		})
	}
}

// TestAPQStoresOnlyValidQueries checks that a query sent with its hash is stored only when it
// parses, validates and passes every limit, in process and in Redis: garbage cannot fill the
// store.
func TestAPQStoresOnlyValidQueries(t *testing.T) {
	client, prefix := dbtest.Redis(t)
	stores := map[string]func() graph.Options{
		"in process": graph.DefaultOptions,
		"Redis": func() graph.Options {
			opts := graph.DefaultOptions()
			opts.APQCache = guard.NewRedisAPQCache(client, prefix+"apq:", time.Minute)
			return opts
		},
	}
	create := `createPet(input: {name: "Rex", categoryId: 1}) { id }`
	refused := map[string]string{
		"does not parse":      "{ pets { id }",
		"does not validate":   "{ owners { id } }",
		"bad variable":        "query($n: Int!) { pets(limit: $n) { id } }",
		"over the complexity": aliases(5, "pets(limit: 100) { id name categoryId status }"),
		"over the selections": "{" + strings.Repeat(" __typename", guard.MaxDocumentSelections+1) + " }",
		"two mutations":       "mutation { a: " + create + " b: " + create + " }",
	}
	for store, opts := range stores {
		s := newServer(t, opts())
		for name, query := range refused {
			t.Run(store+"/"+name, func(t *testing.T) {
				hash := sha256Hex(query)
				if a := s.do(t, request{method: http.MethodPost, target: "/", body: persisted(query, hash)}); len(a.errors) == 0 {
					t.Fatalf("query with its hash: got %d %s; want errors", a.status, trim(a.body))
				}
				if a := s.do(t, request{method: http.MethodPost, target: "/", body: persisted("", hash)}); a.code() != "PERSISTED_QUERY_NOT_FOUND" {
					t.Errorf("its hash alone: got %d %s; want PERSISTED_QUERY_NOT_FOUND", a.status, trim(a.body))
				}
			})
		}
	}
	if keys, err := client.Keys(context.Background(), prefix+"apq:*").Result(); err != nil || len(keys) != 0 {
		t.Errorf("got Redis keys %v, %v; want none", keys, err)
	}
}
