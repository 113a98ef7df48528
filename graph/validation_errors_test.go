package graph_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"petstore/graph"
	"petstore/graph/guard"
)

// farReached returns a document of 49 operations that each spread one fragment selecting
// field: validation walks the fragment once for each operation and once on its own, and
// reports its errors on each walk.
func farReached(field string) string {
	return numbered(guard.MaxDocumentDefinitions-1, "query Q%d { ...F }") + "\nfragment F on Query { " + field + " }"
}

// TestValidationSuggestsNothing checks that errors for unknown names carry no suggestion:
// gqlparser works each out by an edit distance, in time the product of the lengths of the
// name sent and of every name it could be, once per walk of the fragment that holds it. An
// unknown field name of 1 MiB in a fragment took a third of a second; spread by 49 operations,
// 17 seconds.
func TestValidationSuggestsNothing(t *testing.T) {
	long := strings.Repeat("x", 1<<20-2048)
	for _, tc := range []struct {
		name, query, msg string
	}{
		{"field", "{ petz { id } }", `Cannot query field "petz" on type "Query".`},
		{"type of a fragment", "{ ...F } fragment F on Querz { __typename }", `Unknown type "Querz".`},
		{"argument", "{ pets(limitt: 1) { id } }", `Unknown argument "limitt" on field "Query.pets".`},
		{"enum value", "{ pets(status: AVAILABEL) { id } }", `Value "AVAILABEL" does not exist in "PetStatus" enum.`},
		{"enum value as a string", `{ pets(status: "AVAILABLE") { id } }`, `Enum "PetStatus" cannot represent non-enum value: "AVAILABLE".`},
		{"input field", `mutation { createPet(input: {nam: "Rex", name: "Rex", categoryId: 1}) { id } }`, `Field "nam" is not defined by type "NewPet".`},
		{"1 MiB field name in a fragment", "{ ...F } fragment F on Query { " + long + " }", `Cannot query field "xxxx`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, graph.DefaultOptions())
			a := s.do(t, post(tc.query, acceptGraphQL))
			s.checkRefused(t, a, http.StatusBadRequest, "INVALID_REQUEST", tc.msg)
			for _, e := range a.errors {
				if strings.Contains(e.Message, "Did you mean") {
					t.Errorf("got message %.200q; want no suggestion", e.Message)
				}
			}
		})
	}
}

// TestErrorMessagesBounded checks that what a client sends is quoted in at most
// graph.MaxErrorMessageBytes of each error message: a name or value of 1 MiB, quoted by each
// of 50 errors, made a response of 52 MB; a cursor of 1 MiB in a variable, quoted by the
// errors of ten root fields and escaped as JSON, one of 60 MB.
func TestErrorMessagesBounded(t *testing.T) {
	long := strings.Repeat("<", 1<<20-2048)
	cursor := marshal(map[string]any{
		"query":     "query($c: String) { " + numbered(guard.MaxQueryFields, "a%d: petsConnection(after: $c) { pageInfo { hasNextPage } }") + " }",
		"variables": map[string]any{"c": long},
	})
	status := marshal(map[string]any{
		"query":     "query($s: PetStatus) { pets(status: $s) { id } }",
		"variables": map[string]any{"s": long},
	})
	for _, tc := range []struct {
		name string
		req  request
	}{
		{"field name in 49 operations", post(farReached(strings.Repeat("x", 1<<20-2048)), acceptGraphQL)},
		{"string value in 49 operations", post(farReached(`pets(status: "`+long+`") { id }`), acceptGraphQL)},
		{"number in 49 operations", post(farReached("pets(limit: "+strings.Repeat("9", 1<<20-2048)+") { id }"), acceptGraphQL)},
		{"cursor variable in ten fields", request{method: http.MethodPost, target: "/", body: cursor}},
		{"enum variable", request{method: http.MethodPost, target: "/", body: status}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, graph.DefaultOptions())
			a := s.do(t, tc.req)
			if len(a.errors) == 0 {
				t.Fatalf("got %d %s; want errors", a.status, trim(a.body))
			}
			for _, e := range a.errors {
				if len(e.Message) > graph.MaxErrorMessageBytes {
					t.Fatalf("got a message of %d bytes (%.100q); want at most %d", len(e.Message), e.Message, graph.MaxErrorMessageBytes)
				}
			}
			if max := 100 * (graph.MaxErrorMessageBytes*6 + 512); len(a.body) > max {
				t.Errorf("got a body of %d bytes; want at most %d", len(a.body), max)
			}
		})
	}
}

// fanOut returns fragments L0 to Ln-1, one for each of fields, on the types of ons: Li selects
// k aliases of fields[i], each spreading Li+1 (the last selecting leaf), so that running them
// resolves k^n fields on each object that L0 is spread on.
func fanOut(k int, fields, ons []string, leaf string) string {
	var b strings.Builder
	for i, f := range fields {
		fmt.Fprintf(&b, "fragment L%d on %s {", i, ons[i])
		for j := range k {
			next := leaf
			if i < len(fields)-1 {
				next = fmt.Sprintf("...L%d", i+1)
			}
			fmt.Fprintf(&b, " a%d: %s { %s }", j, f, next)
		}
		b.WriteString(" }\n")
	}
	return b.String()
}

// typeRef selects the fields of a __Type with their arguments and types.
const typeRef = "fields { name description isDeprecated deprecationReason args { name description defaultValue type { name kind } } type { name kind ofType { name kind ofType { name kind } } } }"

// TestIntrospectionFanOutRefused checks that an operation whose introspection resolves more
// than guard.MaxIntrospectionFields fields is refused before it runs: aliases under __schema,
// which neither the complexity nor the depth counted, multiplied the work at each level (k=8
// over five levels: 964 bytes, 1.7 million fields, 17 MB and seconds of CPU; k=19, within 200
// selections, hours).
func TestIntrospectionFanOutRefused(t *testing.T) {
	wide := func(k int) string {
		return "{ __schema { ...L0 } }\n" + fanOut(k, []string{"types", "fields", "type", "ofType", "ofType"},
			[]string{"__Schema", "__Type", "__Field", "__Type", "__Type"}, "name")
	}
	for _, tc := range []struct {
		name string
		req  request
	}{
		{"aliases under __schema, 3 per level", post(wide(3), acceptGraphQL)},
		{"aliases under __schema, 19 per level", post(wide(19), acceptGraphQL)},
		{"ofType aliases", post("{ __schema { types { fields { type { ...L0 } } } } }\n"+fanOut(6, []string{"ofType", "ofType", "ofType"}, []string{"__Type", "__Type", "__Type"}, "name"), acceptJSON)},
		{"40 aliases of __type", post(aliases(40, `__type(name: "__Type") { ...T }`)+" fragment T on __Type { "+typeRef+" }", acceptJSON)},
		{"over GET", request{method: http.MethodGet, target: "/?query=" + url.QueryEscape(wide(3))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, graph.DefaultOptions())
			s.checkRefused(t, s.do(t, tc.req), http.StatusBadRequest, "INVALID_REQUEST", "__schema and __type fields resolve more than 2000 fields")
		})
	}
}

// TestValidatedBytesBounded checks that a document is refused before validation when
// validation would read more than guard.MaxValidatedBytes: each fragment once for each
// operation that reaches it. One fragment of 1 MiB spread by 49 operations took 100 to 300 ms
// of CPU to refuse, quoting its names and values in each of 50 errors.
func TestValidatedBytesBounded(t *testing.T) {
	long := strings.Repeat("x", 1<<20-2048)
	for _, tc := range []struct {
		name, query string
	}{
		{"unknown field name", farReached(long)},
		{"enum value as a string", farReached(`pets(status: "` + long + `") { id }`)},
		{"through a chain of fragments", numbered(3, "query Q%d { ...G }") + "\nfragment G on Query { ...F }\nfragment F on Query { " + long + " }"},
		{"valid fragment, padded", numbered(3, "query Q%d { ...F }") + "\nfragment F on Query { __typename }\n#" + long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, graph.DefaultOptions())
			s.checkRefused(t, s.do(t, post(tc.query, acceptGraphQL)), http.StatusBadRequest, "INVALID_REQUEST", "validating the document would read")
		})
	}
	t.Run("admitted", func(t *testing.T) {
		s := newServer(t, graph.DefaultOptions())
		twoOperations, _ := json.Marshal(map[string]any{
			"query":         "query A { ...F } query B { ...F } fragment F on Query { __typename }\n#" + strings.Repeat("x", 600<<10),
			"operationName": "B",
		})
		for _, req := range []request{
			{method: http.MethodPost, target: "/", body: string(twoOperations)},
			post("{ ...F } fragment F on Query { __typename }\n#"+long, acceptJSON),
			post("{ __typename } #"+strings.Repeat("é", 500<<10), acceptJSON),
		} {
			if a := s.do(t, req); a.status != http.StatusOK || len(a.errors) != 0 {
				t.Errorf("got %d %s; want 200 without errors", a.status, trim(a.body))
			}
		}
	})
}
