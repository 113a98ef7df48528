package guard

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/maypok86/otter/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/lexer"
)

// Byte budgets of the in-process caches: what a client can make them hold, whatever it sends.
const (
	// QueryCacheBytes bounds the parsed documents kept in process, by their estimated size
	// (documentWeight), besides their number (NewDocumentCache).
	QueryCacheBytes = 16 << 20
	// maxCachedDocumentBytes is the estimated size of the largest document kept: a heavier one
	// is parsed and validated anew for each request (GraphiQL's introspection query weighs some
	// 100 KiB).
	maxCachedDocumentBytes = 256 << 10
	// apqCacheBytes bounds the persisted queries kept in process (NewAPQCache).
	apqCacheBytes = 8 << 20
	// entryOverhead is what the cache spends on an entry besides its key and value.
	entryOverhead = 256
	// bytesPerToken bounds what one token of a validated document holds: a __typename field
	// holds its ast.Field, its position and the definition validation gives it (some 410 bytes,
	// the most of any token measured).
	bytesPerToken = 512
)

// weighed is a cached value with its weight, worked out before the cache's lock is taken.
type weighed[V any] struct {
	value  V
	weight uint32
}

// weightedCache is a graphql.Cache bounded by the total weight (bytes) of its entries. Add
// drops an entry heavier than maxEntry. Eviction is otter's (W-TinyLFU).
type weightedCache[V any] struct {
	cache    *otter.Cache[string, weighed[V]]
	weigh    func(key string, v V) int
	maxEntry int
}

// newWeightedCache returns a cache of at most maxBytes of entries weighed by weigh, each of at
// most maxEntry.
func newWeightedCache[V any](maxBytes, maxEntry int, weigh func(key string, v V) int) *weightedCache[V] {
	cache, err := otter.New(&otter.Options[string, weighed[V]]{
		MaximumWeight: uint64(maxBytes),
		Weigher:       func(_ string, v weighed[V]) uint32 { return v.weight },
	})
	if err != nil {
		panic(fmt.Sprintf("guard: cache options: %v", err)) // the options are constants
	}
	return &weightedCache[V]{cache: cache, weigh: weigh, maxEntry: maxEntry}
}

// Get returns the value under key.
func (c *weightedCache[V]) Get(_ context.Context, key string) (V, bool) {
	v, ok := c.cache.GetIfPresent(key)
	return v.value, ok
}

// Add keeps value under key unless it weighs more than the largest entry allowed.
func (c *weightedCache[V]) Add(_ context.Context, key string, value V) {
	if w := c.weigh(key, value); w <= c.maxEntry {
		c.cache.Set(key, weighed[V]{value: value, weight: uint32(w)})
	}
}

// NewDocumentCache returns the cache of parsed and validated documents: at most
// QueryCacheBytes of them by documentWeight, and at most count, every entry weighing at least
// QueryCacheBytes/count.
func NewDocumentCache(count int) graphql.Cache[*ast.QueryDocument] {
	least := QueryCacheBytes / count
	return newWeightedCache(QueryCacheBytes, maxCachedDocumentBytes, func(query string, _ *ast.QueryDocument) int {
		return max(documentWeight(query), least)
	})
}

// documentWeight returns an upper bound of the memory that the parsed and validated document
// of query holds: its text, which the AST refers to, and bytesPerToken for each token. It reads
// tokens only while the bound is within maxCachedDocumentBytes.
func documentWeight(query string) int {
	w := entryOverhead + len(query)
	lx := lexer.New(&ast.Source{Input: query})
	for w <= maxCachedDocumentBytes {
		tok, err := lx.ReadToken()
		if err != nil || tok.Kind == lexer.EOF {
			break
		}
		w += bytesPerToken
	}
	return w
}

// NewAPQCache returns the in-process cache of persisted queries: at most apqCacheBytes of
// them, each of at most MaxPersistedQueryBytes.
func NewAPQCache() graphql.Cache[string] {
	return newWeightedCache(apqCacheBytes, MaxPersistedQueryBytes+sha256HexLen+entryOverhead, func(hash, query string) int {
		return entryOverhead + len(hash) + len(query)
	})
}
