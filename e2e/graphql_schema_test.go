package e2e

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// TestGraphQLSchemaDownload fetches /v1/graphql/schema.graphql without a key and finds in it
// exactly the types, fields and deprecations that a keyed introspection query reports.
func TestGraphQLSchemaDownload(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	req := get("/v1/graphql/schema.graphql")
	req.noAuth = true
	resp := api.do(t, req)
	if resp.status != 200 {
		t.Fatalf("GET /v1/graphql/schema.graphql: got %d %s; want 200", resp.status, resp.body)
	}
	if got := resp.header.Get("Content-Type"); got != "text/plain; charset=utf-8" {
		t.Errorf("Content-Type: got %q; want text/plain; charset=utf-8", got)
	}
	if got := resp.header.Get("X-RateLimit-Limit"); got != "" {
		t.Errorf("X-RateLimit-Limit: got %q; want none (the schema is not an API call, like the OpenAPI document)", got)
	}
	schema, err := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphql", Input: resp.body})
	if err != nil {
		t.Fatalf("the downloaded schema does not load: %v", err)
	}
	got := map[string][]string{}
	for name, def := range schema.Types {
		if def.BuiltIn {
			continue
		}
		got[name] = fieldsOf(def.Fields, def.EnumValues)
	}
	if want := introspectedTypes(t, api); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("the downloaded schema has\n%v\nintrospection says\n%v", got, want)
	}
	if pet := schema.Query.Fields.ForName("pet"); pet == nil || pet.Directives.ForName("deprecated") == nil {
		t.Error("Query.pet: got no @deprecated; want it kept")
	}
}

// fieldsOf lists a type's fields (name and type) or enum values, sorted, leaving out the
// __schema and __type that gqlparser adds to Query.
func fieldsOf(fields ast.FieldList, values ast.EnumValueList) []string {
	var out []string
	for _, f := range fields {
		if !strings.HasPrefix(f.Name, "__") {
			out = append(out, f.Name+": "+f.Type.String())
		}
	}
	for _, v := range values {
		out = append(out, v.Name)
	}
	slices.Sort(out)
	return out
}

// introspectedTypes returns what introspection says of the schema's own types: each type's
// fields, input fields or enum values, deprecated ones included, as fieldsOf lists them.
func introspectedTypes(t *testing.T, api *testAPI) map[string][]string {
	t.Helper()
	const query = `{ __schema { types { name
  fields(includeDeprecated: true) { name type { ...T } }
  inputFields { name type { ...T } }
  enumValues(includeDeprecated: true) { name } } } }
fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }`
	res := api.gql(t, query, nil)
	if len(res.Errors) > 0 {
		t.Fatalf("introspection: %v", res.Errors)
	}
	var data struct {
		Schema struct {
			Types []struct {
				Name        string
				Fields      []introField
				InputFields []introField
				EnumValues  []struct{ Name string }
			}
		} `json:"__schema"`
	}
	if err := json.Unmarshal(res.Data, &data); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, ty := range data.Schema.Types {
		if strings.HasPrefix(ty.Name, "__") || slices.Contains([]string{"String", "Int", "Float", "Boolean", "ID"}, ty.Name) {
			continue
		}
		var list []string
		for _, f := range append(ty.Fields, ty.InputFields...) {
			list = append(list, f.Name+": "+f.Type.String())
		}
		for _, v := range ty.EnumValues {
			list = append(list, v.Name)
		}
		slices.Sort(list)
		out[ty.Name] = list
	}
	return out
}

// introField is a field or input field as introspection describes it.
type introField struct {
	Name string
	Type introType
}

// introType is an introspected type reference.
type introType struct {
	Kind, Name string
	OfType     *introType
}

// String spells the type as SDL does: [Pet!]!.
func (ty introType) String() string {
	switch {
	case ty.Kind == "NON_NULL" && ty.OfType != nil:
		return ty.OfType.String() + "!"
	case ty.Kind == "LIST" && ty.OfType != nil:
		return "[" + ty.OfType.String() + "]"
	}
	return ty.Name
}
