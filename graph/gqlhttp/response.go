package gqlhttp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
)

// writeResponse writes resp as JSON, as gqlgen's transports write it: json.Marshal, and a
// panic on a response it cannot marshal. A plain answer (appendPlain) is written without
// json.Marshal, which would check and copy its data byte by byte again (a fifth of the CPU of
// a page of pets served from the page cache), into a buffer of bodies. Every answer goes to w
// in one Write: net/http sends a write past its buffer (2 KiB) to the connection at once, and
// a part written after it costs the connection a write of its own. An answer without errors,
// which the writer sends as it is, carries its Content-Length, as REST's answers do: net/http
// would send one larger than its buffer in chunks without it.
func writeResponse(w io.Writer, resp *graphql.Response) {
	buf := bodies.Get().(*[]byte)
	defer bodies.Put(buf)
	b, ok := appendPlain((*buf)[:0], resp)
	if cap(b) <= maxPooledBody {
		*buf = b // for the next answer, once w has this one
	}
	if !ok {
		var err error
		if b, err = json.Marshal(resp); err != nil {
			panic(fmt.Errorf("graphql response: %w", err)) // gqlgen's transports panic alike
		}
	}
	if len(resp.Errors) == 0 {
		setLength(w, len(b))
	}
	_, _ = w.Write(b)
}

// bodies holds the buffers that writeResponse writes plain answers from, each at most
// maxPooledBody bytes (a page of 100 pets with long names): a writer keeps nothing of what
// it is given once Write returns, and a buffer allocated for each answer costs several times
// the copy into it.
var bodies = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBody = 64 << 10

// setLength sets the Content-Length of w's answer to n, when w has headers.
func setLength(w io.Writer, n int) {
	if hw, ok := w.(interface{ Header() http.Header }); ok {
		hw.Header()["Content-Length"] = []string{strconv.Itoa(n)}
	}
}

// appendPlain appends resp to b as json.Marshal writes it, and returns true, when resp is
// plain: data and extensions only, and data that json.Marshal would write as it is, which
// gqlgen's compact output is unless it holds a character that json.Marshal escapes (<, >, &,
// U+2028, U+2029). FuzzWriteResponse holds writeResponse to json.Marshal.
func appendPlain(b []byte, resp *graphql.Response) ([]byte, bool) {
	if len(resp.Errors) > 0 || resp.Label != "" || len(resp.Path) > 0 || resp.HasNext != nil || len(resp.Data) == 0 || escaped(resp.Data) {
		return b, false
	}
	b = append(append(b, `{"data":`...), resp.Data...)
	if cost, ok := resp.Extensions["cost"].(int); ok && len(resp.Extensions) == 1 { // what most answers carry
		return append(strconv.AppendInt(append(b, `,"extensions":{"cost":`...), int64(cost), 10), '}', '}'), true
	}
	if len(resp.Extensions) == 0 {
		return append(b, '}'), true
	}
	ext, err := json.Marshal(resp.Extensions)
	if err != nil {
		return b, false
	}
	return append(append(append(b, `,"extensions":`...), ext...), '}'), true
}

// escaped reports whether json.Marshal escapes a byte of data, compact JSON: one of <, > and
// &, or the first byte of U+2028 and U+2029 (0xE2, which a few other characters share).
func escaped(data []byte) bool {
	return bytes.IndexByte(data, '<') >= 0 || bytes.IndexByte(data, '>') >= 0 ||
		bytes.IndexByte(data, '&') >= 0 || bytes.IndexByte(data, 0xE2) >= 0
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
