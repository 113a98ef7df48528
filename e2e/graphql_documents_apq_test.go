package e2e

import (
	"context"
	"testing"

	"petstore/app"
	"petstore/auth"
	"petstore/documents"
	"petstore/graph"
	"petstore/testkit/dbtest"
)

// TestDocumentsAPQKeyCase: under listed and ids, automatic persisted queries find nothing,
// however the persisted-query extension spells its members: a text registered by an instance
// under any, in the Redis that instances share (as while the mode is being switched), is not
// run by its hash under a key in another case, which gqlgen's persisted-query extension reads
// as sha256Hash, nor by an extension without a hash it reads. Each gets
// PERSISTED_QUERY_NOT_IN_LIST. Nor is a listed text sent with its hash stored.
func TestDocumentsAPQKeyCase(t *testing.T) {
	db := dbtestSQLite(t)
	listDocuments(t, db)
	rdb, prefix := dbtest.Redis(t)
	evil := `{ pets(limit: 100) { id name } }`
	hash := documents.Hash(evil)
	handler := func(mode graph.DocumentsMode) *testAPI {
		cfg := app.DefaultConfig()
		cfg.RedisKeyPrefix = prefix
		cfg.GraphQL.DocumentsMode = string(mode)
		h, err := newHandler(cfg, db, rdb)
		if err != nil {
			t.Fatal(err)
		}
		api := &testAPI{h: h, db: db, cfg: cfg, v: validator(t, h)}
		api.key = api.createKey(t, auth.KeySpec{Plan: "business"})
		return api
	}
	anyMode := handler(graph.DocumentsAny)
	register := `{"query":"` + evil + `","extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + hash + `"}}}`
	if got := answerOf(t, anyMode.do(t, post("/v1/graphql", register))); got.status != 200 || !got.data {
		t.Fatalf("register under any: %+v", got)
	}
	for _, mode := range []graph.DocumentsMode{graph.DocumentsListed, graph.DocumentsIDs} {
		api := handler(mode)
		listed := `{"query":"` + listPetsBody + `","extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + documents.Hash(listPetsBody) + `"}}}`
		api.do(t, post("/v1/graphql", listed)) // runs under listed, refused under ids: stored by neither
		if keys, err := rdb.Keys(context.Background(), prefix+"apq:*").Result(); err != nil || len(keys) != 1 {
			t.Errorf("%s: persisted queries %v (%v); want only the one registered under any", mode, keys, err)
		}
		for _, pq := range []string{`"sha256Hash":"` + hash + `"`, `"SHA256HASH":"` + hash + `"`, `"sha256hash":"` + hash + `"`,
			`"Sha256Hash":"` + hash + `"`, `"sha256Hash":5,"SHA256Hash":"` + hash + `"`, `"sha256Hash":null`, `"x":1`} {
			body := `{"extensions":{"persistedQuery":{"version":1,` + pq + `}}}`
			got := answerOf(t, api.do(t, post("/v1/graphql", body)))
			if got.status != 404 || got.code != "PERSISTED_QUERY_NOT_IN_LIST" || got.data {
				t.Errorf("%s, a registered text by its hash as %s: %+v; want 404 PERSISTED_QUERY_NOT_IN_LIST", mode, pq, got)
			}
		}
	}
}
