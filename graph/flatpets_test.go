package graph_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"petstore/graph"
	"petstore/models"
	"petstore/store"
	"petstore/store/pets"
	"petstore/testkit/dbtest"
)

// TestFlatPetsMatchGeneric checks that a flat list of pets, which pets(limit:) writes on the
// flat path, reads byte for byte like the same pets written by gqlgen's generic path, which
// petsConnection's nodes take: for every way of spelling a selection, and for names that need
// escaping (invalid UTF-8 included) and a missing status.
func TestFlatPetsMatchGeneric(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	names := []string{"Rex", `quote " back \ slash`, "tab\tnew\nline\rcr\x00nul\x1funit", "<b>&amp;</b>", "ünïcødé 🐕", "bad \xff\xfe utf8", "\u2028\u2029"}
	statuses := []any{"available", nil, "pending", "sold", nil, "available", "sold"}
	for i, name := range names {
		if err := db.Exec("INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)", name, int64(1)<<62+int64(i), statuses[i]).Error; err != nil {
			t.Fatal(err)
		}
	}
	h := graph.NewHandler(graph.NewResolver(pets.New(db, store.DefaultTimeout, nil), graph.ResolverOptions{}), graph.Options{})
	selections := []struct {
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
	for _, tc := range selections {
		decl := ""
		if tc.vars != nil {
			decl = "($v: Boolean!)"
		}
		query := "query" + decl + " { flat: pets(limit: 20) { " + tc.sel + " } generic: petsConnection(first: 20) { edges { node { " + tc.sel + " } } } }\n" + tc.fragments
		body, _ := json.Marshal(map[string]any{"query": query, "variables": tc.vars})
		a := (&server{h: h}).do(t, request{method: http.MethodPost, target: "/", body: string(body), header: map[string]string{"Accept": acceptJSON}})
		var data struct {
			Flat    []json.RawMessage
			Generic struct {
				Edges []struct{ Node json.RawMessage }
			}
		}
		if err := json.Unmarshal(a.data, &data); err != nil || a.status != http.StatusOK || len(a.errors) > 0 {
			t.Fatalf("%s: got %d %s (%v)", tc.sel, a.status, a.body, err)
		}
		if len(data.Flat) != len(names) || len(data.Generic.Edges) != len(names) {
			t.Fatalf("%s: got %d and %d pets; want %d: %s", tc.sel, len(data.Flat), len(data.Generic.Edges), len(names), a.body)
		}
		for i, flat := range data.Flat {
			if generic := data.Generic.Edges[i].Node; string(flat) != string(generic) {
				t.Errorf("%s: pet %d:\nflat    %s\ngeneric %s", tc.sel, i, flat, generic)
			}
		}
	}
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
