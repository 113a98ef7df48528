package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"petstore/app"
	"petstore/models"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestGraphQLPagesMatchREST checks, on both stores with the page cache on and off, that the
// pages GraphQL answers directly hold what REST's same pages hold: pets(limit:20) the pets of
// ?limit=20, petsConnection(first:100) those of ?limit=100 with REST's next cursor as its
// endCursor, and the page after it; that the same query answers the same bytes again (from the
// page cache when it is on); and that each costs one unit, in extensions.cost and in
// X-RateLimit-Remaining.
func TestGraphQLPagesMatchREST(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		for _, cached := range []bool{true, false} {
			cfg := app.DefaultConfig()
			if !cached {
				cfg.PageCacheBytes = 0
			}
			api := newTestAPIConfig(t, db, cfg)
			if cached { // one database: the pets, once
				for i := range 130 { // names that need no escaping, then some that do, from the 25th on
					name := fmt.Sprintf("pet %d", i)
					if i >= 24 {
						name = fmt.Sprintf("<pet> & %d", i)
					}
					api.do(t, post("/v1/pets", fmt.Sprintf(`{"name":%q,"categoryId":%d,"status":"sold"}`, name, i%7+1)))
				}
			}
			rest20, _ := restPage(t, api, "/v1/pets?limit=20")
			var list struct{ Pets []gqlPet }
			api.gqlPage(t, `{ pets(limit: 20) { id name categoryId status } }`, &list)
			samePets(t, "pets(limit:20)", list.Pets, rest20)

			rest100, next := restPage(t, api, "/v1/pets?limit=100")
			fields := `{ edges { cursor node { id name categoryId status } } pageInfo { hasNextPage endCursor } }`
			var page struct {
				PetsConnection struct {
					Edges []struct {
						Cursor string
						Node   gqlPet
					}
					PageInfo struct {
						HasNextPage bool
						EndCursor   string
					}
				}
			}
			api.gqlPage(t, "{ petsConnection(first: 100) "+fields+" }", &page)
			c := page.PetsConnection
			nodes := make([]gqlPet, len(c.Edges))
			for i, e := range c.Edges {
				nodes[i] = e.Node
				if want := models.EncodeCursor(rest100[i].ID); e.Cursor != want {
					t.Errorf("edge %d: cursor %q; want %q", i, e.Cursor, want)
				}
			}
			samePets(t, "petsConnection(first:100)", nodes, rest100)
			if after := next.Query().Get("after"); !c.PageInfo.HasNextPage || c.PageInfo.EndCursor != after {
				t.Errorf("pageInfo: %+v; want a next page after %q, REST's", c.PageInfo, after)
			}
			rest2, _ := restPage(t, api, next.RequestURI())
			conn := "query($after: String) { petsConnection(first: 100, after: $after) " + fields + " }"
			body, _ := json.Marshal(map[string]any{"query": conn, "variables": map[string]any{"after": c.PageInfo.EndCursor}})
			var second gqlResponse
			mustJSON(t, json.RawMessage(api.do(t, post("/v1/graphql", string(body))).body), &second)
			var p2 struct {
				PetsConnection struct{ Edges []struct{ Node gqlPet } }
			}
			mustJSON(t, second.Data, &p2)
			if len(p2.PetsConnection.Edges) != len(rest2) || p2.PetsConnection.Edges[0].Node.ID != fmt.Sprint(rest2[0].ID) {
				t.Errorf("page 2: got %d pets from %+v; want %d from %d", len(p2.PetsConnection.Edges), p2.PetsConnection.Edges[0].Node, len(rest2), rest2[0].ID)
			}
		}
	})
}

// restPage returns the pets of the REST page at path and the address of the next page.
func restPage(t *testing.T, api *testAPI, path string) ([]models.Pet, *url.URL) {
	t.Helper()
	resp := api.do(t, get(path))
	var pets []models.Pet
	if err := json.Unmarshal([]byte(resp.body), &pets); resp.status != http.StatusOK || err != nil {
		t.Fatalf("GET %s: got %d %.200s", path, resp.status, resp.body)
	}
	link, _, _ := strings.Cut(resp.header.Get("Link"), ">")
	next, err := url.Parse(strings.TrimPrefix(link, "<"))
	if err != nil {
		t.Fatalf("GET %s: Link %q", path, resp.header.Get("Link"))
	}
	return pets, next
}

// gqlPage posts query twice and decodes its data into v: both answers must be the same bytes
// with their Content-Length, cost one unit (extensions.cost) and take one from
// X-RateLimit-Remaining.
func (api *testAPI) gqlPage(t *testing.T, query string, v any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	first := api.do(t, post("/v1/graphql", string(body)))
	again := api.do(t, post("/v1/graphql", string(body)))
	if first.status != http.StatusOK || again.body != first.body {
		t.Fatalf("%s: got %d %.300s, then %.300s; want 200 and the same answer", query, first.status, first.body, again.body)
	}
	if n := first.header.Get("Content-Length"); n != strconv.Itoa(len(first.body)) {
		t.Errorf("%s: Content-Length %q; want %d, as REST's answers have theirs", query, n, len(first.body))
	}
	if left := remainingOf(t, first) - remainingOf(t, again); left != 1 {
		t.Errorf("%s: X-RateLimit-Remaining dropped by %d; want 1", query, left)
	}
	var resp struct {
		gqlResponse
		Extensions struct{ Cost int }
	}
	if err := json.Unmarshal([]byte(first.body), &resp); err != nil || len(resp.Errors) > 0 || resp.Extensions.Cost != 1 {
		t.Fatalf("%s: got %.300s (%v); want data, no errors and extensions.cost 1", query, first.body, err)
	}
	mustJSON(t, resp.Data, v)
}

// samePets fails t unless the pets GraphQL listed are REST's.
func samePets(t *testing.T, what string, got []gqlPet, want []models.Pet) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d pets; REST lists %d", what, len(got), len(want))
	}
	for i, p := range want {
		if g := got[i]; g.ID != fmt.Sprint(p.ID) || g.Name != p.Name || g.CategoryID != fmt.Sprint(p.CategoryID) || g.Status == nil ||
			*g.Status != strings.ToUpper(string(*p.Status)) {
			t.Errorf("%s: pet %d is %+v; REST lists %+v", what, i, g, p)
		}
	}
}
