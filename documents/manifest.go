// Package documents keeps the trusted GraphQL documents that apps register (`petstore
// documents add`), in the database that every instance shares: it reads the manifests that
// clients' build tools write, stores and lists the documents, and keeps each instance's
// Registry of them fresh, so that the GraphQL handler can run listed documents by id and
// refuse the others (graph.DocumentsMode).
package documents

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"petstore/internal/jsonbody"
)

// Entry is a document as a manifest gives it: its id, its text, and, in Apollo's manifests,
// its operation's name and type.
type Entry struct {
	ID, Body, Name, Type string
}

// The manifest formats Parse reads.
const (
	// FormatApollo is Apollo's persisted query manifest (generate-persisted-query-manifest):
	// {"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id","body","name","type"}]}.
	FormatApollo = "apollo-persisted-query-manifest"
	// FormatCodegen is graphql-codegen client preset's persisted-documents.json: {"<hash>":"<document>"}.
	FormatCodegen = "graphql-codegen persisted documents"
)

// MaxIDBytes is the longest id a document may have.
const MaxIDBytes = 255

// idPattern is what an id may hold: hashes in hexadecimal or base64url, and names.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._~:+/=-]+$`)

// Parse reads a manifest of either format, telling which from its content: an object whose
// "format" is FormatApollo is Apollo's, any other object of strings codegen's. It returns the
// documents in the manifest's order (codegen's by id), and an error naming what is wrong: not
// JSON, an unknown format or version, an entry without id or body, an id repeated with another
// body, an id too long or with characters outside letters, digits and ._~:+/=-, or an id that
// is a SHA-256 other than its body's.
func Parse(data []byte) (entries []Entry, format string, err error) {
	var probe struct {
		Format json.RawMessage `json:"format"`
	}
	if err := jsonbody.Decode(data, &probe); err != nil {
		return nil, "", fmt.Errorf("not a JSON object: %w", err)
	}
	if bytes.Equal(probe.Format, []byte(`"`+FormatApollo+`"`)) {
		entries, err = parseApollo(data)
		format = FormatApollo
	} else {
		entries, err = parseCodegen(data)
		format = FormatCodegen
	}
	if err != nil {
		return nil, format, err
	}
	return entries, format, checkEntries(entries)
}

func parseApollo(data []byte) ([]Entry, error) {
	var m struct {
		Version    int `json:"version"`
		Operations []struct {
			ID   string `json:"id"`
			Body string `json:"body"`
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"operations"`
	}
	if err := jsonbody.Decode(data, &m); err != nil {
		return nil, fmt.Errorf("an Apollo manifest: %w", err)
	}
	if m.Version != 1 {
		return nil, fmt.Errorf("an Apollo manifest of version %d: only version 1 is known", m.Version)
	}
	entries := make([]Entry, len(m.Operations))
	for i, op := range m.Operations {
		entries[i] = Entry{ID: op.ID, Body: op.Body, Name: op.Name, Type: op.Type}
	}
	return entries, nil
}

func parseCodegen(data []byte) ([]Entry, error) {
	var m map[string]string
	if err := jsonbody.Decode(data, &m); err != nil {
		return nil, errors.New(`neither an Apollo persisted query manifest nor graphql-codegen's persisted documents ({"<hash>":"<document>"}): ` + err.Error())
	}
	entries := make([]Entry, 0, len(m))
	for id, body := range m {
		entries = append(entries, Entry{ID: id, Body: body})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].ID < entries[j].ID })
	return entries, nil
}

// checkEntries refuses entries without an id or a body, with a bad id, whose id is a SHA-256
// (bare or after "sha256:") other than its body's, which would name another body's document,
// or whose id repeats with another body.
func checkEntries(entries []Entry) error {
	if len(entries) == 0 {
		return errors.New("the manifest lists no documents")
	}
	seen := map[string]string{}
	for i, e := range entries {
		switch {
		case e.ID == "":
			return fmt.Errorf("document %d has no id", i+1)
		case len(e.ID) > MaxIDBytes || !idPattern.MatchString(e.ID):
			return fmt.Errorf("document %q: an id has at most %d letters, digits and ._~:+/=-", e.ID, MaxIDBytes)
		case e.Body == "":
			return fmt.Errorf("document %q has no body", e.ID)
		case isHash(strings.TrimPrefix(e.ID, "sha256:")) && strings.TrimPrefix(e.ID, "sha256:") != Hash(e.Body):
			return fmt.Errorf("document %q: an id that is a SHA-256 must be its body's, %s", e.ID, Hash(e.Body))
		}
		if body, ok := seen[e.ID]; ok && body != e.Body {
			return fmt.Errorf("document %q is listed twice with different bodies", e.ID)
		}
		seen[e.ID] = e.Body
	}
	return nil
}

// isHash reports whether s is a SHA-256 in lower-case hex, which names the document whose
// body has it (Registry.Lookup, Registry.ByHash).
func isHash(s string) bool {
	return len(s) == 2*sha256.Size && strings.Trim(s, "0123456789abcdef") == ""
}

// Hash returns the hex SHA-256 of body: how a document sent as text, or by an automatic
// persisted query's hash, is known.
func Hash(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}
