package graph_test

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"petstore/graph"
	"petstore/graph/guard"
)

// TestCachesBoundedByBytes fills the document cache and the in-process persisted queries with
// the documents that hold the most memory per request that we know of, and checks the heap
// they leave behind stays within the caches' budgets (16 MiB of documents, 8 MiB of persisted
// queries) and some slack: whitespace, comments and __typename, which cost no complexity, once
// made 1,000 cached documents hold up to a gigabyte.
func TestCachesBoundedByBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("sends some 80 MiB of queries")
	}
	s := newServer(t, graph.DefaultOptions())
	before := heap()
	typenames := "{" + strings.Repeat(" __typename", guard.MaxDocumentSelections) + " }"
	comment := strings.Repeat("x", 1<<20-1024)
	send := func(n int, doc func(i int) (query, hash string)) {
		t.Helper()
		for i := range n {
			query, hash := doc(i)
			body := post(query, acceptJSON)
			if hash != "" {
				body.body = persisted(query, hash)
			}
			if a := s.do(t, body); a.status != http.StatusOK || len(a.errors) != 0 {
				t.Fatalf("got %d %s; want 200 without errors", a.status, trim(a.body))
			}
		}
	}
	send(1500, func(i int) (string, string) {
		q := fmt.Sprintf("{ __typename } #%d %s", i, comment[:guard.MaxPersistedQueryBytes-64])
		return q, sha256Hex(q)
	})
	send(300, func(i int) (string, string) { return fmt.Sprintf("#%d\n%s", i, typenames), "" })
	send(60, func(i int) (string, string) { return fmt.Sprintf("{ __typename } #%d %s", i, comment), "" })
	after := heap()
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("live heap after filling the caches: %.1f MiB more than before (HeapInuse %.1f MiB, HeapAlloc %.1f MiB)",
		float64(grown)/(1<<20), float64(after.HeapInuse)/(1<<20), float64(after.HeapAlloc)/(1<<20))
	if limit := int64(guard.QueryCacheBytes + 8<<20 + 8<<20); grown > limit {
		t.Errorf("live heap grew by %d MiB; want at most %d MiB", grown>>20, limit>>20)
	}
	runtime.KeepAlive(s)
}

// heap returns the memory statistics after garbage collection (twice: objects that a
// finalizer keeps go in the second).
func heap() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}
