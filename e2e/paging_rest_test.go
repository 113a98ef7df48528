package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"petstore/apierr"
	"petstore/models"
)

var nextLink = regexp.MustCompile(`^<(/v1/pets\?[^>]+)>; rel="next"$`)

// TestPagingREST pages through 250 animals with the Link header while more are being added:
// every animal that existed at the start is seen exactly once, in id order.
func TestPagingREST(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		seedPets(t, api, 250)
		seen := map[int64]bool{}
		last := int64(0)
		path, pages := "/v1/pets?limit=30", 0
		for path != "" {
			resp := api.do(t, get(path))
			var pets []models.Pet
			if err := json.Unmarshal([]byte(resp.body), &pets); err != nil || resp.status != 200 {
				t.Fatalf("%s: got %d %s", path, resp.status, resp.body)
			}
			for _, p := range pets {
				if seen[p.ID] || p.ID <= last {
					t.Fatalf("page %d: pet %d repeated or out of order (after %d)", pages, p.ID, last)
				}
				seen[p.ID], last = true, p.ID
			}
			// Animals added while paging appear on later pages.
			api.do(t, post("/v1/pets", `{"name":"late","categoryId":2,"status":"sold"}`))
			path = ""
			if m := nextLink.FindStringSubmatch(resp.header.Get("Link")); m != nil {
				path = m[1]
			} else if resp.header.Get("Link") != "" {
				t.Fatalf("Link: got %q", resp.header.Get("Link"))
			}
			if pages++; pages > 100 {
				t.Fatal("paging does not end")
			}
		}
		for id := int64(1); id <= 250; id++ {
			if !seen[id] {
				t.Errorf("pet %d never seen", id)
			}
		}
		if !seen[last] || last < 250+int64(pages)-2 {
			t.Errorf("pets added while paging: last seen %d after %d pages", last, pages)
		}
	})
}

// TestPagingRESTKeepsFilters checks that the next link keeps limit and status, and that a
// filtered walk sees exactly the pets of that status.
func TestPagingRESTKeepsFilters(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	seedPets(t, api, 50) // statuses cycle available, pending, sold: 16 sold
	var sold []int64
	path := "/v1/pets?status=sold&limit=5"
	for path != "" {
		resp := api.do(t, get(path))
		var pets []models.Pet
		mustJSON(t, json.RawMessage(resp.body), &pets)
		for _, p := range pets {
			sold = append(sold, p.ID)
		}
		path = ""
		if m := nextLink.FindStringSubmatch(resp.header.Get("Link")); m != nil {
			path = m[1]
			if !strings.Contains(path, "status=sold") || !strings.Contains(path, "limit=5") {
				t.Errorf("next link %q lost the filters", path)
			}
		}
	}
	if len(sold) != 16 || sold[0] != 3 || sold[15] != 48 {
		t.Errorf("sold pets: got %v; want the 16 ids 3, 6, ..., 48", sold)
	}
	if resp := api.do(t, get("/v1/pets?limit=100")); resp.header.Get("Link") != "" {
		t.Errorf("a last page carries Link %q", resp.header.Get("Link"))
	}
}

func TestBadCursors(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	for _, cursor := range []string{"", "abc", "cGV0OnYxOng", "cGV0OnYxOi0x", "%3D%3D", "cGV0OnYxOjE&after=cGV0OnYxOjE"} {
		checkError(t, api.do(t, get("/v1/pets?after="+cursor)), http.StatusBadRequest, apierr.InvalidRequest, "after")
		if codes := api.gql(t, `query($a: String) { petsConnection(after: $a) { edges { cursor } } }`, map[string]any{"a": cursor}).codes(); len(codes) != 1 || codes[0] != "INVALID_REQUEST" {
			t.Errorf("petsConnection(after: %q): got codes %v; want INVALID_REQUEST", cursor, codes)
		}
	}
	if codes := api.gql(t, `{ petsConnection(first: 101) { edges { cursor } } }`, nil); len(codes.Errors) != 1 || !strings.Contains(codes.Errors[0].Message, "first") {
		t.Errorf("first: 101: got %+v; want an error naming first", codes.Errors)
	}
}

// seedPets adds n pets whose statuses cycle available, pending, sold.
func seedPets(t *testing.T, api *testAPI, n int) {
	t.Helper()
	statuses := []string{"available", "pending", "sold"}
	for i := range n {
		resp := api.do(t, post("/v1/pets", fmt.Sprintf(`{"name":"pet%d","categoryId":1,"status":%q}`, i+1, statuses[i%3])))
		if resp.status != http.StatusCreated {
			t.Fatalf("seed: got %d %s", resp.status, resp.body)
		}
	}
}
