package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"petstore/apierr"
	"petstore/graph/gqlhttp"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// refusalCodes are the codes of operations refused before they run, protocol errors to gqlgen:
// a gate's refusals, and INVALID_REQUEST, which presentError gives to the documents that do
// not parse, validate or pass the cost bounds. A WebSocket answers them with the protocol's
// error message, as graphql-transport-ws and graphql-ws ask for a validation error, not with
// a next (data) message. Only gqlgen's WebSocket transport reads these kinds, and only for
// refusals: errors raised while an operation runs keep their own.
var refusalCodes = []apierr.Code{apierr.InvalidRequest, apierr.RateLimited, apierr.KeySuspended, apierr.Unavailable, apierr.Unauthorized,
	apierr.PersistedQueryNotInList, apierr.QueryNotInSafelist, apierr.PersistedQueryIDRequired}

func init() {
	for _, c := range refusalCodes {
		errcode.RegisterErrorType(strings.ToUpper(string(c)), errcode.KindProtocol)
	}
}

// MaxErrorMessageBytes is the longest message of an error in a response, in bytes: a longer
// one, which quotes a long name or value the client sent, is cut there and ends in "…".
// Validation may report an error for each walk of a fragment, 50 for one document, so that a
// name of 1 MiB quoted in full would make a response 50 times the request. It is the bound of
// every Error body's message (apierr.MaxMessageBytes).
const MaxErrorMessageBytes = apierr.MaxMessageBytes

// presentError turns a resolver or input error into a GraphQL error. An *apierr.Error keeps its
// code and message; an error gqlgen raised while reading the input is INVALID_REQUEST (but for
// gqlhttp.KeptCode); anything else is logged and presented as INTERNAL_ERROR without its
// details.
func presentError(ctx context.Context, err error) *gqlerror.Error {
	gqlErr := graphql.DefaultErrorPresenter(ctx, err)
	var apiErr *apierr.Error
	switch {
	case errors.As(err, &apiErr):
		if apiErr.Status() >= http.StatusInternalServerError && ctx.Err() == nil { // not when the client went away
			slog.ErrorContext(ctx, "graphql resolver failed", "path", gqlErr.Path.String(), "err", apiErr.Error())
		}
		gqlErr.Message = apiErr.Message
		gqlhttp.SetCode(gqlErr, apiErr.Code)
	case errors.As(err, new(*gqlerror.Error)):
		if code, _ := gqlErr.Extensions["code"].(string); !gqlhttp.KeptCode(code) {
			gqlhttp.SetCode(gqlErr, apierr.InvalidRequest)
		}
	default:
		slog.ErrorContext(ctx, "graphql resolver failed", "path", gqlErr.Path.String(), "err", err)
		gqlErr = &gqlerror.Error{Message: "internal error", Path: gqlErr.Path, Locations: gqlErr.Locations}
		gqlhttp.SetCode(gqlErr, apierr.Internal)
	}
	gqlErr.Message = apierr.Shorten(gqlErr.Message, MaxErrorMessageBytes)
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
			gqlhttp.SetCode(e, apierr.InvalidRequest)
		}
	}
	return resp
}
