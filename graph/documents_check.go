package graph

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"

	"petstore/documents"
	"petstore/graph/guard"
	"petstore/internal/jsonbody"
)

// CheckedDocument is a document that CheckDocument found the handler would run.
type CheckedDocument struct {
	Doc  *ast.QueryDocument // parsed and validated
	Name string             // of its first operation
	Type string             // query, mutation or subscription: its first operation's
	Cost int                // DocumentCost
}

// CheckDocument parses and validates body against the schema, and checks it against the bounds
// of opts as the handler checks a document sent as text: the size of a request body, the
// document bounds, the token limit, and each operation's depth, complexity (list fields priced
// as the handler prices them) and root fields, variables left to their defaults (defaultVariables; the handler
// checks the complexity again with each request's variables). It returns the
// document with its cost, or an error that lists what is wrong, one problem a line.
func CheckDocument(opts Options, body string) (CheckedDocument, error) {
	opts = opts.withDefaults()
	if len(body) > jsonbody.MaxBytes {
		return CheckedDocument{}, fmt.Errorf("the document has %d bytes: a request body, which holds a document sent as text, has at most %d", len(body), jsonbody.MaxBytes)
	}
	ctx := context.Background()
	cfg := Config{}
	setCosts(&cfg.Complexity) // the handler's: list fields priced by their page size
	es := NewExecutableSchema(cfg)
	bounds := guard.NewDocumentBounds(graphql.NoCache[*ast.QueryDocument]{}, opts.TokenLimit).(graphql.OperationParameterMutator)
	if err := bounds.MutateOperationParameters(ctx, &graphql.RawParams{Query: body}); err != nil {
		return CheckedDocument{}, documentError(gqlerror.List{err})
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: body}, opts.TokenLimit)
	if err != nil {
		return CheckedDocument{}, documentError(gqlerror.List{gqlerror.WrapIfUnwrapped(err)})
	}
	if errs := validator.ValidateWithRules(es.Schema(), doc, guard.ValidationRules()); len(errs) > 0 {
		return CheckedDocument{}, documentError(errs)
	}
	if len(doc.Operations) == 0 {
		return CheckedDocument{}, errors.New("the document defines no operation")
	}
	limits := guard.NewOperationLimits(opts.DepthLimit, opts.ComplexityLimit, es.Schema())
	if err := limits.Validate(es); err != nil {
		return CheckedDocument{}, err
	}
	for _, op := range doc.Operations {
		opCtx := &graphql.OperationContext{RawQuery: body, Doc: doc, Operation: op, OperationName: op.Name, Variables: defaultVariables(op)}
		if err := limits.(graphql.OperationContextMutator).MutateOperationContext(ctx, opCtx); err != nil {
			return CheckedDocument{}, documentError(gqlerror.List{err})
		}
	}
	first := doc.Operations[0]
	return CheckedDocument{Doc: doc, Name: first.Name, Type: string(first.Operation), Cost: DocumentCost(doc)}, nil
}

// defaultVariables returns the variables an operation is checked with: each one's default, and
// false for a Boolean! without one, which @skip and @include need a value of (collecting the
// fields panics without it; a request without it is refused before).
func defaultVariables(op *ast.OperationDefinition) map[string]any {
	vars := map[string]any{}
	for _, v := range op.VariableDefinitions {
		switch {
		case v.DefaultValue != nil:
			if val, err := v.DefaultValue.Value(nil); err == nil {
				vars[v.Variable] = val
			}
		case v.Type.NamedType == "Boolean":
			vars[v.Variable] = false
		}
	}
	return vars
}

// documentError is errs as one error, one a line, each with its line and column.
func documentError(errs gqlerror.List) error {
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = e.Message
		if len(e.Locations) > 0 {
			lines[i] = fmt.Sprintf("%d:%d: %s", e.Locations[0].Line, e.Locations[0].Column, e.Message)
		}
	}
	return errors.New(strings.Join(lines, "\n"))
}

// Preparer returns how an instance whose handler has opts prepares the listed documents it
// reads (documents.Registry): CheckDocument, against its own schema and bounds.
func Preparer(opts Options) documents.Prepare {
	return func(body string) (*ast.QueryDocument, error) {
		c, err := CheckDocument(opts, body)
		return c.Doc, err
	}
}
