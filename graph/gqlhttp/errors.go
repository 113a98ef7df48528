package gqlhttp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"petstore/apierr"
	"petstore/graph/guard"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// specExecutor passes gqlgen's transport the executor's answers, refusing mutations on GET and
// telling specWriter about request errors.
type specExecutor struct {
	graphql.GraphExecutor
	w           *specWriter
	queriesOnly bool
}

// CreateOperationContext parses, validates and checks the limits of the operation of params.
func (e *specExecutor) CreateOperationContext(ctx context.Context, params *graphql.RawParams) (*graphql.OperationContext, gqlerror.List) {
	opCtx, errs := e.GraphExecutor.CreateOperationContext(ctx, params)
	if errs == nil && e.queriesOnly && opCtx.Operation.Operation != ast.Query {
		apiErr := apierr.New(apierr.MethodNotAllowed, "GET runs queries only: send a %s with POST", opCtx.Operation.Operation)
		errs = gqlerror.List{{Err: apiErr, Message: apiErr.Message}}
	}
	if errs != nil {
		errs = guard.TruncateErrors(errs)
		guard.AsRefusals(errs, params.Query)
		e.w.requestErrs = errs
	}
	return opCtx, errs
}

// DispatchError presents the errors of a request that does not run.
func (e *specExecutor) DispatchError(ctx context.Context, list gqlerror.List) *graphql.Response {
	e.w.requestError = true
	return e.GraphExecutor.DispatchError(ctx, list)
}

// specWriter gives the answer of gqlgen's transport the status and body the specification
// asks for. A request error (the operation did not run) gets the status of requestStatus, and
// its body loses the data entry; every error body gets extensions.code.
type specWriter struct {
	http.ResponseWriter
	media        string
	requestErrs  gqlerror.List // the errors of an operation that did not run
	requestError bool          // the body is a request error
	status       int           // 0 until the header is written
}

// WriteHeader sends the header, with the status of the request errors if there are any.
func (w *specWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	if w.requestErrs != nil {
		status = requestStatus(w.requestErrs, w.media)
	}
	h := w.Header()
	if v := h["Content-Type"]; len(v) == 0 || v[0] == "" { // h.Get("Content-Type") == ""
		h["Content-Type"] = contentTypes[w.media]
	}
	if status == http.StatusMethodNotAllowed {
		h.Set("Allow", http.MethodPost)
	}
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// Write writes b, the whole JSON response; an error body loses its data entry.
func (w *specWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.requestError || w.status >= http.StatusBadRequest {
		if fixed, ok := errorBody(b); ok {
			_, err := w.ResponseWriter.Write(fixed)
			return len(b), err
		}
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap returns the underlying writer, for http.ResponseController.
func (w *specWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// requestStatus returns the status of a response to a request that did not run because of
// errs: that of the service's own refusal when there is one (400 for the cost limits, 405 for
// a mutation on GET); 200 for an unknown persisted query, which Apollo's clients expect; else
// (parse, validation and variable errors) 400 for application/graphql-response+json and 200
// for application/json, as the specification asks.
func requestStatus(errs gqlerror.List, media string) int {
	for _, e := range errs {
		var apiErr *apierr.Error
		if errors.As(e, &apiErr) {
			return apiErr.Status()
		}
	}
	for _, e := range errs {
		if code, _ := e.Extensions["code"].(string); KeptCode(code) {
			return http.StatusOK
		}
	}
	if media == mediaGraphQLResponse {
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// errorBody returns the error response b without its data entry, each error with a code
// (INVALID_REQUEST when gqlgen's transport gave none); ok is false when b is not one.
func errorBody(b []byte) (fixed []byte, ok bool) {
	var resp struct {
		Errors     gqlerror.List  `json:"errors"`
		Extensions map[string]any `json:"extensions,omitempty"`
	}
	if err := json.Unmarshal(b, &resp); err != nil || len(resp.Errors) == 0 {
		return nil, false
	}
	for _, e := range resp.Errors {
		if _, ok := e.Extensions["code"].(string); !ok {
			SetCode(e, apierr.InvalidRequest)
		}
	}
	fixed, err := json.Marshal(resp)
	return fixed, err == nil
}

// writeRequestError answers a request that gqlgen does not see with err, as a GraphQL response
// of media type media without data.
func writeRequestError(w http.ResponseWriter, media string, err *apierr.Error) {
	e := &gqlerror.Error{Message: err.Message}
	SetCode(e, err.Code)
	body, _ := json.Marshal(struct {
		Errors gqlerror.List `json:"errors"`
	}{gqlerror.List{e}})
	w.Header().Set("Content-Type", media+"; charset=utf-8")
	w.WriteHeader(err.Status())
	_, _ = w.Write(body)
}

// Unsupported answers what no other transport takes: 415 for a POST that is not
// application/json, 400 for anything else (such as a WebSocket upgrade).
type Unsupported struct{}

// Supports takes every request.
func (Unsupported) Supports(*http.Request) bool { return true }

// Do refuses r.
func (Unsupported) Do(w http.ResponseWriter, r *http.Request, _ graphql.GraphExecutor) {
	media := negotiate(strings.Join(r.Header.Values("Accept"), ","))
	if r.Method == http.MethodPost {
		writeRequestError(w, media, apierr.New(apierr.UnsupportedMediaType,
			"a GraphQL POST needs Content-Type: application/json; got %q", r.Header.Get("Content-Type")))
		return
	}
	writeRequestError(w, media, apierr.Invalid("GraphQL is served over plain HTTP GET (queries) and POST (application/json)"))
}

// keptCodes are the codes of gqlgen's own errors that clients depend on.
var keptCodes = map[string]bool{
	"PERSISTED_QUERY_NOT_FOUND": true, // Apollo's clients then send the query with its hash
}

// KeptCode reports whether code is one of gqlgen's own that clients depend on: the presenter
// and the transports leave it as it is.
func KeptCode(code string) bool { return keptCodes[code] }

// SetCode gives e the code that every error of a response carries in extensions.code: code,
// upper-cased.
func SetCode(e *gqlerror.Error, code apierr.Code) {
	if e.Extensions == nil {
		e.Extensions = map[string]any{}
	}
	e.Extensions["code"] = strings.ToUpper(string(code))
}
