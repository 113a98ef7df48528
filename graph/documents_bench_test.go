package graph_test

import (
	"fmt"
	"net/http"
	"testing"

	"petstore/documents"
	"petstore/graph"
)

// benchList is a DocumentList of fixed documents, by id and by their bodies' SHA-256.
type benchList map[string]*documents.Listed

func (l benchList) Lookup(id string) *documents.Listed   { return l[id] }
func (l benchList) ByHash(hash string) *documents.Listed { return l[hash] }
func (l benchList) Len() int                             { return len(l) }

// BenchmarkDocumentsOverhead measures the CPU of a request for { __typename } (no database
// work, so that what the trusted documents add shows): sent as text with no list, as text
// with 200 documents listed (its SHA-256 looked up and not found), as a listed text, and by
// documentId.
func BenchmarkDocumentsOverhead(b *testing.B) {
	const query = "{ __typename }"
	list := benchList{}
	for i := range 200 {
		body := fmt.Sprintf("query Q%d { __typename }", i)
		if i == 0 {
			body = query
		}
		c, err := graph.CheckDocument(graph.DefaultOptions(), body)
		if err != nil {
			b.Fatal(err)
		}
		l := &documents.Listed{Document: documents.Document{ID: fmt.Sprint("d", i), SHA256: documents.Hash(body), Body: body, Cost: c.Cost}, Doc: c.Doc}
		list[l.ID], list[l.SHA256] = l, l
	}
	cases := []struct {
		name string
		list graph.DocumentList
		mode graph.DocumentsMode
		req  request
	}{
		{"text, no list", nil, graph.DocumentsAny, post(query, acceptJSON)},
		{"text, 200 listed", list, graph.DocumentsAny, post("{ __typename __typename }", acceptJSON)},
		{"listed text", list, graph.DocumentsListed, post(query, acceptJSON)},
		{"documentId", list, graph.DocumentsIDs, request{method: http.MethodPost, target: "/", body: `{"documentId":"d0"}`}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			opts := graph.DefaultOptions()
			opts.Documents, opts.DocumentsMode = c.list, c.mode
			s := newServer(b, opts)
			if a := s.do(b, c.req); a.status != http.StatusOK || a.code() != "" {
				b.Fatalf("got %d %s", a.status, trim(a.body))
			}
			b.ReportAllocs()
			start := processCPU(b)
			for b.Loop() {
				s.do(b, c.req)
			}
			b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
