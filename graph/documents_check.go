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
)

// CheckedDocument is a document that CheckDocument found the handler would run.
type CheckedDocument struct {
	Doc  *ast.QueryDocument // parsed and validated
	Name string             // of its first operation
	Type string             // query, mutation or subscription: its first operation's
	Cost int                // DocumentCost
}

// CheckDocument parses and validates body against the schema, and checks it against the bounds
// of opts as the handler checks a document sent as text: the document bounds, the token limit,
// and each operation's depth, complexity and root fields, variables left to their defaults
// (the handler checks the complexity again with each request's variables). It returns the
// document with its cost, or an error that lists what is wrong, one problem a line.
func CheckDocument(opts Options, body string) (CheckedDocument, error) {
	opts = opts.withDefaults()
	ctx := context.Background()
	es := NewExecutableSchema(Config{})
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
		opCtx := &graphql.OperationContext{RawQuery: body, Doc: doc, Operation: op, OperationName: op.Name, Variables: map[string]any{}}
		if err := limits.(graphql.OperationContextMutator).MutateOperationContext(ctx, opCtx); err != nil {
			return CheckedDocument{}, documentError(gqlerror.List{err})
		}
	}
	first := doc.Operations[0]
	return CheckedDocument{Doc: doc, Name: first.Name, Type: string(first.Operation), Cost: DocumentCost(doc)}, nil
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
