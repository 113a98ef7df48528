// Package gqlhttp serves GraphQL over HTTP as the GraphQL-over-HTTP specification asks: gqlgen
// transports for GET and POST that read requests strictly (internal/jsonbody), negotiate the
// response media type, refuse batches and GET mutations, and give request errors their status
// and no data entry; and one that answers what no other transport takes.
package gqlhttp

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"petstore/apierr"
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

// NewTransport returns the transport of method, http.MethodGet (queries) or
// http.MethodPost (application/json).
func NewTransport(method string) graphql.Transport {
	return newSpecTransport(method)
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

// Do answers r. A GET's answer is held until complete, so that a successful one carries its
// ETag, and a matching If-None-Match gets 304 (heldAnswer).
func (t specTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	media := negotiate(strings.Join(r.Header.Values("Accept"), ","))
	if h := w.Header(); len(h["Vary"]) == 0 {
		h["Vary"] = varyAccept
	} else {
		h.Add("Vary", "Accept")
	}
	if t.method == http.MethodPost {
		x := &exchange{writer: specWriter{ResponseWriter: w, media: media}}
		x.exec = specExecutor{GraphExecutor: exec, w: &x.writer}
		doPost(&x.writer, r, &x.exec)
		return
	}
	if apiErr := checkGetParams(r.URL.Query()); apiErr != nil {
		writeRequestError(w, media, apiErr)
		return
	}
	r = moveDocumentID(r)
	held := &heldAnswer{ResponseWriter: w}
	x := &exchange{writer: specWriter{ResponseWriter: held, media: media}}
	x.exec = specExecutor{GraphExecutor: exec, w: &x.writer, queriesOnly: true}
	t.get[media].Do(&x.writer, r, &x.exec)
	held.send(r)
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
	for _, name := range []string{"query", "operationName", "variables", "extensions", "documentId"} {
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

// moveDocumentID returns r with its documentId parameter, if any, moved into its extensions
// parameter (withDocumentID), which checkGetParams has checked.
func moveDocumentID(r *http.Request) *http.Request {
	q := r.URL.Query()
	id, ok := q["documentId"]
	if !ok {
		return r
	}
	var ext map[string]any
	if text := q.Get("extensions"); text != "" {
		_ = json.Unmarshal([]byte(text), &ext)
	}
	b, _ := json.Marshal(withDocumentID(ext, id[0]))
	q.Set("extensions", string(b))
	q.Del("documentId")
	u := *r.URL
	u.RawQuery = q.Encode()
	r = r.Clone(r.Context())
	r.URL = &u
	return r
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
