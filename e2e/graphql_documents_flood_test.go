package e2e

import (
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"petstore/app"
	"petstore/documents"
	"petstore/graph"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestDocumentsUnknownIDFlood: a flood of unknown ids and hashes, by POST, GET and the
// persisted-query extension, reads nothing of the documents table: each is refused from the
// instance's copy of the list with 404 PERSISTED_QUERY_NOT_IN_LIST.
func TestDocumentsUnknownIDFlood(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		listDocuments(t, db)
		cfg := app.DefaultConfig()
		cfg.GraphQL.DocumentsMode = string(graph.DocumentsIDs)
		api := newTestAPIConfig(t, db, cfg)
		var reads atomic.Int64
		count := func(tx *gorm.DB) {
			if tx.Statement.Table == "documents" {
				reads.Add(1)
			}
		}
		if err := db.DB.Callback().Query().Before("gorm:query").Register("test:count_documents_reads", count); err != nil {
			t.Fatal(err)
		}
		if err := db.DB.Callback().Row().Before("gorm:row").Register("test:count_documents_rows", count); err != nil {
			t.Fatal(err)
		}
		for i := range 300 {
			id := "unknown-" + strconv.Itoa(i)
			hash := documents.Hash(id)
			for _, req := range []request{
				post("/v1/graphql", `{"documentId":"`+id+`"}`),
				get("/v1/graphql?documentId=" + url.QueryEscape("sha256:"+hash)),
				post("/v1/graphql", `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"`+hash+`"}}}`),
			} {
				if got := answerOf(t, api.do(t, req)); got.status != 404 || got.code != "PERSISTED_QUERY_NOT_IN_LIST" {
					t.Fatalf("%s %s: %+v; want 404 PERSISTED_QUERY_NOT_IN_LIST", req.method, req.path, got)
				}
			}
		}
		if n := reads.Load(); n != 0 {
			t.Errorf("900 unknown ids read the documents table %d times; want none", n)
		}
	})
}
