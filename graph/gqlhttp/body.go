package gqlhttp

import (
	"bytes"
	"net/http"
	"petstore/apierr"
	"petstore/internal/jsonbody"

	"github.com/99designs/gqlgen/graphql"
)

// postBody is the body of a POST: its five members, by their exact names.
type postBody struct {
	Query         string         `json:"query"`
	DocumentID    *string        `json:"documentId"` // a trusted document's id, in place of query
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
	Extensions    map[string]any `json:"extensions"`
}

// decodeParams reads the body of a POST as jsonbody.Decode reads every body: a repeated
// member (a second "query", a variable given twice), "QUERY" for "query" or invalid UTF-8 is
// refused or ignored, never guessed at. Numbers in variables and extensions are kept as
// json.Number, as gqlgen's transports keep them. A documentId goes to the extensions, where
// every transport's requests carry it (withDocumentID).
func decodeParams(body []byte) (*graphql.RawParams, error) {
	var in postBody
	if err := jsonbody.Decode(body, &in); err != nil {
		return nil, err
	}
	if in.DocumentID != nil {
		in.Extensions = withDocumentID(in.Extensions, *in.DocumentID)
	}
	return &graphql.RawParams{Query: in.Query, OperationName: in.OperationName, Variables: in.Variables, Extensions: in.Extensions}, nil
}

// readBody reads the body of a POST as jsonbody.Read does (413 past jsonbody.MaxBytes), and
// refuses a batch: a JSON array of operations.
func readBody(r *http.Request) ([]byte, *apierr.Error) {
	body, err := jsonbody.Read(r.Body, r.ContentLength)
	if err != nil {
		return nil, apierr.From(err)
	}
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		return nil, apierr.Invalid("batched requests (a JSON array of operations) are not supported: send one operation per request")
	}
	return body, nil
}

// withDocumentID returns extensions with documentId set to id: the GraphQL-over-HTTP trusted
// documents' documentId member or parameter, which the handler reads from the extensions as
// it does on WebSocket and SSE, where gqlgen's transports keep nothing else of the payload.
func withDocumentID(extensions map[string]any, id string) map[string]any {
	if extensions == nil {
		extensions = make(map[string]any, 1)
	}
	extensions["documentId"] = id
	return extensions
}
