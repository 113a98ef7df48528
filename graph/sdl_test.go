package graph_test

import (
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"petstore/graph"
)

// TestSchemaDescribed checks that every type, field, argument, input field and enum value of
// the served schema has a description, so that GraphiQL's docs and generated clients explain
// each of them.
func TestSchemaDescribed(t *testing.T) {
	schema, err := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphql", Input: string(graph.SDL())})
	if err != nil {
		t.Fatalf("the served schema does not load: %v", err)
	}
	var missing []string
	for name, def := range schema.Types {
		if def.BuiltIn {
			continue
		}
		missing = append(missing, undescribed(name, def)...)
	}
	if len(missing) > 0 {
		t.Errorf("%d elements have no description: %s", len(missing), strings.Join(missing, ", "))
	}
}

// undescribed lists the elements of the type def, named name, that have no description: the
// type itself, its fields (those gqlparser adds, __schema and __type, aside), their arguments
// and its enum values.
func undescribed(name string, def *ast.Definition) []string {
	var out []string
	if strings.TrimSpace(def.Description) == "" {
		out = append(out, name)
	}
	for _, f := range def.Fields {
		if strings.HasPrefix(f.Name, "__") {
			continue
		}
		if strings.TrimSpace(f.Description) == "" {
			out = append(out, name+"."+f.Name)
		}
		for _, a := range f.Arguments {
			if strings.TrimSpace(a.Description) == "" {
				out = append(out, name+"."+f.Name+"("+a.Name+":)")
			}
		}
	}
	for _, v := range def.EnumValues {
		if strings.TrimSpace(v.Description) == "" {
			out = append(out, name+"."+v.Name)
		}
	}
	return out
}
