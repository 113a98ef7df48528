package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// walk is what one reader saw walking the listing from the start to its last page.
type walk struct {
	kind   string // e.g. "rest status=available"
	status string // "" for every status
	seen   []int64
}

// walkREST follows GET /v1/pets next links from the first page to the last.
func (r *pagingRace) walkREST(status string) walk {
	w := walk{kind: "rest status=" + status, status: status}
	path := "/v1/pets?limit=10"
	if status != "" {
		path += "&status=" + status
	}
	for path != "" {
		code, hdr, body := r.call(http.MethodGet, path, "", nil)
		var pets []struct{ ID int64 }
		if err := json.Unmarshal(body, &pets); code != http.StatusOK || err != nil {
			r.t.Errorf("GET %s: got %d %s", path, code, body)
			return walk{}
		}
		for _, p := range pets {
			if !w.add(r.t, p.ID) {
				return walk{}
			}
		}
		r.pages.Add(1)
		path = ""
		if m := nextLink.FindStringSubmatch(hdr.Get("Link")); m != nil {
			path = m[1]
		}
	}
	return w
}

// walkGraphQL follows petsConnection's endCursor from the first page to the last.
func (r *pagingRace) walkGraphQL(status string) walk {
	w := walk{kind: "graphql status=" + status, status: status}
	vars := map[string]any{"after": nil, "status": nil}
	if status != "" {
		vars["status"] = strings.ToUpper(status)
	}
	for {
		body, _ := json.Marshal(map[string]any{"variables": vars, "query": `query($after: String, $status: PetStatus) {
			petsConnection(first: 10, after: $after, status: $status) { edges { node { id } } pageInfo { hasNextPage endCursor } } }`})
		code, _, resp := r.call(http.MethodPost, "/v1/graphql", string(body), nil)
		var out struct {
			Data struct {
				PetsConnection struct {
					Edges    []struct{ Node struct{ ID string } }
					PageInfo struct {
						HasNextPage bool
						EndCursor   *string
					}
				}
			}
			Errors []any
		}
		if err := json.Unmarshal(resp, &out); code != http.StatusOK || err != nil || len(out.Errors) > 0 {
			r.t.Errorf("petsConnection: got %d %s", code, resp)
			return walk{}
		}
		c := out.Data.PetsConnection
		for _, e := range c.Edges {
			id, _ := strconv.ParseInt(e.Node.ID, 10, 64)
			if !w.add(r.t, id) {
				return walk{}
			}
		}
		r.pages.Add(1)
		if !c.PageInfo.HasNextPage {
			return w
		}
		vars["after"] = *c.PageInfo.EndCursor
	}
}

// add appends id to the walk, and fails t unless it follows the last id seen.
func (w *walk) add(t *testing.T, id int64) bool {
	if n := len(w.seen); n > 0 && id <= w.seen[n-1] {
		t.Errorf("%s: pet %d after pet %d: repeated or out of order", w.kind, id, w.seen[n-1])
		return false
	}
	w.seen = append(w.seen, id)
	return true
}

// call sends one request with r's key through the real router.
func (r *pagingRace) call(method, path, body string, hdr http.Header) (int, http.Header, []byte) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+r.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	return rec.Code, rec.Header(), rec.Body.Bytes()
}
