package guard

import (
	"context"
	"slices"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
)

// Bounds of a GraphQL document, checked in linear time before validation. gqlparser's
// validation is super-linear in them: OverlappingFieldsCanBeMerged compares the fields that
// share a response name, and the fragments spread in one selection set, pair by pair; the
// walker enters every fragment once for each operation and each fragment that reaches it.
// Within these bounds validation stays cheap (BenchmarkHostileDocument in package graph).
const (
	// MaxDocumentSelections is the most selections (fields, fragment spreads and inline
	// fragments) a document may hold, each fragment's counted once: some 2.5 times GraphiQL's
	// introspection query (81).
	MaxDocumentSelections = 200
	// MaxDocumentDefinitions is the most operations and fragments a document may define.
	MaxDocumentDefinitions = 50
	// MaxValidatedBytes is the most bytes that validation may read of a document: each
	// fragment once on its own and once for each operation that spreads it, directly or not,
	// and each operation once: validation quotes names and values in its errors on every such
	// read.
	MaxValidatedBytes = 2 << 20
	// maxRequestErrors is the most errors a response to a request that did not run lists:
	// validation reports some errors for every pair of fields, so that a document within the
	// bounds above may still have thousands.
	maxRequestErrors = 100
)

// NewDocumentBounds returns the extension that bounds documents before they are parsed and
// validated (documentBounds): cache is the handler's query cache, whose documents passed
// already, and tokenLimit the parser's.
func NewDocumentBounds(cache graphql.Cache[*ast.QueryDocument], tokenLimit int) graphql.HandlerExtension {
	return documentBounds{cache: cache, tokenLimit: tokenLimit}
}

// documentBounds refuses, after the persisted query is looked up and before the executor parses
// and validates, a document over MaxDocumentSelections or MaxDocumentDefinitions, and one that
// spreads a fragment it does not define (whose pairs validation would compare to no purpose).
// It parses the document once more than the executor does, in linear time (at most tokenLimit
// tokens of a body of at most 1 MiB); a document in cache, which passed already, is not parsed.
type documentBounds struct {
	cache      graphql.Cache[*ast.QueryDocument]
	tokenLimit int
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = documentBounds{}

// ExtensionName names the extension for gqlgen.
func (documentBounds) ExtensionName() string { return "DocumentBounds" }

// Validate accepts every schema.
func (documentBounds) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters refuses the query of params when it is over a bound, and reports
// a query that does not parse as the executor would.
func (b documentBounds) MutateOperationParameters(ctx context.Context, params *graphql.RawParams) *gqlerror.Error {
	if _, ok := b.cache.Get(ctx, params.Query); ok {
		return nil
	}
	if err := checkEscapes(params.Query); err != nil {
		return err
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: params.Query}, b.tokenLimit)
	if err != nil {
		gqlErr, ok := err.(*gqlerror.Error)
		if !ok {
			gqlErr = gqlerror.Wrap(err)
		}
		errcode.Set(gqlErr, errcode.ParseFailed)
		return gqlErr
	}
	return checkDocument(doc)
}

// checkDocument returns the refusal of a document over a bound, a validation error for a
// spread of an undefined fragment, or nil.
func checkDocument(doc *ast.QueryDocument) *gqlerror.Error {
	if n := len(doc.Operations) + len(doc.Fragments); n > MaxDocumentDefinitions {
		return refusal(nil, "the document defines %d operations and fragments; at most %d are allowed", n, MaxDocumentDefinitions)
	}
	c := selectionCounter{fragments: make(map[string]bool, len(doc.Fragments))}
	for _, f := range doc.Fragments {
		c.fragments[f.Name] = true
	}
	for _, op := range doc.Operations {
		c.count(op.SelectionSet)
	}
	for _, f := range doc.Fragments {
		c.count(f.SelectionSet)
	}
	if c.undefined != nil {
		err := gqlerror.ErrorPosf(c.undefined.Position, `Unknown fragment "%s".`, c.undefined.Name)
		err.Rule = "KnownFragmentNames"
		errcode.Set(err, errcode.ValidationFailed)
		return err
	}
	if c.selections > MaxDocumentSelections {
		return refusal(nil, "the document has more than %d selections (fields, fragment spreads and inline fragments); send a smaller query", MaxDocumentSelections)
	}
	if n := validatedBytes(doc); n > MaxValidatedBytes {
		return refusal(nil, "validating the document would read %d bytes, each fragment once for each operation that spreads it; at most %d are allowed: send only the operation you run, or smaller fragments", n, MaxValidatedBytes)
	}
	return nil
}

// validatedBytes returns how many bytes of doc validation reads, as gqlparser's walker does:
// each fragment on its own, each operation with every fragment it reaches once. A definition's
// bytes run from its start to the next definition's.
func validatedBytes(doc *ast.QueryDocument) int {
	size := definitionSizes(doc)
	spreads := make(map[string][]string, len(doc.Fragments))
	n := 0
	for _, f := range doc.Fragments {
		spreads[f.Name] = spreadNames(f.SelectionSet, nil)
		n += size[f.Position.Start]
	}
	for _, op := range doc.Operations {
		n += size[op.Position.Start]
		reached := map[string]bool{}
		for next := spreadNames(op.SelectionSet, nil); len(next) > 0; {
			name := next[len(next)-1]
			next = next[:len(next)-1]
			if f := doc.Fragments.ForName(name); f != nil && !reached[name] {
				reached[name] = true
				n += size[f.Position.Start]
				next = append(next, spreads[name]...)
			}
		}
	}
	return n
}

// definitionSizes returns the size in bytes of each definition of doc by its start (in
// characters, as gqlparser counts): the bytes up to the next definition or the end.
func definitionSizes(doc *ast.QueryDocument) map[int]int {
	var starts []int
	for _, op := range doc.Operations {
		starts = append(starts, op.Position.Start)
	}
	for _, f := range doc.Fragments {
		starts = append(starts, f.Position.Start)
	}
	if len(starts) == 0 {
		return nil
	}
	slices.Sort(starts)
	var input string
	if len(doc.Operations) > 0 {
		input = doc.Operations[0].Position.Src.Input
	} else {
		input = doc.Fragments[0].Position.Src.Input
	}
	offsets := make([]int, 0, len(starts)+1) // the byte offset of each start, then the end
	chars, next := 0, 0
	for i := range input {
		for next < len(starts) && starts[next] == chars {
			offsets = append(offsets, i)
			next++
		}
		chars++
	}
	for len(offsets) <= len(starts) {
		offsets = append(offsets, len(input))
	}
	sizes := make(map[int]int, len(starts))
	for i, start := range starts {
		sizes[start] = offsets[i+1] - offsets[i]
	}
	return sizes
}

// spreadNames appends to names the fragments that set spreads, outside other fragments.
func spreadNames(set ast.SelectionSet, names []string) []string {
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			names = spreadNames(sel.SelectionSet, names)
		case *ast.InlineFragment:
			names = spreadNames(sel.SelectionSet, names)
		case *ast.FragmentSpread:
			names = append(names, sel.Name)
		}
	}
	return names
}

// selectionCounter counts the selections of a document, each fragment's once, up to one over
// MaxDocumentSelections, and finds the first spread of an undefined fragment.
type selectionCounter struct {
	fragments  map[string]bool // the names of the fragments defined
	selections int
	undefined  *ast.FragmentSpread
}

func (c *selectionCounter) count(set ast.SelectionSet) {
	for _, sel := range set {
		if c.selections > MaxDocumentSelections || c.undefined != nil {
			return
		}
		c.selections++
		switch sel := sel.(type) {
		case *ast.Field:
			c.count(sel.SelectionSet)
		case *ast.InlineFragment:
			c.count(sel.SelectionSet)
		case *ast.FragmentSpread:
			if !c.fragments[sel.Name] {
				c.undefined = sel
			}
		}
	}
}
