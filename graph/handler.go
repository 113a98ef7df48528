package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"petstore/apierr"
)

// NewHandler returns the GraphQL HTTP handler (GET for queries, POST) over r. Every error in a
// response carries extensions.code from the contract's vocabulary, upper-cased.
func NewHandler(r *Resolver) http.Handler {
	srv := handler.New(NewExecutableSchema(Config{Resolvers: r}))
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.Use(extension.Introspection{})
	srv.SetErrorPresenter(presentError)
	srv.SetRecoverFunc(recoverPanic)
	srv.AroundResponses(normalizeCodes)
	return srv
}

// presentError turns a resolver or input error into a GraphQL error. An *apierr.Error keeps its
// code and message; an error gqlgen raised while reading the input is INVALID_REQUEST; anything
// else is logged and presented as INTERNAL_ERROR without its details.
func presentError(ctx context.Context, err error) *gqlerror.Error {
	gqlErr := graphql.DefaultErrorPresenter(ctx, err)
	var apiErr *apierr.Error
	switch {
	case errors.As(err, &apiErr):
		if apiErr.Status() >= http.StatusInternalServerError {
			slog.ErrorContext(ctx, "graphql resolver failed", "path", gqlErr.Path.String(), "err", apiErr.Error())
		}
		gqlErr.Message = apiErr.Message
		setCode(gqlErr, apiErr.Code)
	case errors.As(err, new(*gqlerror.Error)):
		setCode(gqlErr, apierr.InvalidRequest)
	default:
		slog.ErrorContext(ctx, "graphql resolver failed", "path", gqlErr.Path.String(), "err", err)
		gqlErr = &gqlerror.Error{Message: "internal error", Path: gqlErr.Path, Locations: gqlErr.Locations}
		setCode(gqlErr, apierr.Internal)
	}
	return gqlErr
}

// recoverPanic logs a resolver panic and answers INTERNAL_ERROR.
func recoverPanic(ctx context.Context, p any) error {
	slog.ErrorContext(ctx, "graphql resolver panicked", "panic", fmt.Sprint(p))
	return apierr.Wrap(fmt.Errorf("panic: %v", p))
}

// normalizeCodes gives the parse and validation errors, which gqlgen raises before any
// resolver runs, the contract's INVALID_REQUEST code.
func normalizeCodes(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp == nil {
		return resp
	}
	for _, e := range resp.Errors {
		switch code, _ := e.Extensions["code"].(string); code {
		case "", errcode.ValidationFailed, errcode.ParseFailed:
			setCode(e, apierr.InvalidRequest)
		}
	}
	return resp
}

func setCode(e *gqlerror.Error, code apierr.Code) {
	if e.Extensions == nil {
		e.Extensions = map[string]any{}
	}
	e.Extensions["code"] = strings.ToUpper(string(code))
}
