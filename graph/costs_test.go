package graph_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"petstore/graph"
)

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

// fullPage selects every field of a petsConnection(first: 100) page: it costs 100*12+1.
const fullPage = "petsConnection(first: 100) { edges { cursor node { id name categoryId status } } " +
	"pageInfo { hasNextPage hasPreviousPage startCursor endCursor } }"

func TestCostLimitsRefuse(t *testing.T) {
	pet := "pets(limit: 100) { id name categoryId status }" // costs 100*4+1
	for _, tc := range []struct {
		name, query, msg string
	}{
		{"alias bomb", aliases(10, pet), "operation has complexity 4010, which exceeds the limit of 2000"},
		{"alias bomb over the selections", aliases(500, "pets(limit: 100) { id }"), "the document has more than 200 selections"},
		{"five full lists", aliases(5, pet), "operation has complexity 2005, which exceeds the limit of 2000"},
		{"three full connection pages", aliases(3, "petsConnection(first: 100) { edges { cursor node { id name categoryId status } } pageInfo { hasNextPage endCursor } }"), "operation has complexity 3003"},
		{"two full connection pages with every field", aliases(2, fullPage), "operation has complexity 2402, which exceeds the limit of 2000"},
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
		{"a full connection page with every field", "{ " + fullPage + " }"},
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
