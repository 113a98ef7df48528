package graph

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"petstore/models"
)

// Defaults of the cost limits and caches of Options.
const (
	// DefaultComplexityLimit admits one full page of petsConnection(first: 100) with every
	// field (1,201) or four of pets(limit: 100) with every field (401 each).
	DefaultComplexityLimit = 2000
	// DefaultDepthLimit leaves room above the deepest operation on the schema (4:
	// petsConnection { edges { node { id } } }) and GraphiQL's introspection query (6).
	DefaultDepthLimit = 10
	// DefaultTokenLimit is some fifty times GraphiQL's introspection query (about 200 tokens).
	DefaultTokenLimit = 10000
	// DefaultQueryCacheSize is the number of parsed and validated documents kept.
	DefaultQueryCacheSize = 1000
)

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

// RowsPerUnit is how many rows of a list field one unit of the rate limit pays for: as many as
// one REST request returns at most.
const RowsPerUnit = models.MaxPageSize

// OperationCost returns what the operation of opCtx, parsed and validated, costs in units of
// the rate limit: the sum over its root fields, each response name counted once however many
// fields and fragments share it, of pets(limit:) and petsConnection(first:) ceil(size /
// RowsPerUnit) and 1 for any other field (pet, createPet, petAdded); __typename, __schema and
// __type cost nothing; at least 1. Sizes are read after variable coercion; a null size counts
// as models.DefaultPageSize, and one out of range as the nearest bound, since the resolver
// refuses it. Fields left out by @skip or @include cost nothing. It allocates nothing for an
// operation of up to 16 priced response names and 16 fragments.
func OperationCost(opCtx *graphql.OperationContext) int {
	var w costWalker
	w.vars = opCtx.Variables
	w.selectionSet(opCtx.Operation.SelectionSet)
	return max(w.cost, 1)
}

// costWalker sums the costs of the root fields of an operation.
type costWalker struct {
	vars      map[string]any
	worst     bool // price every field as if included, every page at models.MaxPageSize
	cost      int
	names     nameSet // the response names priced
	fragments nameSet // the fragments walked
}

func (w *costWalker) selectionSet(set ast.SelectionSet) {
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			if c := w.fieldCost(sel); c > 0 && w.included(sel.Directives) && w.names.add(sel.Alias) {
				w.cost += c
			}
		case *ast.InlineFragment:
			if w.included(sel.Directives) {
				w.selectionSet(sel.SelectionSet)
			}
		case *ast.FragmentSpread:
			if sel.Definition != nil && w.included(sel.Directives) && w.fragments.add(sel.Name) {
				w.selectionSet(sel.Definition.SelectionSet)
			}
		}
	}
}

// nameSet is a set of names: the first ones in an array of its own, the others in a slice.
type nameSet struct {
	first [16]string
	n     int
	more  []string
}

// add adds name and reports whether it was not in the set.
func (s *nameSet) add(name string) bool {
	switch {
	case slices.Contains(s.first[:s.n], name) || slices.Contains(s.more, name):
		return false
	case s.n < len(s.first):
		s.first[s.n] = name
		s.n++
	default:
		s.more = append(s.more, name)
	}
	return true
}

// included reports whether a selection with dirs is priced.
func (w *costWalker) included(dirs ast.DirectiveList) bool {
	return w.worst || included(dirs, w.vars)
}

// fieldCost returns what the root field f costs.
func (w *costWalker) fieldCost(f *ast.Field) int {
	var size *ast.Argument
	switch {
	case f.Name == "pets":
		size = f.Arguments.ForName("limit")
	case f.Name == "petsConnection":
		size = f.Arguments.ForName("first")
	case strings.HasPrefix(f.Name, "__"):
		return 0
	default:
		return 1
	}
	if w.worst {
		return pageUnits(&ast.Argument{Value: &ast.Value{Kind: ast.IntValue, Raw: strconv.Itoa(models.MaxPageSize)}}, nil)
	}
	return pageUnits(size, w.vars)
}

// DocumentCost returns the most that an operation of doc, parsed and validated, may cost
// (OperationCost): every field counted whatever its @skip and @include, every page at
// models.MaxPageSize, whatever the variables. A listed document's operations are charged it.
func DocumentCost(doc *ast.QueryDocument) int {
	most := 1
	for _, op := range doc.Operations {
		w := costWalker{worst: true}
		w.selectionSet(op.SelectionSet)
		most = max(most, w.cost)
	}
	return most
}

// operationCost returns what the operation of opCtx is charged: its listed document's cost
// when it runs one, worked out once (DocumentCost), else its OperationCost.
func operationCost(opCtx *graphql.OperationContext) int {
	if l := listedOf(opCtx); l != nil {
		return l.Cost
	}
	return OperationCost(opCtx)
}

// pageUnits returns the units of a page whose size is the argument size (nil when left out).
func pageUnits(size *ast.Argument, vars map[string]any) int {
	n := models.DefaultPageSize
	if size != nil {
		if v, err := size.Value.Value(vars); err == nil && v != nil {
			if i, err := graphql.UnmarshalInt(v); err == nil {
				n = i
			}
		}
	}
	n = min(max(n, models.MinPageSize), models.MaxPageSize)
	return (n + RowsPerUnit - 1) / RowsPerUnit
}

// included reports whether gqlgen's executor runs a selection with dirs: by @skip when it is
// there, else by @include.
func included(dirs ast.DirectiveList, vars map[string]any) bool {
	d, keep := dirs.ForName("skip"), false
	if d == nil {
		d, keep = dirs.ForName("include"), true
	}
	if d == nil || d.Arguments.ForName("if") == nil {
		return true
	}
	v, _ := d.Arguments.ForName("if").Value.Value(vars)
	b, _ := v.(bool)
	return b == keep
}
