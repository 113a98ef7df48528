package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"petstore/models"
)

// marshalList marshals the elements of a list field: `make generate` points the generated
// list marshallers here (tools/gqlgen), in place of gqlgen's
// MarshalSliceConcurrently. A list of pets whose selection is flat takes marshalFlatPets, a
// list of edges whose selection is flat marshalFlatEdges; every other list, and every list of
// a Resolver made genericLists (the tests' reference), is marshalled element by element by
// marshalSlice.
func marshalList[T any](ec *executionContext, ctx context.Context, sel ast.SelectionSet, v []T, marshalElement func(ctx context.Context, i int) graphql.Marshaler) graphql.Array {
	if r, ok := ec.Resolvers.(*Resolver); !ok || !r.genericLists {
		switch v := any(v).(type) {
		case []*models.Pet:
			if ret := ec.marshalFlatPets(sel, v); ret != nil {
				return ret
			}
		case []*PetEdge:
			if ret := ec.marshalFlatEdges(sel, v); ret != nil {
				return ret
			}
		}
	}
	return marshalSlice(ctx, len(v), marshalElement)
}

// marshalSlice marshals the elements of a list one after the other. gqlgen's generated code
// marshals each element of an object list in its own goroutine, which pays off only when
// fields have slow resolvers; every Pet field is a plain struct field, so the goroutines are
// pure overhead (a fifth of a list query's CPU). A panic in an element is reported like
// gqlgen does and nulls the list.
func marshalSlice(ctx context.Context, length int, marshalElement func(ctx context.Context, i int) graphql.Marshaler) graphql.Array {
	ret := make(graphql.Array, length)
	for i := range length {
		fc := &graphql.FieldContext{Index: &i}
		childCtx := graphql.WithFieldContext(ctx, fc)
		ok := func() (ok bool) {
			defer func() {
				if r := recover(); r != nil {
					graphql.AddError(childCtx, graphql.Recover(childCtx, r))
				}
			}()
			ret[i] = marshalElement(childCtx, i)
			return true
		}()
		if !ok {
			return nil
		}
	}
	return ret
}
