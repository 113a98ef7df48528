package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"petstore/app"
	"petstore/graph"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestDocumentsCostNotLower: documents add lists a document whose @skip and @include take
// required variables, and the document is charged no less than what its text costs
// when sent as an unlisted text, whatever the variables, fragments, aliases, @skip and
// @include make of it: its stored cost is its costliest operation's most.
func TestDocumentsCostNotLower(t *testing.T) {
	body := `query F($s: Boolean!, $n: Int) { ...P a: pets(limit: $n) @skip(if: $s) { id } b: pets(limit: 100) @include(if: $s) { id } }
fragment P on Query { c: petsConnection(first: $n) { pageInfo { hasNextPage } } d: pet(id: 1) { id } ...Q }
fragment Q on Query { c: petsConnection(first: $n) { pageInfo { hasNextPage } } e: pets { name } }
query G { x: pet(id: 1) { id } }`
	checked, err := graph.CheckDocument(graph.DefaultOptions(), body)
	if err != nil {
		t.Fatal(err)
	}
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			dsn := dbtest.DSN(t, dialect)
			if out, err := runCmd(t, dsn, "documents", "add", writeManifest(t, "m.json", jsonBody(map[string]string{"costly": body}))); err != nil {
				t.Fatalf("documents add: %v\n%s", err, out)
			}
			db, err := store.Open(context.Background(), dsn, store.DefaultPool)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			api := newTestAPIConfig(t, db, app.DefaultConfig())
			for _, s := range []bool{false, true} {
				for _, n := range []int{1, 100, 1000} {
					vars := `{"s":` + strconv.FormatBool(s) + `,"n":` + strconv.Itoa(n) + `}`
					byID := answerOf(t, api.do(t, post("/v1/graphql", `{"documentId":"costly","operationName":"F","variables":`+vars+`}`)))
					asText := answerOf(t, api.do(t, post("/v1/graphql", jsonBody(map[string]any{"query": body + " ", "operationName": "F", "variables": json.RawMessage(vars)}))))
					if byID.status != 200 || asText.status != 200 || byID.cost != checked.Cost || byID.cost < asText.cost {
						t.Errorf("s %v, n %d: charged %+v by id, %+v as text; want 200s, the stored %d, no less than as text", s, n, byID, asText, checked.Cost)
					}
				}
			}
		})
	}
}
