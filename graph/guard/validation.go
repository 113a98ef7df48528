package guard

import (
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"
)

// ValidationRules returns gqlparser's validation rules without those that suggest names ("Did
// you mean ...?") for an unknown type, argument, enum value or input field. A suggestion costs
// an edit distance between the name sent and each name it could be, in time the product of
// their lengths, once for each walk of the fragment that holds it. The handler's
// SetDisableSuggestion drops those of unknown fields and of leaf selections. gqlparser's
// SingleFieldSubscriptions is replaced by singleRootFieldRule.
func ValidationRules() *rules.Rules {
	r := rules.NewDefaultRules()
	for _, rule := range []core.Rule{
		rules.KnownArgumentNamesRuleWithoutSuggestions,
		rules.KnownTypeNamesRuleWithoutSuggestions,
		rules.ValuesOfCorrectTypeRuleWithoutSuggestions,
	} {
		r.ReplaceRule(strings.TrimSuffix(rule.Name, "WithoutSuggestions"), rule.RuleFunc)
	}
	r.ReplaceRule(rules.SingleFieldSubscriptionsRule.Name, singleRootFieldRule)
	return r
}

// singleRootFieldRule is the GraphQL specification's single root field rule: a subscription
// selects exactly one root field, counted by response name (its alias, else its name), with
// fragments followed, and no introspection field. gqlparser's rule counts names, so that
// { a: petAdded b: petAdded } passed validation and was refused only once it ran.
func singleRootFieldRule(observers *core.Events, addError core.AddErrFunc) {
	observers.OnOperation(func(walker *core.Walker, op *ast.OperationDefinition) {
		if walker.Schema.Subscription == nil || op.Operation != ast.Subscription {
			return
		}
		name := "Anonymous Subscription"
		if op.Name != "" {
			name = fmt.Sprintf("Subscription %q", op.Name)
		}
		keys := map[string]bool{}
		walked := map[string]bool{}
		var walk func(ast.SelectionSet)
		walk = func(set ast.SelectionSet) {
			for _, sel := range set {
				switch sel := sel.(type) {
				case *ast.Field:
					if !keys[sel.Alias] && len(keys) == 1 {
						addError(core.Message("%s must select only one top level field.", name), core.At(sel.Position))
					}
					keys[sel.Alias] = true
					if strings.HasPrefix(sel.Name, "__") {
						addError(core.Message("%s must not select an introspection top level field.", name), core.At(sel.Position))
					}
				case *ast.InlineFragment:
					walk(sel.SelectionSet)
				case *ast.FragmentSpread:
					if sel.Definition != nil && !walked[sel.Name] {
						walked[sel.Name] = true
						walk(sel.Definition.SelectionSet)
					}
				}
			}
		}
		walk(op.SelectionSet)
	})
}

// TruncateErrors returns errs with at most maxRequestErrors errors, the last of which then
// says how many were left out.
func TruncateErrors(errs gqlerror.List) gqlerror.List {
	if len(errs) <= maxRequestErrors {
		return errs
	}
	more := gqlerror.Errorf("%d more errors left out", len(errs)-maxRequestErrors+1)
	errcode.Set(more, errcode.ValidationFailed)
	return append(errs[:maxRequestErrors-1:maxRequestErrors-1], more)
}
