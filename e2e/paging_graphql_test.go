package e2e

import (
	"fmt"
	"testing"
)

func TestPagingGraphQL(t *testing.T) {
	forEachStore(t, func(t *testing.T, api *testAPI) {
		seedPets(t, api, 250)
		var after any
		seen := map[string]bool{}
		for pages := 0; ; pages++ {
			resp := api.gql(t, `query($after: String) { petsConnection(first: 40, after: $after) { edges { cursor node { id name } } pageInfo { hasNextPage endCursor } } }`,
				map[string]any{"after": after})
			var out struct {
				PetsConnection struct {
					Edges []struct {
						Cursor string
						Node   struct{ ID string }
					}
					PageInfo struct {
						HasNextPage bool
						EndCursor   *string
					}
				}
			}
			mustJSON(t, resp.Data, &out)
			c := out.PetsConnection
			for _, e := range c.Edges {
				if seen[e.Node.ID] {
					t.Fatalf("pet %s repeated", e.Node.ID)
				}
				seen[e.Node.ID] = true
			}
			if n := len(c.Edges); n > 0 && (c.PageInfo.EndCursor == nil || *c.PageInfo.EndCursor != c.Edges[n-1].Cursor) {
				t.Errorf("endCursor %v is not the last edge's cursor", c.PageInfo.EndCursor)
			}
			api.gql(t, `mutation { createPet(input: {name: "late", categoryId: 2}) { id } }`, nil)
			if !c.PageInfo.HasNextPage {
				break
			}
			after = *c.PageInfo.EndCursor
			if pages > 100 {
				t.Fatal("paging does not end")
			}
		}
		for id := 1; id <= 250; id++ {
			if !seen[fmt.Sprint(id)] {
				t.Errorf("pet %d never seen", id)
			}
		}
	})
}
