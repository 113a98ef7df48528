package gqlhttp

import (
	"bytes"
	"net/http"
	"petstore/apierr"
	"petstore/internal/jsonbody"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
)

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
