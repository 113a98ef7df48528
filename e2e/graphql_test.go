package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// gqlResponse is a GraphQL response with every error's code.
type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Path       []any          `json:"path"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

func (r gqlResponse) codes() []string {
	var codes []string
	for _, e := range r.Errors {
		code, _ := e.Extensions["code"].(string)
		codes = append(codes, code)
	}
	return codes
}

// gql posts a GraphQL operation through the real handler.
func (api *testAPI) gql(t *testing.T, query string, vars map[string]any) gqlResponse {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	resp := api.do(t, post("/v1/graphql", string(body)))
	var out gqlResponse
	if err := json.Unmarshal([]byte(resp.body), &out); err != nil {
		t.Fatalf("GraphQL answer %d %q: %v", resp.status, resp.body, err)
	}
	return out
}

// gqlPet is a Pet as GraphQL spells it.
type gqlPet struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	CategoryID string  `json:"categoryId"`
	Status     *string `json:"status"`
}

func TestGraphQLOperations(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		created := api.gql(t, `mutation($in: NewPet!) { createPet(input: $in) { id name categoryId status } }`,
			map[string]any{"in": map[string]any{"name": `Zoë "🐈" '; --`, "categoryId": "7", "status": "SOLD"}})
		if len(created.Errors) > 0 {
			t.Fatalf("createPet: %+v", created.Errors)
		}
		var c struct{ CreatePet gqlPet }
		mustJSON(t, created.Data, &c)
		want := gqlPet{ID: "1", Name: `Zoë "🐈" '; --`, CategoryID: "7", Status: ptr("SOLD")}
		if !sameGQLPet(c.CreatePet, want) {
			t.Errorf("createPet: got %+v; want %+v", c.CreatePet, want)
		}

		// The pet created by GraphQL reads back identically over REST, and the reverse.
		rest := decodePet(t, api.do(t, get("/v1/pets/1")).body)
		if fmt.Sprint(rest.ID) != c.CreatePet.ID || rest.Name != c.CreatePet.Name || fmt.Sprint(rest.CategoryID) != c.CreatePet.CategoryID ||
			strings.ToUpper(string(*rest.Status)) != *c.CreatePet.Status {
			t.Errorf("REST reads %+v; GraphQL created %+v", rest, c.CreatePet)
		}
		api.do(t, post("/v1/pets", `{"name":"Rex","categoryId":3}`))
		listed := api.gql(t, `{ pets(limit: 10) { id name categoryId status } sold: pets(status: SOLD) { id } }`, nil)
		var l struct {
			Pets []gqlPet
			Sold []struct{ ID string }
		}
		mustJSON(t, listed.Data, &l)
		if len(l.Pets) != 2 || !sameGQLPet(l.Pets[1], gqlPet{ID: "2", Name: "Rex", CategoryID: "3"}) {
			t.Errorf("pets: got %+v; want the REST-created Rex second, with no status", l.Pets)
		}
		if len(l.Sold) != 1 || l.Sold[0].ID != "1" {
			t.Errorf("pets(status: SOLD): got %+v; want [1]", l.Sold)
		}
		one := api.gql(t, `query($id: ID!) { pet(id: $id) { id name } }`, map[string]any{"id": 2})
		if string(one.Data) != `{"pet":{"id":"2","name":"Rex"}}` {
			t.Errorf("pet(id: 2): got %s", one.Data)
		}
	})
}

func TestGraphQLGet(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	resp := api.do(t, get("/v1/graphql?query="+url.QueryEscape("{ pets { id } }")))
	if resp.status != 200 || !strings.Contains(resp.body, `"pets":[]`) {
		t.Errorf("GET query: got %d %s", resp.status, resp.body)
	}
}

// TestErrorParity checks that the same bad input gets the same code from REST and GraphQL,
// and, where the two spell the input alike, the same message (the rules have one wording).
func TestErrorParity(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		for _, tc := range []struct {
			name        string
			rest        request
			query       string
			wantCode    string
			sameMessage bool // false where the surfaces name or spell the input differently
		}{
			{"limit 0", get("/v1/pets?limit=0"), `{ pets(limit: 0) { id } }`, "INVALID_REQUEST", true},
			{"limit 101", get("/v1/pets?limit=101"), `{ pets(limit: 101) { id } }`, "INVALID_REQUEST", true},
			{"unknown status", get("/v1/pets?status=lost"), `{ pets(status: LOST) { id } }`, "INVALID_REQUEST", false},
			{"blank name", post("/v1/pets", `{"name":"  ","categoryId":1}`), `mutation { createPet(input: {name: "  ", categoryId: 1}) { id } }`, "INVALID_REQUEST", true},
			{"name too long", post("/v1/pets", `{"name":"`+strings.Repeat("x", 256)+`","categoryId":1}`), `mutation { createPet(input: {name: "` + strings.Repeat("x", 256) + `", categoryId: 1}) { id } }`, "INVALID_REQUEST", true},
			{"categoryId 0", post("/v1/pets", `{"name":"Rex","categoryId":0}`), `mutation { createPet(input: {name: "Rex", categoryId: 0}) { id } }`, "INVALID_REQUEST", true},
			{"categoryId negative", post("/v1/pets", `{"name":"Rex","categoryId":-3}`), `mutation { createPet(input: {name: "Rex", categoryId: -3}) { id } }`, "INVALID_REQUEST", true},
			{"categoryId not an integer", post("/v1/pets", `{"name":"Rex","categoryId":"x"}`), `mutation { createPet(input: {name: "Rex", categoryId: "x"}) { id } }`, "INVALID_REQUEST", true},
			{"categoryId overflows", post("/v1/pets", `{"name":"Rex","categoryId":"9223372036854775808"}`), `mutation { createPet(input: {name: "Rex", categoryId: "9223372036854775808"}) { id } }`, "INVALID_REQUEST", true},
			{"name missing", post("/v1/pets", `{"categoryId":1}`), `mutation { createPet(input: {categoryId: 1}) { id } }`, "INVALID_REQUEST", false},
			{"pet not found", get("/v1/pets/4242"), `{ pet(id: 4242) { id } }`, "NOT_FOUND", true},
			{"pet id not an integer", get("/v1/pets/x"), `{ pet(id: "x") { id } }`, "INVALID_REQUEST", false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var e struct{ Code, Message string }
				mustJSON(t, json.RawMessage(api.do(t, tc.rest).body), &e)
				resp := api.gql(t, tc.query, nil)
				codes := resp.codes()
				if strings.ToUpper(e.Code) != tc.wantCode || len(codes) != 1 || codes[0] != tc.wantCode {
					t.Fatalf("REST code %q, GraphQL codes %v; want %s from both", e.Code, codes, tc.wantCode)
				}
				if tc.sameMessage && resp.Errors[0].Message != e.Message {
					t.Errorf("GraphQL says %q; REST says %q: want one wording", resp.Errors[0].Message, e.Message)
				}
			})
		}
		if got := api.do(t, get("/v1/pets")).body; got != "[]" {
			t.Errorf("bad input stored pets: %s", got)
		}
	})
}

func TestGraphQLDeprecation(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	resp := api.gql(t, `{ __type(name: "Query") { fields(includeDeprecated: true) { name isDeprecated deprecationReason } } }`, nil)
	want := `{"name":"pet","isDeprecated":true,"deprecationReason":"Use pets(status:). Removal on 2030-12-05."}`
	if !strings.Contains(string(resp.Data), want) {
		t.Errorf("introspection: got %s; want it to contain %s", resp.Data, want)
	}
}

func TestGraphQLNeedsKey(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	req := post("/v1/graphql", `{"query":"{ pets { id } }"}`)
	req.noAuth = true
	checkError(t, api.do(t, req), http.StatusUnauthorized, "unauthorized", "API key")
}

func mustJSON(t *testing.T, data json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
}

func sameGQLPet(a, b gqlPet) bool {
	deref := func(s *string) string {
		if s == nil {
			return "<nil>"
		}
		return *s
	}
	return a.ID == b.ID && a.Name == b.Name && a.CategoryID == b.CategoryID && deref(a.Status) == deref(b.Status)
}
