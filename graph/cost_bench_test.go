package graph_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"petstore/graph"
	"petstore/graph/guard"
)

// hostileDocuments are the most expensive documents we know of, by shape: each within the
// bounds of the document (MaxDocumentSelections, MaxDocumentDefinitions, DefaultTokenLimit, a
// body of 1 MiB) but for those named "refused", which the bounds refuse.
func hostileDocuments() map[string]string {
	const sel, defs = guard.MaxDocumentSelections, guard.MaxDocumentDefinitions
	frags := numbered(defs-1, "fragment F%d on Query { a%d: __typename }")
	introspection, err := os.ReadFile("testdata/introspection.graphql")
	if err != nil {
		panic(err)
	}
	return map[string]string{
		"refused: 10,000 __typename":                  "{" + strings.Repeat(" __typename", graph.DefaultTokenLimit-3) + " }",
		"refused: 150 unknown fragments":              "{ " + spreads(150) + " }",
		"GraphiQL's introspection query":              string(introspection),
		"200 __typename":                              "{" + strings.Repeat(" __typename", sel) + " }",
		"100 conflicting aliases":                     "{" + strings.Repeat(" p: pet(id: 1) { id } p: pet(id: 2) { id }", sel/4) + " }",
		"50 same fields with subselections":           "{" + strings.Repeat(" pets { id name categoryId }", sel/4) + " }",
		"49 fragments spread together":                "{ " + spreads(defs-1) + " }\n" + frags,
		"49 operations, one fragment":                 numbered(defs-1, "query Q%d { ...F }") + "\nfragment F on Query {" + strings.Repeat(" __typename", sel-defs) + " }",
		"a chain of 49 fragments":                     "{ ...F0 }\n" + chain(defs-2),
		"3,300 repeated input fields":                 "mutation { createPet(input: {" + strings.Repeat(` name: "a"`, (graph.DefaultTokenLimit-20)/3) + ` categoryId: 1 }) { id } }`,
		"5,000 list values":                           "{ pets(limit: [" + strings.Repeat(" 1", graph.DefaultTokenLimit/2) + "]) { id } }",
		"1,600 unused variables":                      "query(" + numbered(graph.DefaultTokenLimit/6, "$v%d: Int = %d") + ") { __typename }",
		"1 MiB of comment":                            "{ __typename }\n#" + strings.Repeat("x", 1<<20-64),
		"refused: aliases under __schema":             "{ __schema { ...L0 } }\n" + fanOut(19, []string{"types", "fields", "type", "ofType", "ofType"}, []string{"__Schema", "__Type", "__Field", "__Type", "__Type"}, "name"),
		"11 aliases of __type":                        aliases(11, `__type(name: "__Type") { ...T }`) + " fragment T on __Type { " + typeRef + " }",
		"refused: 1 MiB field name in 49 operations":  farReached(strings.Repeat("x", 1<<20-2048)),
		"refused: 1 MiB enum string in 49 operations": farReached(`pets(status: "` + strings.Repeat("x", 1<<20-2048) + `") { id }`),
		"1 MiB field name in a fragment":              "{ ...F } fragment F on Query { " + strings.Repeat("x", 1<<20-2048) + " }",
		"1 MiB enum string in a fragment":             `{ ...F } fragment F on Query { pets(status: "` + strings.Repeat("x", 1<<20-2048) + `") { id } }`,
	}
}

// processCPU returns the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// chain returns n fragments that each select __typename and spread the next.
func chain(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "fragment F%d on Query { a%d: __typename ...F%d }\n", i, i, i+1)
	}
	fmt.Fprintf(&b, "fragment F%d on Query { __typename }\n", n)
	return b.String()
}

// BenchmarkHostileDocument measures the CPU of one request with each hostile document, a new
// document each time (a comment makes each one unknown to the document cache). Besides the
// wall time it reports cpu-ns/op, the CPU time of the whole process (garbage collection
// included) per request, which other work on a shared machine does not inflate.
func BenchmarkHostileDocument(b *testing.B) {
	for name, doc := range hostileDocuments() {
		b.Run(name, func(b *testing.B) {
			s := newServer(b, graph.DefaultOptions())
			if a := s.do(b, post(doc, acceptGraphQL)); a.status != http.StatusOK && a.status != http.StatusBadRequest {
				b.Fatalf("got %d %s", a.status, trim(a.body))
			}
			b.ReportAllocs()
			start := processCPU(b)
			i := 0
			for b.Loop() {
				i++
				s.do(b, post(fmt.Sprintf("#%d\n%s", i, doc), acceptGraphQL))
			}
			b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
