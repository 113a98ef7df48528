package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"petstore/app"
	"petstore/documents"
	"petstore/graph"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// The trusted documents of these tests: an Apollo manifest and a codegen one.
const (
	listPetsBody  = `query ListPets($limit: Int) { pets(limit: $limit) { id name } }`
	apolloListed  = `{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":"list-pets","body":"query ListPets($limit: Int) { pets(limit: $limit) { id name } }","name":"ListPets","type":"query"}]}`
	codegenListed = `{"c0ffee":"subscription Added { petAdded { pet { id name } } }","d00d":"query Two { pets(limit: 1) { id } petsConnection(first: 1) @include(if: false) { pageInfo { hasNextPage } } }"}`
)

// writeManifest writes text to a file named name in a temporary directory and returns its path.
func writeManifest(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDocumentsCommands: documents add takes both manifest formats, checks every document, adds
// all or none and changes nothing the second time; list shows them and remove removes one.
func TestDocumentsCommands(t *testing.T) {
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			dsn := dbtest.DSN(t, dialect)
			apollo, codegen := writeManifest(t, "apollo.json", apolloListed), writeManifest(t, "persisted-documents.json", codegenListed)
			out, err := runCmd(t, dsn, "documents", "add", apollo, codegen)
			if err != nil || !strings.Contains(out, "added 3 documents, 0 listed already") ||
				!strings.Contains(out, documents.FormatApollo) || !strings.Contains(out, documents.FormatCodegen) {
				t.Fatalf("documents add: %v\n%s", err, out)
			}
			if out, err := runCmd(t, dsn, "documents", "add", apollo); err != nil || !strings.Contains(out, "added 0 documents, 1 listed already") {
				t.Fatalf("documents add again: %v\n%s", err, out)
			}
			refused := map[string]string{
				`{"ok":"{ pets { id } }","bad":"{ pets { nope } }"}`: `document "bad"`,
				`{"list-pets":"{ pets { id } }"}`:                    "listed with another body",
				`{"deep":"{ pets { id } }","x":"{ pets(limit: 1) { id } pet(id: 1) { id } } query Q { pet(id: 2) { id } }"}`: `document "x"`,
				`{"format":"apollo-persisted-query-manifest","version":2,"operations":[]}`:                                   "version 2",
				`["not", "a manifest"]`: "JSON object",
			}
			for manifest, want := range refused {
				out, err := runCmd(t, dsn, "documents", "add", writeManifest(t, "m.json", manifest))
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("documents add %s: %v (out %q); want an error naming %q", manifest, err, out, want)
				}
			}
			list, err := runCmd(t, dsn, "documents", "list")
			if err != nil || strings.Count(list, "\n") != 4 || !strings.Contains(list, "list-pets  ListPets  query") || strings.Contains(list, "ok") {
				t.Fatalf("documents list: %v\n%s", err, list)
			}
			if _, err := runCmd(t, dsn, "documents", "remove", "d00d"); err != nil {
				t.Fatal(err)
			}
			if _, err := runCmd(t, dsn, "documents", "remove", "d00d"); err == nil || !strings.Contains(err.Error(), "no document") {
				t.Errorf("remove twice: %v; want no document", err)
			}
			if list, _ := runCmd(t, dsn, "documents", "list"); strings.Contains(list, "d00d") {
				t.Errorf("list after remove:\n%s", list)
			}
		})
	}
}

// listDocuments adds the test manifests' documents to db, as documents add does.
func listDocuments(t testing.TB, db *store.DB) {
	t.Helper()
	var docs []documents.Document
	for _, m := range []string{apolloListed, codegenListed} {
		entries, _, err := documents.Parse([]byte(m))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			c, err := graph.CheckDocument(graph.DefaultOptions(), e.Body)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, documents.Document{ID: e.ID, SHA256: documents.Hash(e.Body), Body: e.Body, Name: c.Name, Type: c.Type, Cost: c.Cost})
		}
	}
	if _, err := documents.Add(context.Background(), db.DB, docs); err != nil {
		t.Fatal(err)
	}
}

// gqlAnswer is a GraphQL answer: its status, first error code, and extensions.cost.
type gqlAnswer struct {
	status int
	code   string
	cost   int
	data   bool
}

func answerOf(t *testing.T, resp response) gqlAnswer {
	t.Helper()
	var body struct {
		Data   json.RawMessage
		Errors []struct {
			Extensions struct{ Code string }
		}
		Extensions struct{ Cost int }
	}
	if err := json.Unmarshal([]byte(resp.body), &body); err != nil {
		t.Fatalf("%d %s: %v", resp.status, resp.body, err)
	}
	a := gqlAnswer{status: resp.status, cost: body.Extensions.Cost, data: len(body.Data) > 0 && string(body.Data) != "null"}
	if len(body.Errors) > 0 {
		a.code = body.Errors[0].Extensions.Code
	}
	return a
}

// TestDocumentsModes: under each PETSTORE_DOCUMENTS mode, a document named by documentId (POST
// member, GET parameter, "sha256:" hash), by an APQ hash or sent as text runs or is refused
// with Apollo Router's code and status, charged 1; a listed document costs what was worked
// out when it was added.
func TestDocumentsModes(t *testing.T) {
	apq := func(hash string) string {
		return `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + hash + `"}}}`
	}
	listedHash, unknownHash := documents.Hash(listPetsBody), strings.Repeat("ab", 32)
	text, _ := json.Marshal(map[string]any{"query": listPetsBody, "variables": map[string]any{"limit": 2}})
	ok := gqlAnswer{status: 200, cost: 1, data: true}
	notInList := gqlAnswer{status: 404, code: "PERSISTED_QUERY_NOT_IN_LIST", cost: 1}
	idRequired := gqlAnswer{status: 400, code: "PERSISTED_QUERY_ID_REQUIRED", cost: 1}
	notSafe := gqlAnswer{status: 403, code: "QUERY_NOT_IN_SAFELIST", cost: 1}
	cases := []struct {
		name string
		req  request
		want map[graph.DocumentsMode]gqlAnswer
	}{
		{"documentId", post("/v1/graphql", `{"documentId":"list-pets","variables":{"limit":3}}`), map[graph.DocumentsMode]gqlAnswer{"any": ok, "listed": ok, "ids": ok}},
		{"sha256 documentId", post("/v1/graphql", `{"documentId":"sha256:`+listedHash+`"}`), map[graph.DocumentsMode]gqlAnswer{"any": ok, "listed": ok, "ids": ok}},
		{"GET documentId", get("/v1/graphql?documentId=list-pets&variables=" + url.QueryEscape(`{"limit":1}`)), map[graph.DocumentsMode]gqlAnswer{"any": ok, "listed": ok, "ids": ok}},
		{"priced once", post("/v1/graphql", `{"documentId":"d00d"}`), map[graph.DocumentsMode]gqlAnswer{"ids": {status: 200, cost: 2, data: true}}},
		{"unknown documentId", post("/v1/graphql", `{"documentId":"nope"}`), map[graph.DocumentsMode]gqlAnswer{"any": notInList, "listed": notInList, "ids": notInList}},
		{"GET unknown documentId", get("/v1/graphql?documentId=nope"), map[graph.DocumentsMode]gqlAnswer{"any": notInList, "ids": notInList}},
		{"documentId and query", post("/v1/graphql", `{"documentId":"list-pets","query":"{ pets { id } }"}`), map[graph.DocumentsMode]gqlAnswer{"any": {status: 400, code: "INVALID_REQUEST", cost: 1}}},
		{"listed APQ hash", post("/v1/graphql", apq(listedHash)), map[graph.DocumentsMode]gqlAnswer{"any": ok, "listed": ok, "ids": ok}},
		{"unknown APQ hash", post("/v1/graphql", apq(unknownHash)), map[graph.DocumentsMode]gqlAnswer{"any": {status: 200, code: "PERSISTED_QUERY_NOT_FOUND", cost: 1}, "listed": notInList, "ids": notInList}},
		{"listed text", post("/v1/graphql", string(text)), map[graph.DocumentsMode]gqlAnswer{"any": ok, "listed": ok, "ids": idRequired}},
		{"other text", post("/v1/graphql", `{"query":"{ pets { id } }"}`), map[graph.DocumentsMode]gqlAnswer{"any": ok, "listed": notSafe, "ids": idRequired}},
		{"GET other text", get("/v1/graphql?query=" + url.QueryEscape("{ pets { id } }")), map[graph.DocumentsMode]gqlAnswer{"any": ok, "listed": notSafe, "ids": idRequired}},
		{"APQ registration", post("/v1/graphql", `{"query":"{ pets { name } }","extensions":{"persistedQuery":{"version":1,"sha256Hash":"`+documents.Hash("{ pets { name } }")+`"}}}`),
			map[graph.DocumentsMode]gqlAnswer{"any": ok, "listed": notSafe, "ids": idRequired}},
		{"listed subscription by GET", get("/v1/graphql?documentId=c0ffee"), map[graph.DocumentsMode]gqlAnswer{"ids": {status: 405, code: "METHOD_NOT_ALLOWED", cost: 1}}},
	}
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		listDocuments(t, db)
		for _, mode := range []graph.DocumentsMode{graph.DocumentsAny, graph.DocumentsListed, graph.DocumentsIDs} {
			cfg := app.DefaultConfig()
			cfg.GraphQL.DocumentsMode = string(mode)
			api := newTestAPIConfig(t, db, cfg)
			for _, c := range cases {
				want, ok := c.want[mode]
				if !ok {
					continue
				}
				if got := answerOf(t, api.do(t, c.req)); got != want {
					t.Errorf("%s, %s: got %+v; want %+v", mode, c.name, got, want)
				}
			}
		}
	})
}

// TestDocumentsAnswerJSON: a refusal's status does not depend on the media type asked for.
func TestDocumentsAnswerJSON(t *testing.T) {
	db := dbtestSQLite(t)
	cfg := app.DefaultConfig()
	cfg.GraphQL.DocumentsMode = string(graph.DocumentsIDs)
	api := newTestAPIConfig(t, db, cfg)
	for _, accept := range []string{"application/json", "application/graphql-response+json"} {
		req := post("/v1/graphql", `{"query":"{ pets { id } }"}`)
		req.header = http.Header{"Accept": {accept}}
		if got := answerOf(t, api.do(t, req)); got.status != http.StatusBadRequest || got.code != "PERSISTED_QUERY_ID_REQUIRED" {
			t.Errorf("Accept %s: %+v; want 400 PERSISTED_QUERY_ID_REQUIRED", accept, got)
		}
	}
}

// TestDocumentsPlaygroundNotice: under listed and ids the playground says what runs and how an
// app registers its documents; under any it says nothing of them.
func TestDocumentsPlaygroundNotice(t *testing.T) {
	db := dbtestSQLite(t)
	for mode, want := range map[graph.DocumentsMode]string{
		graph.DocumentsAny: "", graph.DocumentsListed: "QUERY_NOT_IN_SAFELIST", graph.DocumentsIDs: "PERSISTED_QUERY_ID_REQUIRED",
	} {
		cfg := app.DefaultConfig()
		cfg.GraphQL.DocumentsMode = string(mode)
		api := newTestAPIConfig(t, db, cfg)
		resp := api.do(t, request{method: http.MethodGet, path: "/v1/playground", noAuth: true})
		notice := strings.Contains(resp.body, `class="notice"`)
		if resp.status != http.StatusOK || notice != (want != "") || !strings.Contains(resp.body, want) ||
			(want != "" && !strings.Contains(resp.body, "petstore documents add")) {
			t.Errorf("%s: %d, notice %v; want one naming %q and documents add", mode, resp.status, notice, want)
		}
	}
}
