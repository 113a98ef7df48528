package graph

import (
	"math"

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
