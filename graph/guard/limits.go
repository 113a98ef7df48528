package guard

import (
	"context"
	"math"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// operationLimits refuses, before any resolver runs, an operation whose fields nest more than
// depth levels, that selects __schema more than once, whose fields, each counted once per
// place it is spread, number more than complexity, whose introspection resolves more than
// MaxIntrospectionFields fields, or whose root fields are over MaxMutationFields or
// MaxQueryFields. The field count is a lower bound of gqlgen's complexity (every field costs at
// least one) reached in linear time: gqlgen's ComplexityLimit, which follows every fragment
// spread anew, runs after it and so never meets a document of fragments that each spread the
// next twice, which would take it exponential time.
//
// The nesting of __Type.ofType does not count towards the depth: it ends where the schema's
// type wrappers end (three levels here), and GraphiQL's introspection query nests it seven
// deep. Like gqlgen's complexity, the count leaves out the fields under __schema, whose work
// grows with the lists of the schema: introspectionCost counts it, list lengths included,
// against MaxIntrospectionFields. An operation may select __schema once: each alias of it
// resolves the schema's lists anew.
type operationLimits struct {
	depth, complexity int
	schema            *ast.Schema
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = operationLimits{}

// ExtensionName names the extension for gqlgen.
func (operationLimits) ExtensionName() string { return "OperationLimits" }

// Validate accepts every schema.
func (operationLimits) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext refuses the operation of opCtx when it is over a limit.
func (l operationLimits) MutateOperationContext(_ context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	w := shapeWalker{fragments: map[string]shape{}}
	s := w.selectionSet(opCtx.Operation.SelectionSet)
	if l.depth > 0 && s.depth > l.depth {
		return refusal(nil, "the operation nests fields %d levels deep; the limit is %d", s.depth, l.depth)
	}
	if s.schemas > maxSchemaSelections {
		return refusal(nil, "the operation selects __schema %d times; at most %d is allowed", s.schemas, maxSchemaSelections)
	}
	if l.complexity > 0 && s.fields > l.complexity {
		return refusal(nil, "operation has complexity of at least %d, which exceeds the limit of %d", s.fields, l.complexity)
	}
	if n := introspectionCost(opCtx, l.schema, MaxIntrospectionFields); n > MaxIntrospectionFields {
		return refusal(nil, "the operation's __schema and __type fields resolve more than %d fields, each counted once per type, field or value it is resolved on; select fewer fields or aliases under them", MaxIntrospectionFields)
	}
	return checkRootFields(opCtx.Operation)
}

// Bounds of the root fields of an operation, so that one request, charged once to the rate
// limit, does a bounded number of writes and statements. Fields are counted by response name
// (the fields that share one are merged and run once), fragments followed; __typename,
// __schema and __type, which read no database, do not count.
const (
	// MaxMutationFields is how many fields a mutation may select: one write per request.
	MaxMutationFields = 1
	// MaxQueryFields is how many root fields a query may select: each runs one SQL statement.
	MaxQueryFields = 10
)

// checkRootFields refuses an operation whose root fields are over MaxMutationFields or
// MaxQueryFields.
func checkRootFields(op *ast.OperationDefinition) *gqlerror.Error {
	names := map[string]bool{}
	collectRootFields(op.SelectionSet, names, map[string]bool{})
	switch n := len(names); {
	case op.Operation == ast.Mutation && n > MaxMutationFields:
		return refusal(nil, "a mutation may select at most %d field; this one selects %d: send one mutation per request", MaxMutationFields, n)
	case op.Operation == ast.Query && n > MaxQueryFields:
		return refusal(nil, "a query may select at most %d root fields other than __typename, __schema and __type; this one selects %d: ask for more rows per field (limit, first) instead", MaxQueryFields, n)
	}
	return nil
}

// collectRootFields adds to names the response names of the fields of set that read or write
// data, following inline fragments and each fragment of visited once.
func collectRootFields(set ast.SelectionSet, names, visited map[string]bool) {
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			if !strings.HasPrefix(sel.Name, "__") {
				names[sel.Alias] = true
			}
		case *ast.InlineFragment:
			collectRootFields(sel.SelectionSet, names, visited)
		case *ast.FragmentSpread:
			if !visited[sel.Name] && sel.Definition != nil {
				visited[sel.Name] = true
				collectRootFields(sel.Definition.SelectionSet, names, visited)
			}
		}
	}
}

// maxSchemaSelections is how many times an operation may select __schema.
const maxSchemaSelections = 1

// MaxIntrospectionFields is the most fields that the __schema and __type fields of an
// operation may resolve, each counted once for each object it is resolved on (a type, a
// field, an argument, an enum value...): GraphiQL's introspection query resolves 1,305 on
// this schema. Neither the complexity nor the depth bounds this work: aliases under __schema,
// each spreading a fragment of aliases, multiply it at every level.
const MaxIntrospectionFields = 2000

// shape is what operationLimits measures of a selection set: how deep its fields nest, how
// many fields (outside __schema) and how many __schema fields it selects, each counted once per
// place a fragment is spread.
type shape struct {
	depth, fields, schemas int
}

// shapeWalker measures selection sets, each fragment once.
type shapeWalker struct {
	fragments map[string]shape
}

func (w *shapeWalker) selectionSet(set ast.SelectionSet) shape {
	var s shape
	for _, sel := range set {
		var c shape
		switch sel := sel.(type) {
		case *ast.Field:
			c = w.field(sel)
		case *ast.InlineFragment:
			c = w.selectionSet(sel.SelectionSet)
		case *ast.FragmentSpread:
			c = w.fragment(sel)
		}
		s.depth = max(s.depth, c.depth)
		s.fields = addSaturating(s.fields, c.fields)
		s.schemas = addSaturating(s.schemas, c.schemas)
	}
	return s
}

func (w *shapeWalker) field(f *ast.Field) shape {
	s := w.selectionSet(f.SelectionSet)
	if f.Name == "__schema" {
		s.fields, s.schemas = 0, 1
	} else {
		s.fields = addSaturating(s.fields, 1)
	}
	if f.Name != "ofType" || f.ObjectDefinition == nil || f.ObjectDefinition.Name != "__Type" {
		s.depth++
	}
	return s
}

// fragment measures a spread fragment once. Validation has refused fragment cycles already; the
// zero shape entered first only keeps a cycle from looping.
func (w *shapeWalker) fragment(spread *ast.FragmentSpread) shape {
	if s, ok := w.fragments[spread.Name]; ok || spread.Definition == nil {
		return s
	}
	w.fragments[spread.Name] = shape{}
	s := w.selectionSet(spread.Definition.SelectionSet)
	w.fragments[spread.Name] = s
	return s
}

func addSaturating(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
