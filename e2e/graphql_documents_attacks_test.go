package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"petstore/app"
	"petstore/documents"
	"petstore/graph"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// The listed documents these attacks aim at, besides listDocuments': an operation of several
// documents and a mutation.
const (
	multiBody    = `query A { pets(limit: 1) { id } } mutation M { createPet(input: {name: "x", categoryId: "1"}) { id } }`
	mutationBody = `mutation AddPet($name: String!) { createPet(input: {name: $name, categoryId: "1"}) { id } }`
)

// listAttackDocuments lists the documents of listDocuments and those above in db.
func listAttackDocuments(t testing.TB, db *store.DB) {
	t.Helper()
	listDocuments(t, db)
	var docs []documents.Document
	for id, body := range map[string]string{"multi": multiBody, "add-pet": mutationBody} {
		c, err := graph.CheckDocument(graph.DefaultOptions(), body)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, documents.Document{ID: id, SHA256: documents.Hash(body), Body: body, Name: c.Name, Type: c.Type, Cost: c.Cost})
	}
	if _, err := documents.Add(context.Background(), db.DB, docs); err != nil {
		t.Fatal(err)
	}
}

// jsonBody returns v as JSON.
func jsonBody(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestDocumentsAttacksHTTP: under listed and ids, no encoding of an unlisted document over POST
// or GET runs it (listed text with whitespace, a comment or another operation appended, a hash
// or documentId that differs in case or prefix, an APQ registration of another text under a
// listed hash, a batch, multipart, hostile ids); each is refused with the documented code and
// status and charged 1. What a listed document may vary (its variables, which of its operations
// runs) it does, at its stored cost; a listed mutation by GET gets 405, and one without its
// variables or operation the error of any request that cannot run. No answer repeats more than
// a short part of what it was sent: none is over 1 KiB.
func TestDocumentsAttacksHTTP(t *testing.T) {
	hash := documents.Hash(listPetsBody)
	apq := func(query, h string) string {
		m := map[string]any{"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": h}}}
		if query != "" {
			m["query"] = query
		}
		return jsonBody(m)
	}
	text := func(q string) string { return jsonBody(map[string]any{"query": q}) }
	evil := `{ pets(limit: 100) { id name } }`
	ok := gqlAnswer{status: 200, cost: 1, data: true}
	notInList := gqlAnswer{status: 404, code: "PERSISTED_QUERY_NOT_IN_LIST", cost: 1}
	idRequired := gqlAnswer{status: 400, code: "PERSISTED_QUERY_ID_REQUIRED", cost: 1}
	notSafe := gqlAnswer{status: 403, code: "QUERY_NOT_IN_SAFELIST", cost: 1}
	invalid := gqlAnswer{status: 400, code: "INVALID_REQUEST", cost: 1}
	accept := func(r request) request {
		r.header = http.Header{"Accept": {"application/graphql-response+json"}}
		return r
	}
	both := func(a gqlAnswer) map[graph.DocumentsMode]gqlAnswer {
		return map[graph.DocumentsMode]gqlAnswer{graph.DocumentsListed: a, graph.DocumentsIDs: a}
	}
	textRefused := map[graph.DocumentsMode]gqlAnswer{graph.DocumentsListed: notSafe, graph.DocumentsIDs: idRequired}
	cases := []struct {
		name string
		req  request
		want map[graph.DocumentsMode]gqlAnswer
	}{
		{"listed text and a space", post("/v1/graphql", text(listPetsBody+" ")), textRefused},
		{"listed text and a comment", post("/v1/graphql", text(listPetsBody+" # x")), textRefused},
		{"listed text and another operation", post("/v1/graphql", text(listPetsBody+" query Evil "+evil)), textRefused},
		{"listed text with a space by GET", get("/v1/graphql?query=" + url.QueryEscape(" "+listPetsBody)), textRefused},
		{"another text under a listed APQ hash", post("/v1/graphql", apq(evil, hash)), textRefused},
		{"the listed text with its APQ hash", post("/v1/graphql", apq(listPetsBody, hash)), map[graph.DocumentsMode]gqlAnswer{graph.DocumentsListed: ok, graph.DocumentsIDs: idRequired}},
		{"upper-case hex APQ hash", post("/v1/graphql", apq("", strings.ToUpper(hash))), both(notInList)},
		{"upper-case hex documentId", post("/v1/graphql", jsonBody(map[string]any{"documentId": "sha256:" + strings.ToUpper(hash)})), both(notInList)},
		{"SHA256: documentId", post("/v1/graphql", jsonBody(map[string]any{"documentId": "SHA256:" + hash})), both(notInList)},
		{"sha256: alone", post("/v1/graphql", `{"documentId":"sha256:"}`), both(notInList)},
		{"hash prefix", post("/v1/graphql", jsonBody(map[string]any{"documentId": "sha256:" + hash[:63]})), both(notInList)},
		{"empty documentId", post("/v1/graphql", `{"documentId":""}`), both(notInList)},
		{"numeric documentId", post("/v1/graphql", `{"documentId":5}`), both(invalid)},
		{"numeric extensions.documentId", post("/v1/graphql", `{"extensions":{"documentId":5}}`), both(invalid)},
		{"extensions.documentId by POST", post("/v1/graphql", `{"extensions":{"documentId":"list-pets"}}`), both(ok)},
		{"extensions.documentId and query", post("/v1/graphql", jsonBody(map[string]any{"query": evil, "extensions": map[string]any{"documentId": "list-pets"}})), both(invalid)},
		{"GET documentId and query", get("/v1/graphql?documentId=list-pets&query=" + url.QueryEscape(evil)), both(invalid)},
		{"GET documentId twice", get("/v1/graphql?documentId=nope&documentId=list-pets"), both(invalid)},
		{"variables change a listed document's answer", post("/v1/graphql", `{"documentId":"list-pets","variables":{"limit":100}}`), both(ok)},
		{"operationName picks a listed operation", post("/v1/graphql", `{"documentId":"multi","operationName":"A"}`), both(ok)},
		{"GET of a listed mutation", get("/v1/graphql?documentId=add-pet&variables=" + url.QueryEscape(`{"name":"x"}`)), both(gqlAnswer{status: 405, code: "METHOD_NOT_ALLOWED", cost: 1})},
		{"GET picking a listed document's mutation", get("/v1/graphql?documentId=multi&operationName=M"), both(gqlAnswer{status: 405, code: "METHOD_NOT_ALLOWED", cost: 1})},
		{"operationName naming no operation of it", post("/v1/graphql", `{"documentId":"multi","operationName":"Nope"}`), both(gqlAnswer{status: 200, code: "INVALID_REQUEST", cost: 1})},
		{"no operationName for a document of two", post("/v1/graphql", `{"documentId":"multi"}`), both(gqlAnswer{status: 200, code: "INVALID_REQUEST", cost: 1})},
		{"a listed mutation without its variable", post("/v1/graphql", `{"documentId":"add-pet"}`), both(gqlAnswer{status: 200, code: "INVALID_REQUEST", cost: 1})},
		{"unknown id, graphql-response+json", accept(post("/v1/graphql", `{"documentId":"nope"}`)), both(notInList)},
		{"text, graphql-response+json", accept(get("/v1/graphql?query=" + url.QueryEscape(evil))), textRefused},
		{"batch of a listed document", post("/v1/graphql", `[{"documentId":"list-pets"}]`), both(invalid)},
		{"batch of text", post("/v1/graphql", `[{"query":"`+evil+`"}]`), both(invalid)},
		{"long id", post("/v1/graphql", jsonBody(map[string]any{"documentId": strings.Repeat("a", 200_000)})), both(notInList)},
		{"unicode id", post("/v1/graphql", `{"documentId":"list-pets\u0301"}`), both(notInList)},
		{"control characters in an id", post("/v1/graphql", `{"documentId":"list-pets\u0000\n\r\t"}`), both(notInList)},
		{"GET long unicode id", get("/v1/graphql?documentId=" + url.QueryEscape(strings.Repeat("ü\x01", 600))), both(notInList)},
	}
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		listAttackDocuments(t, db)
		for _, mode := range []graph.DocumentsMode{graph.DocumentsListed, graph.DocumentsIDs} {
			cfg := app.DefaultConfig()
			cfg.GraphQL.DocumentsMode = string(mode)
			api := newTestAPIConfig(t, db, cfg)
			awayFromMinuteEdge(t)
			left := -1
			for _, c := range cases {
				want, ok := c.want[mode]
				if !ok {
					continue
				}
				resp := api.do(t, c.req)
				got := answerOf(t, resp)
				now, _ := strconv.Atoi(resp.header.Get("X-Ratelimit-Remaining"))
				if left < 0 {
					left, _ = strconv.Atoi(resp.header.Get("X-Ratelimit-Limit"))
				}
				got.cost, left = left-now, now // what the request was charged, extensions.cost or not
				if got != want {
					t.Errorf("%s, %s: got %+v; want %+v", mode, c.name, got, want)
				}
				if len(resp.body) > 1024 {
					t.Errorf("%s, %s: a refusal of %d bytes; want at most 1 KiB, whatever the request sent", mode, c.name, len(resp.body))
				}
			}
			multipart := post("/v1/graphql", "--b\r\nContent-Disposition: form-data; name=\"operations\"\r\n\r\n"+text(evil)+"\r\n--b--\r\n")
			multipart.header = http.Header{"Content-Type": {"multipart/form-data; boundary=b"}}
			if resp := api.do(t, multipart); resp.status != http.StatusUnsupportedMediaType || strings.Contains(resp.body, `"data"`) {
				t.Errorf("%s, multipart: %d %s; want 415", mode, resp.status, resp.body)
			}
		}
	})
}
