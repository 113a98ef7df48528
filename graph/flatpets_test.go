package graph_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"petstore/graph"
	"petstore/migrations"
	"petstore/models"
	"petstore/store"
	"petstore/store/pets"
	"petstore/testkit/dbtest"
)

// flatPair is the same service twice over one database: its lists on their flat paths and
// its pages answered directly, and everything on gqlgen's generic path (graph.GenericLists),
// the reference the fast paths are held to.
type flatPair struct{ flat, generic *server }

// newFlatPair stores pets with names that need escaping (invalid UTF-8 but on MySQL, which
// refuses it) and a missing status, and returns the pair over them; the flat side reads
// through a page cache when cached is true.
func newFlatPair(t testing.TB, dialect string, cached bool) flatPair {
	t.Helper()
	db := dbtest.New(t, dialect)
	names := []string{"Rex", `quote " back \ slash`, "tab\tnew\nline\rcr\x00nul\x1funit", "ünïcødé 🐕", "<b>&amp;</b>", "\u2028\u2029", "bad \xff\xfe utf8"}
	if dialect == migrations.MySQL {
		names = names[:len(names)-1]
	}
	statuses := []any{"available", nil, "pending", "sold", nil, "available", "sold"}
	for i, name := range names {
		if err := db.Exec("INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)", name, int64(1)<<62+int64(i), statuses[i]).Error; err != nil {
			t.Fatal(err)
		}
	}
	var cache *pets.PageCache
	if cached {
		cache = pets.NewPageCache(1<<20, nil)
	}
	r := graph.NewResolver(pets.New(db, store.DefaultTimeout, cache), graph.ResolverOptions{})
	return flatPair{
		flat:    &server{h: graph.NewHandler(r, graph.Options{})},
		generic: &server{h: graph.NewHandler(graph.GenericLists(graph.NewResolver(pets.New(db, store.DefaultTimeout, nil), graph.ResolverOptions{})), graph.Options{})},
	}
}

// compare sends body to both sides, to the flat side twice (the second time with its direct
// answer made before), and fails unless their answers are the same: status, Content-Type and body,
// byte for byte.
func (p flatPair) compare(t testing.TB, body string) answer {
	t.Helper()
	req := request{method: http.MethodPost, target: "/", body: body, header: map[string]string{"Accept": acceptJSON}}
	generic := p.generic.do(t, req)
	var flat answer
	for range 2 {
		flat = p.flat.do(t, req)
		if flat.status != generic.status || flat.header.Get("Content-Type") != generic.header.Get("Content-Type") || flat.body != generic.body {
			t.Fatalf("%s:\nflat    %d %s %s\ngeneric %d %s %s", body, flat.status, flat.header.Get("Content-Type"), flat.body,
				generic.status, generic.header.Get("Content-Type"), generic.body)
		}
	}
	return flat
}

// flatSelections are ways of spelling a selection of Pet: aliases, repeats, fragments,
// directives, variables.
var flatSelections = []struct {
	sel, fragments string
	vars           map[string]any
}{
	{sel: "id name categoryId status"},
	{sel: "status categoryId name id __typename"},
	{sel: "__typename"},
	{sel: "a: id b: name c: categoryId d: status e: __typename"},
	{sel: "name name id a: name"},
	{sel: "...F status", fragments: "fragment F on Pet { id name }"},
	{sel: "... on Pet { categoryId } ... { name }"},
	{sel: "id @skip(if: true) name @include(if: false) status"},
	{sel: "id @skip(if: $v) name @include(if: $v) status", vars: map[string]any{"v": true}},
	{sel: "id @skip(if: $v) name @include(if: $v) status", vars: map[string]any{"v": false}},
}

// TestFlatListsMatchGeneric checks that the flat paths of lists (a list of pets, a
// connection's edges) and the direct answers of one page answer byte for byte as gqlgen's
// generic path does, on both stores, with
// and without the page cache: for every way of spelling the selections of a pet and of an edge,
// for names that need escaping (in pages of 3, whose answers need none, and of 20), for a
// missing status, and beside errors.
func TestFlatListsMatchGeneric(t *testing.T) {
	for _, dialect := range dbtest.Dialects {
		for _, cached := range []bool{false, true} {
			t.Run(dialect+map[bool]string{false: "", true: "/cached"}[cached], func(t *testing.T) {
				p := newFlatPair(t, dialect, cached)
				for _, tc := range flatSelections {
					decl := ""
					if tc.vars != nil {
						decl = "($v: Boolean!)"
					}
					for _, n := range []int{3, 20} {
						for _, edge := range []string{
							"cursor node { " + tc.sel + " }",
							"__typename n: node { " + tc.sel + " } cursor c: cursor node { id }",
							"...E", "... on PetEdge { node { " + tc.sel + " } } cursor",
						} {
							list := "pets(limit: " + strconv.Itoa(n) + ") { " + tc.sel + " }"
							conn := "petsConnection(first: " + strconv.Itoa(n) + ") { edges { " + edge + " } pageInfo { hasNextPage endCursor } }"
							fragments := tc.fragments
							if edge == "...E" {
								fragments += "\nfragment E on PetEdge { cursor node { " + tc.sel + " } }"
							}
							for _, root := range []string{list, conn, list + " " + conn} { // one root field: the direct path
								p.compare(t, marshal(map[string]any{"query": "query" + decl + " { " + root + " }\n" + fragments, "variables": tc.vars}))
							}
						}
					}
				}
				for _, query := range []string{
					`{ c: petsConnection(first: 2) { __typename e: edges { cursor } p: pageInfo { __typename hasNextPage hasPreviousPage startCursor endCursor } } }`,
					`{ petsConnection(first: 2, status: SOLD) { pageInfo { ...I } edges { node { id } } } } fragment I on PageInfo { endCursor startCursor }`,
					`{ petsConnection(after: "cGV0OnYxOjEwMDA", first: 2) { edges { cursor } pageInfo { startCursor endCursor hasNextPage } } }`,
					`{ petsConnection(first: 2) { edges { cursor } edges { node { id } } pageInfo { hasNextPage } pageInfo { endCursor } } }`,
					`query($f: Int = 2, $s: PetStatus) { petsConnection(first: $f, status: $s) { edges { cursor } } }`,
					`{ pets(status: AVAILABLE, limit: 100) { id } }`, `{ pets { ... on Pet { name } } }`, `{ __typename pets { id } }`,
					`{ pets(limit: 0) { id } }`, `{ petsConnection(after: "bogus") { edges { cursor } } }`, `{ petsConnection(first: 101) { pageInfo { hasNextPage } } }`,
					`{ petsConnection { edges { cursor } pageInfo @skip(if: true) { hasNextPage } } }`,
				} {
					p.compare(t, marshal(map[string]any{"query": query}))
				}
				// An error beside flat lists: the lists are still written, and the error listed.
				a := p.compare(t, marshal(map[string]any{"query": `{ pets(limit: 3) { id } petsConnection(first: 3) { edges { cursor node { name } } } pet(id: 99) { id } }`}))
				if a.code() != "NOT_FOUND" || !strings.Contains(string(a.data), `"cursor":`) {
					t.Errorf("an unknown pet beside lists: got %s; want NOT_FOUND and the lists", a.body)
				}
			})
		}
	}
}

// FuzzFlatLists checks that any request answers byte for byte the same with the flat paths of
// lists and the direct answers of one page as with gqlgen's generic path: status, Content-Type and body, errors included.
func FuzzFlatLists(f *testing.F) {
	for _, q := range []string{
		`{ pets { id name categoryId status } }`,
		`{ petsConnection(first: 100) { edges { cursor node { id name categoryId status } } pageInfo { hasNextPage endCursor } } }`,
		`{ a: petsConnection(first: 2) { edges { c: cursor n: node { i: id __typename } __typename } } b: pets(limit: 2) { name } }`,
		`query($s: Boolean!) { petsConnection { edges { cursor @skip(if: $s) node { id @include(if: $s) name } } } }`,
		`query($n: Int) { petsConnection(first: $n) { edges { ...E } } } fragment E on PetEdge { node { ...P } cursor } fragment P on Pet { id status }`,
		`{ petsConnection(first: 0) { edges { cursor } } }`,
		`{ petsConnection { edges { node { id } node { name } } } pets { id ... on Pet { id name } } }`,
		`{ petsConnection { edges { node { nope } } } }`,
	} {
		f.Add(q, `{"s": true, "n": 3}`)
		f.Add(q, `{"s": false}`)
	}
	p := newFlatPair(f, "sqlite", true)
	f.Fuzz(func(t *testing.T, query, vars string) {
		body := map[string]any{"query": query}
		if json.Valid([]byte(vars)) && strings.HasPrefix(strings.TrimSpace(vars), "{") {
			body["variables"] = json.RawMessage(vars)
		}
		p.compare(t, marshal(body))
	})
}

// TestFlatPetsFallBack checks that selections the flat path does not take still answer.
func TestFlatPetsFallBack(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	if err := db.Create(&models.Pet{Name: "Rex", CategoryID: 1}).Error; err != nil {
		t.Fatal(err)
	}
	s := &server{h: graph.NewHandler(graph.NewResolver(pets.New(db, store.DefaultTimeout, nil), graph.ResolverOptions{}), graph.Options{})}
	a := s.do(t, post(`{ pets { id ... on Query { __typename } } }`, acceptJSON))
	if a.status != http.StatusOK || a.code() != "INVALID_REQUEST" {
		t.Errorf("a fragment on the wrong type: got %d %s; want a validation error", a.status, a.body)
	}
	a = s.do(t, post(`{ pets { id name } }`, acceptJSON))
	if want := `{"pets":[{"id":"1","name":"Rex"}]}`; string(a.data) != want {
		t.Errorf("got %s; want %s", a.data, want)
	}
}
