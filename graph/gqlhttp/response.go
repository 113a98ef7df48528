package gqlhttp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
)

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
