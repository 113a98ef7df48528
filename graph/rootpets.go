package graph

import (
	"bytes"
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// A query of one plain list of pets, { pets(limit: 20) { id name categoryId status } }, is
// what front ends send most. gqlgen's generated Exec runs its one root field as it runs any
// number of them: it collects the root fields, builds two field sets, a map of deferred views
// and closures, dispatches the field, writes the object through a map of the names written,
// and builds the map of input unmarshallers; some 20 allocations that one field does not
// need. lonePetsSchema runs such a query itself, as the generated _Query runs that field: the
// same field contexts, root field middleware, recovery and null propagation, and the same
// bytes (FuzzLonePets compares the two, on its seeds at every go test). Every other operation
// takes the generated Exec.

// lonePetsSchema is the executable schema, with lone-pets queries run by execLonePets.
type lonePetsSchema struct {
	*executableSchema
}

// Exec runs the operation of ctx.
func (e lonePetsSchema) Exec(ctx context.Context) graphql.ResponseHandler {
	opCtx := graphql.GetOperationContext(ctx)
	if field, ok := lonePets(opCtx.Operation); ok {
		return e.execLonePets(opCtx, field)
	}
	return e.executableSchema.Exec(ctx)
}

// lonePets returns the one root field of op when op is a query of one pets field without
// directives whose selection is plain (plainFlatPlan): nothing in it can be deferred, and its
// pets take the flat path.
func lonePets(op *ast.OperationDefinition) (graphql.CollectedField, bool) {
	if op == nil || op.Operation != ast.Query || len(op.SelectionSet) != 1 {
		return graphql.CollectedField{}, false
	}
	f, ok := op.SelectionSet[0].(*ast.Field)
	if !ok || f.Name != "pets" || len(f.Directives) > 0 || plainFlatPlan(f.SelectionSet) == nil {
		return graphql.CollectedField{}, false
	}
	// What CollectFields collects of it, but for the copy of its selections.
	return graphql.CollectedField{Field: f, Selections: f.SelectionSet, IsNonDeferrable: true}, true
}

// execLonePets runs field, the one root field of the query of opCtx, as the generated Exec and
// _Query run it, without the input unmarshallers' map: nothing under pets reads it
// (graphql.UnmarshalInputFromContext), for its arguments are an Int and an enum.
func (e lonePetsSchema) execLonePets(opCtx *graphql.OperationContext, field graphql.CollectedField) graphql.ResponseHandler {
	ec := newExecutionContext(opCtx, e.executableSchema, nil) // nothing deferred: no channel
	first := true
	return func(ctx context.Context) *graphql.Response {
		if !first {
			return nil
		}
		first = false
		ctx = graphql.WithFieldContext(ctx, &graphql.FieldContext{Object: "Query"})
		innerCtx := graphql.WithRootFieldContext(ctx, &graphql.RootFieldContext{Object: field.Name, Field: field})
		invalid := false
		res := ec.OperationContext.RootResolverMiddleware(innerCtx, func(ctx context.Context) (res graphql.Marshaler) {
			defer func() {
				if r := recover(); r != nil {
					ec.Error(ctx, ec.Recover(ctx, r))
				}
			}()
			res = ec._Query_pets(ctx, field)
			if res == graphql.Null {
				invalid = true
			}
			return res
		})
		var buf bytes.Buffer
		if invalid {
			graphql.Null.MarshalGQL(&buf)
		} else { // as graphql.FieldSet writes an object of one field
			var head [64]byte
			buf.Write(append(appendGQLString(append(head[:0], '{'), field.Alias), ':'))
			res.MarshalGQL(&buf)
			buf.WriteByte('}')
		}
		return &graphql.Response{Data: buf.Bytes()}
	}
}
