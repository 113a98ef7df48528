package gqlhttp

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
)

// writeResponse writes resp as JSON, as gqlgen's transports write it: json.Marshal, and a
// panic on a response it cannot marshal.
func writeResponse(w io.Writer, resp *graphql.Response) {
	b, err := json.Marshal(resp)
	if err != nil {
		panic(fmt.Errorf("graphql response: %w", err)) // gqlgen's transports panic alike
	}
	_, _ = w.Write(b)
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
