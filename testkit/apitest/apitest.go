// Package apitest is test support: it checks the service's real HTTP responses against the
// OpenAPI document that the service serves, so that the document and the code cannot drift
// apart. Import it only from _test.go files.
package apitest

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// maxBodyInMessage bounds how much of a response body a failure message quotes.
const maxBodyInMessage = 2048

// Validator checks real HTTP responses against the served OpenAPI document.
//
// It checks responses only, never requests: tests send bad requests on purpose. A response
// fails when its status is not declared for the operation, a header declared required is
// missing, a declared header or the body does not match its schema, or the content type is not
// declared. Headers the document does not declare are allowed. It also fails an Error body whose
// status differs from the HTTP status. A Validator may be shared by parallel tests.
type Validator struct {
	router routers.Router
}

// NewValidator parses doc (the bytes served at /v1/openapi.json) and fails tb if it is invalid.
//
// Requests are matched on their path alone, whatever their scheme and host: the document's
// servers are replaced by the single relative server /v1.
func NewValidator(tb testing.TB, doc []byte) *Validator {
	tb.Helper()
	loader := openapi3.NewLoader()
	spec, err := loader.LoadFromData(doc)
	if err != nil {
		tb.Fatalf("apitest: parsing the OpenAPI document: %v", err)
		return nil
	}
	if err := spec.Validate(loader.Context); err != nil {
		tb.Fatalf("apitest: invalid OpenAPI document: %v", err)
		return nil
	}
	spec.Servers = openapi3.Servers{{URL: "/v1"}}
	router, err := legacy.NewRouter(spec)
	if err != nil {
		tb.Fatalf("apitest: building the router: %v", err)
		return nil
	}
	return &Validator{router: router}
}

// Check validates one exchange: req (path like /v1/pets?limit=5, method) and the recorded
// response (status, headers, body). It fails tb with a clear message when the route is
// documented but the response does not match (undeclared status, body not matching the schema,
// missing required header, wrong content type; a 304 with a body). Routes the document does not describe (e.g.
// /v1/graphql, unknown paths, /v1/pets/ with its trailing slash, undocumented methods) are
// skipped and Check returns false; documented ones return true. HEAD requests are never checked.
func (v *Validator) Check(tb testing.TB, req *http.Request, status int, header http.Header, body []byte) bool {
	tb.Helper()
	r, route, params, ok := v.route(tb, req)
	if !ok {
		return false
	}
	opts := &openapi3filter.Options{
		ExcludeRequestBody:    true,
		IncludeResponseStatus: true,
		MultiError:            true,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		// The message quotes the body once; kin-openapi would repeat the schema and the value
		// with every error.
		SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.DisableSchemaErrorDetails()},
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    r,
			PathParams: params,
			Route:      route,
			Options:    opts,
		},
		Status:  status,
		Header:  header,
		Options: opts,
	}
	input.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		tb.Errorf("apitest: %s %s (%s) answered %d, which the OpenAPI document does not allow:\n%v\n"+
			"declared statuses: %v\nheaders: %v\nbody: %s",
			req.Method, req.URL.RequestURI(), route.Operation.OperationID, status, err,
			slices.Sorted(maps.Keys(route.Operation.Responses.Map())), header, quote(body))
	}
	checkErrorStatus(tb, req, status, body)
	if status == http.StatusNotModified {
		checkNotModified(tb, req, route, header, body)
	}
	return true
}

// checkNotModified checks a 304, which kin-openapi leaves unchecked: the operation declares it,
// every header it declares required is present, and there is no body.
func checkNotModified(tb testing.TB, req *http.Request, route *routers.Route, header http.Header, body []byte) {
	tb.Helper()
	resp := route.Operation.Responses.Status(http.StatusNotModified)
	if resp == nil || resp.Value == nil {
		tb.Errorf("apitest: %s %s (%s) answered 304, which the OpenAPI document does not declare",
			req.Method, req.URL.RequestURI(), route.Operation.OperationID)
		return
	}
	for name, h := range resp.Value.Headers {
		if h.Value != nil && h.Value.Required && header.Get(name) == "" {
			tb.Errorf("apitest: %s %s answered 304 without its required header %s", req.Method, req.URL.RequestURI(), name)
		}
	}
	if len(body) > 0 {
		tb.Errorf("apitest: %s %s answered 304 with a body: %s", req.Method, req.URL.RequestURI(), quote(body))
	}
}

// checkErrorStatus fails tb when an error body's status differs from the HTTP status: the
// document says they are always equal. A body without an integer status is left to the schema.
func checkErrorStatus(tb testing.TB, req *http.Request, status int, body []byte) {
	tb.Helper()
	if status < http.StatusBadRequest {
		return
	}
	var e struct {
		Status *int `json:"status"`
	}
	if json.Unmarshal(body, &e) != nil || e.Status == nil {
		return
	}
	if *e.Status != status {
		tb.Errorf("apitest: %s %s answered %d with an Error body whose status is %d; want them equal\nbody: %s",
			req.Method, req.URL.RequestURI(), status, *e.Status, quote(body))
	}
}

// route finds the documented operation of req and returns a copy of req whose URL holds only
// the path and query. It reports false when the document does not describe the operation, and
// fails tb when the router itself fails.
func (v *Validator) route(tb testing.TB, req *http.Request) (*http.Request, *routers.Route, map[string]string, bool) {
	tb.Helper()
	// Match on the path alone: the server is the relative /v1, and a client request's URL
	// carries a scheme and host that it would not match.
	r := req.Clone(context.Background())
	r.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	route, params, err := v.router.FindRoute(r)
	if err != nil {
		var routeErr *routers.RouteError
		if !errors.As(err, &routeErr) {
			tb.Errorf("apitest: routing %s %s: %v", req.Method, req.URL.RequestURI(), err)
		}
		return nil, nil, nil, false
	}
	if !exact(route, params, r.URL.EscapedPath()) {
		return nil, nil, nil, false
	}
	return r, route, params, true
}

// exact reports whether path is the route's template with its parameters filled in. The
// router also matches a path with trailing slashes (/v1/pets/), which the document does not
// describe.
func exact(route *routers.Route, params map[string]string, path string) bool {
	want := route.Path
	for name, value := range params {
		want = strings.ReplaceAll(want, "{"+name+"}", value)
	}
	return "/v1"+want == path
}

// quote returns body for a failure message, cut to maxBodyInMessage bytes.
func quote(body []byte) string {
	if len(body) > maxBodyInMessage {
		return string(body[:maxBodyInMessage]) + "… (cut)"
	}
	return string(body)
}
