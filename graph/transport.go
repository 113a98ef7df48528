package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"petstore/apierr"
	"petstore/graph/guard"
	"petstore/internal/jsonbody"
)

// The media types of a GraphQL response.
const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
)

// specTransport is GraphQL over HTTP as the specification asks: it picks the response media
// type from Accept by q-value, refuses batches and GET mutations, and gives request errors
// their status and no data entry (specWriter). GET runs through gqlgen's transport; POST
// through doPost, gqlgen's POST transport with the body read once and successful answers
// written without re-encoding.
type specTransport struct {
	method string
	get    map[string]graphql.Transport // gqlgen's GET transport answering with each media type
}

func newSpecTransport(method string) specTransport {
	t := specTransport{method: method}
	if method == http.MethodGet {
		t.get = map[string]graphql.Transport{}
		for _, media := range []string{mediaJSON, mediaGraphQLResponse} {
			t.get[media] = transport.GET{ResponseHeaders: map[string][]string{"Content-Type": {media + "; charset=utf-8"}}}
		}
	}
	return t
}

// Supports reports whether the transport takes r: a GET, or a POST of application/json.
func (t specTransport) Supports(r *http.Request) bool {
	if t.method == http.MethodGet {
		return t.get[mediaJSON].Supports(r)
	}
	return transport.POST{}.Supports(r)
}

// Do answers r.
func (t specTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	media := negotiate(strings.Join(r.Header.Values("Accept"), ","))
	if h := w.Header(); len(h["Vary"]) == 0 {
		h["Vary"] = varyAccept
	} else {
		h.Add("Vary", "Accept")
	}
	x := &exchange{writer: specWriter{ResponseWriter: w, media: media}}
	sw := &x.writer
	x.exec = specExecutor{GraphExecutor: exec, w: sw}
	if t.method == http.MethodPost {
		doPost(sw, r, &x.exec)
		return
	}
	if apiErr := checkGetParams(r.URL.Query()); apiErr != nil {
		writeRequestError(w, media, apiErr)
		return
	}
	x.exec.queriesOnly = true
	t.get[media].Do(sw, r, &x.exec)
}

// exchange is the writer and executor of one request, allocated together.
type exchange struct {
	writer specWriter
	exec   specExecutor
}

// Header values shared by every answer, as gin and package rest share theirs: net/http only
// reads them, and Header.Add appends to a full slice by copying it.
var (
	varyAccept   = []string{"Accept"}
	contentTypes = map[string][]string{
		mediaJSON:            {mediaJSON + "; charset=utf-8"},
		mediaGraphQLResponse: {mediaGraphQLResponse + "; charset=utf-8"},
	}
)

// checkGetParams reads the parameters of a GET as decodeParams reads a POST's body: each at
// most once (gqlgen's transport would run the first), and the JSON of variables and extensions
// as jsonbody.Check reads it.
func checkGetParams(q url.Values) *apierr.Error {
	for _, name := range []string{"query", "operationName", "variables", "extensions"} {
		if len(q[name]) > 1 {
			return apierr.Invalid("the %s parameter must be given at most once", name)
		}
	}
	for _, name := range []string{"variables", "extensions"} {
		if text := q.Get(name); text != "" {
			if err := jsonbody.Check("the "+name+" parameter", []byte(text)); err != nil {
				return apierr.From(err)
			}
		}
	}
	return nil
}

// doPost runs the operation of a POST, as gqlgen's transport.POST does.
func doPost(w *specWriter, r *http.Request, exec *specExecutor) {
	ctx := r.Context()
	body, apiErr := readBody(r)
	if apiErr != nil && apiErr.Code == apierr.PayloadTooLarge {
		apierr.Write(w.ResponseWriter, r, apiErr) // the same Error body as every 413 of the API
		return
	}
	if apiErr != nil {
		writeRequestError(w.ResponseWriter, w.media, apiErr)
		return
	}
	start := graphql.Now()
	params, err := decodeParams(body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		writeResponse(w, exec.DispatchError(ctx, gqlerror.List{{Message: apierr.From(err).Message}}))
		return
	}
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	opCtx, errs := exec.CreateOperationContext(ctx, params)
	if errs != nil {
		w.WriteHeader(http.StatusOK) // specWriter gives it the status of errs
		writeResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, opCtx), errs))
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, opCtx)
	writeResponse(w, responses(ctx))
}

// postBody is the body of a POST: its four members, by their exact names.
type postBody struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
	Extensions    map[string]any `json:"extensions"`
}

// decodeParams reads the body of a POST as jsonbody.Decode reads every body: a repeated
// member (a second "query", a variable given twice), "QUERY" for "query" or invalid UTF-8 is
// refused or ignored, never guessed at. Numbers in variables and extensions are kept as
// json.Number, as gqlgen's transports keep them.
func decodeParams(body []byte) (*graphql.RawParams, error) {
	if query, ok := plainQueryBody(body); ok {
		return &graphql.RawParams{Query: query}, nil
	}
	var in postBody
	if err := jsonbody.Decode(body, &in); err != nil {
		return nil, err
	}
	return &graphql.RawParams{Query: in.Query, OperationName: in.OperationName, Variables: in.Variables, Extensions: in.Extensions}, nil
}

// plainQueryBody returns the query of a body that is exactly {"query":"QUERY"}, QUERY valid
// UTF-8 without quotes, backslashes or control characters: what most clients send, and what
// jsonbody.Decode reads as that query and nothing else. ok is false for any other body.
func plainQueryBody(body []byte) (query string, ok bool) {
	const head, tail = `{"query":"`, `"}`
	if len(body) < len(head)+len(tail) || string(body[:len(head)]) != head || string(body[len(body)-len(tail):]) != tail {
		return "", false
	}
	q := body[len(head) : len(body)-len(tail)]
	for _, c := range q {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(q) {
		return "", false
	}
	return string(q), true
}

// writeResponse writes resp as JSON, as json.Marshal writes it. An answer with data and
// nothing else, the common case, is written without running its data, which gqlgen's
// marshallers wrote compact, through encoding/json's validating compaction again: only its
// HTML characters are escaped, as json.Marshal does.
func writeResponse(w io.Writer, resp *graphql.Response) {
	if len(resp.Data) > 0 && len(resp.Errors) == 0 && resp.Label == "" && len(resp.Path) == 0 && resp.HasNext == nil && len(resp.Extensions) == 0 {
		b := responseBuffers.Get().(*bytes.Buffer)
		b.Reset()
		b.WriteString(`{"data":`)
		if needsHTMLEscape(resp.Data) {
			json.HTMLEscape(b, resp.Data)
		} else {
			b.Write(resp.Data)
		}
		b.WriteByte('}')
		_, _ = w.Write(b.Bytes())
		if b.Cap() <= maxPooledResponseBytes {
			responseBuffers.Put(b)
		}
		return
	}
	b, err := json.Marshal(resp)
	if err != nil {
		panic(fmt.Errorf("graphql response: %w", err)) // gqlgen's transports panic alike
	}
	_, _ = w.Write(b)
}

// responseBuffers holds the buffers writeResponse writes answers in; one larger than
// maxPooledResponseBytes is left to the garbage collector.
var responseBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledResponseBytes = 64 << 10

// needsHTMLEscape reports whether json.HTMLEscape would change data: whether it has <, > or &,
// or the first byte of U+2028 or U+2029 (json.HTMLEscape then decides).
func needsHTMLEscape(data []byte) bool {
	for _, c := range []byte{'<', '>', '&', 0xE2} {
		if bytes.IndexByte(data, c) >= 0 {
			return true
		}
	}
	return false
}

// negotiate returns the media type to answer a request that sends accept with: of
// application/graphql-response+json and application/json (which */* and application/* stand
// for), the one with the highest q-value, the first listed on a tie. It is application/json
// when accept names neither: the specification allows that or 406, and this keeps every
// client working.
func negotiate(accept string) string {
	switch accept { // what most clients send, answered as parseAccept answers it
	case "", mediaJSON, "*/*":
		return mediaJSON
	case mediaGraphQLResponse:
		return mediaGraphQLResponse
	}
	return parseAccept(accept)
}

// parseAccept is negotiate, reading accept in full.
func parseAccept(accept string) string {
	best, bestQ := mediaJSON, 0.0
	for part := range strings.SplitSeq(accept, ",") {
		mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		media := mediaJSON
		switch mediaType {
		case mediaGraphQLResponse:
			media = mediaGraphQLResponse
		case mediaJSON, "application/*", "*/*":
		default:
			continue
		}
		if q > bestQ {
			best, bestQ = media, q
		}
	}
	return best
}

// readBody reads the body of a POST as jsonbody.Read does (413 past jsonbody.MaxBytes), and
// refuses a batch: a JSON array of operations.
func readBody(r *http.Request) ([]byte, *apierr.Error) {
	body, err := jsonbody.Read(r.Body)
	if err != nil {
		return nil, apierr.From(err)
	}
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		return nil, apierr.Invalid("batched requests (a JSON array of operations) are not supported: send one operation per request")
	}
	return body, nil
}

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
		if code, _ := e.Extensions["code"].(string); keptCodes[code] {
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
			setCode(e, apierr.InvalidRequest)
		}
	}
	fixed, err := json.Marshal(resp)
	return fixed, err == nil
}

// writeRequestError answers a request that gqlgen does not see with err, as a GraphQL response
// of media type media without data.
func writeRequestError(w http.ResponseWriter, media string, err *apierr.Error) {
	e := &gqlerror.Error{Message: err.Message}
	setCode(e, err.Code)
	body, _ := json.Marshal(struct {
		Errors gqlerror.List `json:"errors"`
	}{gqlerror.List{e}})
	w.Header().Set("Content-Type", media+"; charset=utf-8")
	w.WriteHeader(err.Status())
	_, _ = w.Write(body)
}

// unsupportedRequest answers what no other transport takes: 415 for a POST that is not
// application/json, 400 for anything else (such as a WebSocket upgrade).
type unsupportedRequest struct{}

// Supports takes every request.
func (unsupportedRequest) Supports(*http.Request) bool { return true }

// Do refuses r.
func (unsupportedRequest) Do(w http.ResponseWriter, r *http.Request, _ graphql.GraphExecutor) {
	media := negotiate(strings.Join(r.Header.Values("Accept"), ","))
	if r.Method == http.MethodPost {
		writeRequestError(w, media, apierr.New(apierr.UnsupportedMediaType,
			"a GraphQL POST needs Content-Type: application/json; got %q", r.Header.Get("Content-Type")))
		return
	}
	writeRequestError(w, media, apierr.Invalid("GraphQL is served over plain HTTP GET (queries) and POST (application/json)"))
}
