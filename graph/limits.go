package graph

import (
	"context"
	"errors"
	"math"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"petstore/apierr"
	"petstore/models"
)

// Defaults of the cost limits and caches of Options.
const (
	// DefaultComplexityLimit admits two full pages of petsConnection(first: 100) with every
	// field (1,001 each) or four of pets(limit: 100) with every field (401 each).
	DefaultComplexityLimit = 2000
	// DefaultDepthLimit leaves room above the deepest operation on the schema (4:
	// petsConnection { edges { node { id } } }) and GraphiQL's introspection query (6).
	DefaultDepthLimit = 10
	// DefaultTokenLimit is some fifty times GraphiQL's introspection query (about 200 tokens).
	DefaultTokenLimit = 10000
	// DefaultQueryCacheSize is the number of parsed and validated documents kept.
	DefaultQueryCacheSize = 1000
)

// complexityLimitCode is the code of gqlgen's ComplexityLimit refusal (unexported there).
const complexityLimitCode = "COMPLEXITY_LIMIT_EXCEEDED"

// setCosts prices each list field by the most rows it may return: the cost of one element times
// its page-size argument, plus one. A new paged field adds one line here.
func setCosts(c *ComplexityRoot) {
	c.Query.Pets = func(child int, limit *int, _ *models.PetStatus) int { return listCost(limit, child) }
	c.Query.PetsConnection = func(child int, first *int, _ *string, _ *models.PetStatus) int { return listCost(first, child) }
}

// listCost returns size times child plus one, saturating at math.MaxInt. A null size counts
// as models.DefaultPageSize; a size out of range counts as the nearest bound, since the
// resolver refuses it with a clearer error before any database work.
func listCost(size *int, child int) int {
	n := models.DefaultPageSize
	if size != nil {
		n = min(max(*size, models.MinPageSize), models.MaxPageSize)
	}
	if child > (math.MaxInt-1)/n {
		return math.MaxInt
	}
	return n*child + 1
}

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
// against MaxIntrospectionFields. An operation may select __schema once (a hundred aliases of
// __schema { types { fields { type { fields { name } } } } } took a second).
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
// field, an argument, an enum value...): GraphiQL's introspection query resolves 1,208 on
// this schema. Neither the complexity nor the depth bounds this work: aliases under __schema,
// each spreading a fragment of aliases, multiply it at every level (a query of 964 bytes
// resolved 1.7 million fields in seconds, and one of 200 selections would take hours).
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

// refusal returns a request error by which the service refuses an operation for its cost or its
// form rather than for a GraphQL reason: it wraps an INVALID_REQUEST *apierr.Error, whose
// status (400) the response gets whatever its media type. It keeps the locations of cause,
// which may be nil.
func refusal(cause *gqlerror.Error, format string, args ...any) *gqlerror.Error {
	apiErr := apierr.Invalid(format, args...)
	e := &gqlerror.Error{Err: apiErr, Message: apiErr.Message}
	if cause != nil {
		e.Locations = cause.Locations
	}
	return e
}

// isRefusal reports whether e is a refusal or another error carrying an *apierr.Error, and
// returns that error.
func isRefusal(e *gqlerror.Error) (*apierr.Error, bool) {
	var apiErr *apierr.Error
	ok := errors.As(e, &apiErr)
	return apiErr, ok
}

// asRefusals turns the request errors that gqlgen raises for the cost limits (the parser's token
// limit, the complexity limit, gqlparser's introspection depth rule) and for a request with no
// query into refusals, in place. query is the request's query after APQ.
func asRefusals(errs gqlerror.List, query string) {
	for i, e := range errs {
		code, _ := e.Extensions["code"].(string)
		switch {
		case code == errcode.ParseFailed && strings.HasPrefix(e.Message, "exceeded token limit"):
			errs[i] = refusal(e, "the query is too long: it %s", e.Message)
		case code == complexityLimitCode:
			errs[i] = refusal(e, "%s: ask for fewer rows (limit, first) or fewer fields", e.Message)
		case e.Rule == rules.MaxIntrospectionDepth.Name:
			errs[i] = refusal(e, "the introspection query nests fields, inputFields, interfaces or possibleTypes too deep (at most twice)")
		case code == errcode.ValidationFailed && strings.TrimSpace(query) == "" && e.Message == "no operation provided":
			errs[i] = refusal(e, "the request has no query: send the GraphQL document in the query parameter")
		}
	}
}

// checkedLimits runs operationLimits and then gqlgen's ComplexityLimit (when the complexity
// limit is on), and remembers the operations that passed both when their outcome cannot
// differ from one request to the next: an operation of a document sent without operationName
// and without variables (none given, none defaulted), whose complexity and shape depend on
// its text alone. Such an operation, sent again, skips both walks; it still gets the
// ComplexityLimit statistics the walk would have set. A refused operation is checked anew
// each time, so that its error is the one the checks return.
type checkedLimits struct {
	limits     operationLimits
	complexity *extension.ComplexityLimit // nil when the complexity limit is off
	passed     *weightedCache[int]        // the complexity of passed operations, by query
}

// Bounds of checkedLimits' cache of passed operations.
const (
	passedCacheBytes    = 1 << 20
	maxPassedEntryBytes = 16 << 10
)

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = checkedLimits{}

func newCheckedLimits(l operationLimits) checkedLimits {
	c := checkedLimits{limits: l, passed: newWeightedCache(passedCacheBytes, maxPassedEntryBytes, func(query string, _ int) int {
		return entryOverhead + len(query)
	})}
	if l.complexity > 0 {
		c.complexity = extension.FixedComplexityLimit(l.complexity)
	}
	return c
}

// ExtensionName names the extension for gqlgen.
func (checkedLimits) ExtensionName() string { return "OperationLimits" }

// Validate gives the complexity limit the schema it prices operations on.
func (c checkedLimits) Validate(es graphql.ExecutableSchema) error {
	if c.complexity == nil {
		return nil
	}
	return c.complexity.Validate(es)
}

// MutateOperationContext refuses the operation of opCtx when it is over a limit.
func (c checkedLimits) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	cacheable := opCtx.OperationName == "" && len(opCtx.Variables) == 0
	if cacheable {
		if n, ok := c.passed.Get(ctx, opCtx.RawQuery); ok {
			if c.complexity != nil {
				opCtx.Stats.SetExtension(complexityStatsName, &extension.ComplexityStats{Complexity: n, ComplexityLimit: c.limits.complexity})
			}
			return nil
		}
	}
	if err := c.limits.MutateOperationContext(ctx, opCtx); err != nil {
		return err
	}
	n := 0
	if c.complexity != nil {
		if err := c.complexity.MutateOperationContext(ctx, opCtx); err != nil {
			return err
		}
		stats, ok := opCtx.Stats.GetExtension(complexityStatsName).(*extension.ComplexityStats)
		if !ok {
			return nil
		}
		n = stats.Complexity
	}
	if cacheable {
		c.passed.Add(ctx, opCtx.RawQuery, n)
	}
	return nil
}

// complexityStatsName is the name gqlgen's ComplexityLimit keeps its statistics under.
const complexityStatsName = "ComplexityLimit"
