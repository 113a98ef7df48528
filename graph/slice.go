package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
)

// marshalSlice marshals the elements of a list one after the other. gqlgen's generated code
// marshals each element of an object list in its own goroutine, which pays off only when
// fields have slow resolvers; every Pet field is a plain struct field, so the goroutines are
// pure overhead (a fifth of a list query's CPU). `make generate` points the generated code
// here (a sed line in the Makefile). A panic in an element is reported like gqlgen does and nulls the
// list.
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
