package graph_test

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/validator"

	"petstore/graph"
)

// costDocuments are operations and what they cost: each response name of a root field once,
// a page of up to graph.RowsPerUnit pets one unit, at least one.
var costDocuments = []struct {
	name, query string
	vars        map[string]any
	cost        int
}{
	{"ten aliases", "{" + aliases(10, "pets(limit: 100) { id }")[1:], nil, 10},
	{"one page", "{ pets(limit: 20) { id name categoryId status } }", nil, 1},
	{"a connection", "{ petsConnection(first: 100) { edges { cursor } } }", nil, 1},
	{"a deprecated pet", "{ pet(id: 1) { id } }", nil, 1},
	{"a mutation", `mutation { createPet(input: {name: "a", categoryId: 1}) { id } }`, nil, 1},
	{"introspection only", "{ __schema { types { name } } __type(name: \"Pet\") { name } __typename }", nil, 1},
	{"one response name, many fields", "{ p: pets { id } p: pets { name } ... on Query { p: pets { id } } }", nil, 1},
	{"fragments, by response name", `{ ...A ...B q: pet(id: 1) { id } }
		fragment A on Query { p: pets { id } ...B }
		fragment B on Query { q: pet(id: 1) { id } r: petsConnection { edges { cursor } } p: pets { id } }`, nil, 3},
	{"a size from a variable", "query($n: Int) { pets(limit: $n) { id } b: pets(limit: $n) { id } }", map[string]any{"n": json.Number("100")}, 2},
	{"a size out of range", "query($n: Int = 100000) { pets(limit: $n) { id } }", nil, 1},
	{"a null size", "{ pets(limit: null) { id } }", nil, 1},
	{"skipped and included", `query($no: Boolean!) { a: pets @skip(if: true) { id } b: pets @include(if: $no) { id }
		... @skip(if: $no) { c: pets { id } } ...F @include(if: false) d: pets { id } } fragment F on Query { e: pets { id } }`,
		map[string]any{"no": false}, 2},
}

// TestOperationCost: the answer of each operation carries what it costs in extensions.cost.
func TestOperationCost(t *testing.T) {
	s := newServer(t, graph.DefaultOptions())
	introspection, err := os.ReadFile("testdata/introspection.graphql")
	if err != nil {
		t.Fatal(err)
	}
	docs := append(costDocuments, struct {
		name, query string
		vars        map[string]any
		cost        int
	}{"GraphiQL's introspection query", string(introspection), nil, 1})
	for _, tt := range docs {
		t.Run(tt.name, func(t *testing.T) {
			body := map[string]any{"query": tt.query, "variables": tt.vars}
			req := request{method: http.MethodPost, target: "/", body: marshal(body), header: map[string]string{"Accept": acceptJSON}}
			a := s.do(t, req)
			var resp struct {
				Errors     []any
				Extensions struct{ Cost int }
			}
			if err := json.Unmarshal([]byte(a.body), &resp); err != nil || a.status != http.StatusOK {
				t.Fatalf("got %d %s", a.status, trim(a.body))
			}
			if resp.Extensions.Cost != tt.cost {
				t.Errorf("extensions.cost: got %d; want %d (%s)", resp.Extensions.Cost, tt.cost, trim(a.body))
			}
		})
	}
}

// BenchmarkOperationCost measures OperationCost alone on each of costDocuments, parsed,
// validated and with its variables coerced.
func BenchmarkOperationCost(b *testing.B) {
	schema := graph.NewExecutableSchema(graph.Config{}).Schema()
	for _, tt := range costDocuments {
		b.Run(tt.name, func(b *testing.B) {
			doc, errs := gqlparser.LoadQuery(schema, tt.query)
			if errs != nil {
				b.Fatal(errs)
			}
			vars, err := validator.VariableValues(schema, doc.Operations[0], tt.vars)
			if err != nil {
				b.Fatal(err)
			}
			opCtx := &graphql.OperationContext{Operation: doc.Operations[0], Variables: vars}
			b.ReportAllocs()
			for b.Loop() {
				if graph.OperationCost(opCtx) != tt.cost {
					b.Fatal("wrong cost")
				}
			}
		})
	}
}
