package guard

import (
	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/introspection"
	"github.com/vektah/gqlparser/v2/ast"
)

// introspectionCost returns how many fields running the __schema and __type fields of the
// operation of opCtx resolves on schema, each field counted once for each object it is
// resolved on, and stops counting at limit+1. It collects fields as gqlgen's executor does
// (aliases, fragments, @skip and @include) and walks the very objects the executor resolves
// them on, so that the count is what running them costs, list lengths included; only
// deprecated fields and enum values, which it counts whether asked for or not, make it more.
// It takes time in proportion to the count, up to limit.
func introspectionCost(opCtx *graphql.OperationContext, schema *ast.Schema, limit int) int {
	c := introspectionCounter{opCtx: opCtx, left: limit + 1}
	root := schema.Query
	if opCtx.Operation.Operation == ast.Mutation {
		root = schema.Mutation
	}
	if root == nil {
		return 0
	}
	for _, f := range graphql.CollectFields(opCtx, opCtx.Operation.SelectionSet, []string{root.Name}) {
		switch f.Name {
		case "__schema":
			c.object(f.Selections, introspection.WrapSchema(schema))
		case "__type":
			name, _ := f.ArgumentMap(opCtx.Variables)["name"].(string)
			if t := introspection.WrapTypeFromDef(schema, schema.Types[name]); t != nil {
				c.object(f.Selections, t)
			}
		}
	}
	return limit + 1 - c.left
}

// introspectionCounter counts the fields resolved on introspection objects, down from left.
type introspectionCounter struct {
	opCtx *graphql.OperationContext
	left  int
}

// object counts the fields of sel resolved on obj and on the objects they return.
func (c *introspectionCounter) object(sel ast.SelectionSet, obj any) {
	for _, f := range graphql.CollectFields(c.opCtx, sel, []string{introspectionTypeName(obj)}) {
		if c.left == 0 {
			return
		}
		c.left--
		for _, child := range introspectionChildren(obj, f.Name) {
			if c.left == 0 {
				return
			}
			c.object(f.Selections, child)
		}
	}
}

// introspectionTypeName returns the GraphQL type of an introspection object.
func introspectionTypeName(obj any) string {
	switch obj.(type) {
	case *introspection.Schema:
		return "__Schema"
	case *introspection.Type:
		return "__Type"
	case *introspection.Field:
		return "__Field"
	case *introspection.InputValue:
		return "__InputValue"
	case *introspection.EnumValue:
		return "__EnumValue"
	default:
		return "__Directive"
	}
}

// introspectionChildren returns the objects that field of obj returns: none for a field of a
// scalar, enum or list of them.
func introspectionChildren(obj any, field string) []any {
	switch o := obj.(type) {
	case *introspection.Schema:
		switch field {
		case "types":
			return addresses(o.Types())
		case "queryType":
			return typeOrNone(o.QueryType())
		case "mutationType":
			return typeOrNone(o.MutationType())
		case "subscriptionType":
			return typeOrNone(o.SubscriptionType())
		case "directives":
			return addresses(o.Directives())
		}
	case *introspection.Type:
		switch field {
		case "fields":
			return addresses(o.Fields(true))
		case "inputFields":
			return addresses(o.InputFields())
		case "interfaces":
			return addresses(o.Interfaces())
		case "possibleTypes":
			return addresses(o.PossibleTypes())
		case "enumValues":
			return addresses(o.EnumValues(true))
		case "ofType":
			return typeOrNone(o.OfType())
		}
	case *introspection.Field:
		switch field {
		case "type":
			return typeOrNone(o.Type)
		case "args":
			return addresses(o.Args)
		}
	case *introspection.InputValue:
		if field == "type" {
			return typeOrNone(o.Type)
		}
	case *introspection.Directive:
		if field == "args" {
			return addresses(o.Args)
		}
	}
	return nil
}

// addresses returns the addresses of the elements of s.
func addresses[T any](s []T) []any {
	out := make([]any, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}

// typeOrNone returns t alone, or nothing when t is nil.
func typeOrNone(t *introspection.Type) []any {
	if t == nil {
		return nil
	}
	return []any{t}
}
