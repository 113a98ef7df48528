package gqlhttp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
)

// DocumentIDBody is a transport of POSTs (gqlgen's SSE transport) whose body may name a trusted
// document by a top-level documentId member, as a POST of GraphQL over HTTP does
// (decodeParams): it moves the member into the extensions, where the handler reads it, before
// the transport, which would drop it, reads the body. Bodies without "documentId" pass as
// they are, read once more in memory.
type DocumentIDBody struct {
	graphql.Transport
}

// Do serves r with its documentId, if any, moved into its extensions.
func (t DocumentIDBody) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	body, err := io.ReadAll(r.Body)
	if err == nil && bytes.Contains(body, []byte(`"documentId"`)) {
		body = moveDocumentIDMember(body)
	}
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), failedRead{err}))
	t.Transport.Do(w, r, exec)
}

// moveDocumentIDMember returns body, a JSON object, with its documentId member moved into its
// extensions object (withDocumentID); a body that is not such an object is returned as it is,
// for the transport to refuse.
func moveDocumentIDMember(body []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	id, ok := m["documentId"]
	if !ok {
		return body
	}
	var ext map[string]json.RawMessage
	if raw, ok := m["extensions"]; ok && json.Unmarshal(raw, &ext) != nil {
		return body
	}
	if ext == nil {
		ext = make(map[string]json.RawMessage, 1)
	}
	ext["documentId"] = id
	delete(m, "documentId")
	var err error
	if m["extensions"], err = json.Marshal(ext); err != nil {
		return body
	}
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// failedRead is the end of a body read beforehand: its read error, or io.EOF for none.
type failedRead struct{ err error }

func (f failedRead) Read([]byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	return 0, io.EOF
}
