package e2e

import (
	"fmt"
	"testing"
)

func TestPagingGraphQL(t *testing.T) {
	t.Parallel()
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

// connPage is a petsConnection page with every field of its PageInfo.
type connPage struct {
	Edges    []struct{ Cursor string }
	PageInfo struct {
		HasNextPage, HasPreviousPage bool
		StartCursor, EndCursor       *string
	}
}

// TestPagingGraphQLPageInfo walks 5 pets two at a time, then past the last, and checks each
// page's PageInfo: startCursor and endCursor the first and last edges' cursors (null on an
// empty page), hasPreviousPage always false (forward paging), hasNextPage while pets follow.
func TestPagingGraphQLPageInfo(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		seedPets(t, api, 5)
		var after any
		for i, want := range []struct{ edges int }{{2}, {2}, {1}, {0}} {
			resp := api.gql(t, `query($after: String) { petsConnection(first: 2, after: $after) { edges { cursor }
				pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`, map[string]any{"after": after})
			var out struct{ PetsConnection connPage }
			mustJSON(t, resp.Data, &out)
			c := out.PetsConnection
			if len(c.Edges) != want.edges {
				t.Fatalf("page %d: got %d edges; want %d", i+1, len(c.Edges), want.edges)
			}
			checkPageInfo(t, i+1, c, i < 2)
			if c.PageInfo.EndCursor != nil {
				after = *c.PageInfo.EndCursor
			}
		}
	})
}

// checkPageInfo checks the PageInfo of page n of a forward walk against its edges.
func checkPageInfo(t *testing.T, n int, c connPage, hasNext bool) {
	t.Helper()
	pi := c.PageInfo
	if pi.HasNextPage != hasNext || pi.HasPreviousPage {
		t.Errorf("page %d: hasNextPage %v, hasPreviousPage %v; want %v, false", n, pi.HasNextPage, pi.HasPreviousPage, hasNext)
	}
	if len(c.Edges) == 0 {
		if pi.StartCursor != nil || pi.EndCursor != nil {
			t.Errorf("page %d: empty, startCursor %v, endCursor %v; want both null", n, pi.StartCursor, pi.EndCursor)
		}
		return
	}
	if first := c.Edges[0].Cursor; pi.StartCursor == nil || *pi.StartCursor != first {
		t.Errorf("page %d: startCursor %v; want the first edge's %q", n, pi.StartCursor, first)
	}
	if last := c.Edges[len(c.Edges)-1].Cursor; pi.EndCursor == nil || *pi.EndCursor != last {
		t.Errorf("page %d: endCursor %v; want the last edge's %q", n, pi.EndCursor, last)
	}
}
