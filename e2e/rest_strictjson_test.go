package e2e

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"petstore/apierr"
)

// createPetQuery is the mutation that the GraphQL bodies below would run if they were taken.
const createPetQuery = `"mutation($in: NewPet!) { createPet(input: $in) { id } }"`

// gqlCreate returns a GraphQL body that creates the pet in, with the members extra after it.
func gqlCreate(in, extra string) string {
	return `{"query":` + createPetQuery + `,"variables":{"in":` + in + `}` + extra + `}`
}

// TestStrictJSON sends REST and GraphQL bodies that JSON parsers read differently: each is
// refused with 400 and a message that says why, and nothing is stored.
func TestStrictJSON(t *testing.T) {
	t.Parallel()
	const pet = `{"name":"Rex","categoryId":1}`
	nest := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	for _, tc := range []struct {
		name, rest, graphql, word string
	}{
		{"invalid UTF-8 in a string", "{\"name\":\"Re\xffx\",\"categoryId\":1}", gqlCreate("{\"name\":\"Re\xffx\",\"categoryId\":1}", ""), "not valid UTF-8"},
		{"invalid UTF-8 in a member name", "{\"name\":\"Rex\",\"categoryId\":1,\"x\xff\":1}", gqlCreate(pet, ",\"x\xff\":1"), "not valid UTF-8"},
		{"lone surrogate", `{"name":"\ud800","categoryId":1}`, gqlCreate(`{"name":"\ud800","categoryId":1}`, ""), "surrogate"},
		{"repeated member", `{"name":"Rex","name":"Max","categoryId":1}`, `{"query":"{ pets { id } }","query":` + createPetQuery + `,"variables":{"in":` + pet + `}}`, "twice"},
		{"repeated member nested", `{"name":"Rex","categoryId":1,"x":{"a":1,"a":2}}`, gqlCreate(`{"name":"Rex","name":"Max","categoryId":1}`, ""), "twice"},
		{"repeated variable", `{"name":"Rex","categoryId":1,"x":[{"a":1,"a":2}]}`, `{"query":` + createPetQuery + `,"variables":{"in":` + pet + `,"in":` + pet + `}}`, "twice"},
		{"repeated unknown member", `{"name":"Rex","categoryId":1,"x":1,"x":2}`, gqlCreate(pet, `,"x":1,"x":2`), "twice"},
		{"case variant instead of the member", `{"Name":"Rex","categoryId":1}`, `{"QUERY":` + createPetQuery + `,"variables":{"in":` + pet + `}}`, ""},
		{"byte order mark", "\ufeff" + pet, "\ufeff" + gqlCreate(pet, ""), "not valid JSON"},
		{"NaN", `{"name":"Rex","categoryId":NaN}`, gqlCreate(`{"name":"Rex","categoryId":NaN}`, ""), "not valid JSON"},
		{"Infinity", `{"name":"Rex","categoryId":Infinity}`, gqlCreate(`{"name":"Rex","categoryId":Infinity}`, ""), "not valid JSON"},
		{"trailing garbage", pet + " x", gqlCreate(pet, "") + " x", "not valid JSON"},
		{"second object", pet + pet, gqlCreate(pet, "") + `{"query":"{ pets { id } }"}`, "not valid JSON"},
		{"deep nesting", `{"name":"Rex","categoryId":1,"x":` + nest + `}`, gqlCreate(pet, `,"x":`+nest), "max depth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, api *testAPI) {
				resp := api.do(t, post("/v1/pets", tc.rest))
				checkError(t, resp, http.StatusBadRequest, apierr.InvalidRequest, cmp.Or(tc.word, "name"))
				checkGraphQLRefusal(t, api.do(t, post("/v1/graphql", tc.graphql)), cmp.Or(tc.word, "no query"))
				if n := countPets(t, api); n != 0 {
					t.Errorf("stored %d pets; want none", n)
				}
			})
		})
	}
}

// TestStrictJSONExactNames checks that a member differing from a known one by case is
// ignored, not taken in its place or over it.
func TestStrictJSONExactNames(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		resp := api.do(t, post("/v1/pets", `{"name":"Rex","NAME":"Max","Name":"Kit","categoryId":1,"CategoryId":2}`))
		if resp.status != http.StatusCreated || !strings.Contains(resp.body, `"name":"Rex","categoryId":1`) {
			t.Errorf("REST: got %d %s; want 201 with name Rex and categoryId 1", resp.status, resp.body)
		}
		resp = api.do(t, post("/v1/graphql", gqlCreate(`{"name":"Ida","categoryId":3}`,
			`,"Query":"{ pets { id } }","VARIABLES":{"in":{"name":"Max","categoryId":4}}`)))
		if resp.status != http.StatusOK || !strings.Contains(resp.body, `"createPet":{"id"`) {
			t.Errorf("GraphQL: got %d %s; want 200 with the pet created", resp.status, resp.body)
		}
		list := api.do(t, get("/v1/pets"))
		if !strings.Contains(list.body, `"name":"Ida","categoryId":3`) || strings.Contains(list.body, "Max") {
			t.Errorf("stored: got %s; want Rex and Ida only", list.body)
		}
	})
}

// TestStrictJSONGet checks that the JSON parameters of a GraphQL GET are read as bodies are,
// and that no parameter may be given twice.
func TestStrictJSONGet(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	query := "query=" + url.QueryEscape(`query($n: Int) { pets(limit: $n) { id } }`)
	for _, tc := range []struct{ name, params, word string }{
		{"repeated variable", "&variables=" + url.QueryEscape(`{"n":1,"n":2}`), `the variables parameter has the member "n" twice`},
		{"invalid UTF-8", "&variables=%7B%22n%22%3A%22%FF%22%7D", "the variables parameter is not valid UTF-8"},
		{"trailing garbage", "&extensions=" + url.QueryEscape(`{} x`), "the extensions parameter is not valid JSON"},
		{"query twice", "&query=" + url.QueryEscape(`{ pets { name } }`), "the query parameter must be given at most once"},
		{"variables twice", "&variables=%7B%7D&variables=%7B%7D", "the variables parameter must be given at most once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGraphQLRefusal(t, api.do(t, get("/v1/graphql?"+query+tc.params)), tc.word)
		})
	}
	if resp := api.do(t, get("/v1/graphql?"+query+"&variables="+url.QueryEscape(`{"n":5}`))); resp.status != http.StatusOK || !strings.Contains(resp.body, `"pets":[]`) {
		t.Errorf("a good GET: got %d %s; want 200 with pets", resp.status, resp.body)
	}
}

// checkGraphQLRefusal checks that resp is a GraphQL request error: 400, no data, one
// INVALID_REQUEST error whose message says word.
func checkGraphQLRefusal(t *testing.T, resp response, word string) {
	t.Helper()
	var body struct {
		Data   *json.RawMessage `json:"data"`
		Errors []struct {
			Message    string         `json:"message"`
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(resp.body), &body); err != nil {
		t.Fatalf("GraphQL answer %d %q: %v", resp.status, resp.body, err)
	}
	if resp.status != http.StatusBadRequest || body.Data != nil || len(body.Errors) != 1 ||
		body.Errors[0].Extensions["code"] != "INVALID_REQUEST" || !strings.Contains(body.Errors[0].Message, word) {
		t.Errorf("GraphQL: got %d %s; want 400, no data, one INVALID_REQUEST error saying %q", resp.status, resp.body, word)
	}
}
