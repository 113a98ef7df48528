package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"petstore/app"
	"petstore/auth"
	"petstore/documents"
	"petstore/graph"
	"petstore/testkit/dbtest"
)

// BenchmarkTrustedDocuments measures a GraphQL query through the whole handler on SQLite (20
// pets), sent as text with no document listed, as text while 200 documents are listed (its
// SHA-256 looked up), as a listed document's text under listed, and by documentId under ids
// (neither parsed nor validated).
func BenchmarkTrustedDocuments(b *testing.B) {
	const query = `{ pets(limit: 20) { id name categoryId status } }`
	cases := []struct {
		name   string
		mode   graph.DocumentsMode
		listed bool
		body   string
	}{
		{"text, none listed", graph.DocumentsAny, false, `{"query":"` + query + `"}`},
		{"text, 200 listed", graph.DocumentsAny, true, `{"query":"{ pets(limit: 20) { id name } }"}`},
		{"listed text", graph.DocumentsListed, true, `{"query":"` + query + `"}`},
		{"documentId", graph.DocumentsIDs, true, `{"documentId":"bench"}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			db := dbtest.New(b, "sqlite")
			if c.listed {
				docs := []documents.Document{{ID: "bench", SHA256: documents.Hash(query), Body: query, Cost: 1}}
				for i := range 199 {
					body := fmt.Sprintf("query Q%d { pets(limit: %d) { id } }", i, i%100+1)
					docs = append(docs, documents.Document{ID: fmt.Sprint("d", i), SHA256: documents.Hash(body), Body: body, Cost: 1})
				}
				if _, err := documents.Add(context.Background(), db.DB, docs); err != nil {
					b.Fatal(err)
				}
			}
			cfg := app.DefaultConfig()
			cfg.GraphQL.DocumentsMode = string(c.mode)
			api := newTestAPIConfig(b, db, cfg)
			key := api.createKey(b, auth.KeySpec{Plan: "enterprise", PerMinute: 1 << 40, PerDay: 1 << 40})
			seed(b, api.h, key, 20)
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, "/v1/graphql", strings.NewReader(c.body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Authorization", "Bearer "+key)
				rec := httptest.NewRecorder()
				api.h.ServeHTTP(rec, r)
				if rec.Code != http.StatusOK {
					b.Fatalf("got %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
