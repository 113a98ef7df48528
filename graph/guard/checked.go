package guard

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

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

// NewOperationLimits returns the extension that refuses an operation over the depth or
// complexity limit (0: off) or another bound of operationLimits, on schema, before any
// resolver runs; it runs gqlgen's ComplexityLimit after its own linear walk (checkedLimits).
func NewOperationLimits(depth, complexity int, schema *ast.Schema) graphql.HandlerExtension {
	return newCheckedLimits(operationLimits{depth: depth, complexity: complexity, schema: schema})
}

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
