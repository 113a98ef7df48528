package guard

import (
	"strings"

	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"petstore/apierr"
)

// refusal returns a request error by which the service refuses an operation for its cost or its
// form rather than for a GraphQL reason: it wraps an INVALID_REQUEST *apierr.Error, whose
// status (400) the response gets whatever its media type. It keeps the locations of cause,
// which may be nil.
func refusal(cause *gqlerror.Error, format string, args ...any) *gqlerror.Error {
	apiErr := apierr.Invalid(format, args...)
	e := &gqlerror.Error{Err: apiErr, Message: apiErr.Message}
	if cause != nil {
		e.Locations = cause.Locations
	}
	return e
}

// complexityLimitCode is the code of gqlgen's ComplexityLimit refusal (unexported there).
const complexityLimitCode = "COMPLEXITY_LIMIT_EXCEEDED"

// AsRefusals turns the request errors that gqlgen raises for the cost limits (the parser's token
// limit, the complexity limit, gqlparser's introspection depth rule) and for a request with no
// query into refusals, in place. query is the request's query after APQ.
func AsRefusals(errs gqlerror.List, query string) {
	for i, e := range errs {
		code, _ := e.Extensions["code"].(string)
		switch {
		case code == errcode.ParseFailed && strings.HasPrefix(e.Message, "exceeded token limit"):
			errs[i] = refusal(e, "the query is too long: it %s", e.Message)
		case code == complexityLimitCode:
			errs[i] = refusal(e, "%s: ask for fewer rows (limit, first) or fewer fields", e.Message)
		case e.Rule == rules.MaxIntrospectionDepth.Name:
			errs[i] = refusal(e, "the introspection query nests fields, inputFields, interfaces or possibleTypes too deep (at most twice)")
		case code == errcode.ValidationFailed && strings.TrimSpace(query) == "" && e.Message == "no operation provided":
			errs[i] = refusal(e, "the request has no query: send the GraphQL document in the query parameter")
		}
	}
}
