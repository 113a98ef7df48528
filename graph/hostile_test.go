package graph_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"petstore/graph"
)

// numbered returns n copies of format, each given its index, joined by spaces.
func numbered(n int, format string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(format, i, i)
	}
	return strings.Join(parts, " ")
}

// TestDocumentBounds checks that documents whose validation would be expensive are refused
// before validation: the bounds are linear checks of the parsed document.
func TestDocumentBounds(t *testing.T) {
	typenames := "{" + strings.Repeat(" __typename", graph.DefaultTokenLimit-3) + " }"
	for _, tc := range []struct {
		name, query, msg string
	}{
		{"10,000 __typename", typenames, "the document has more than 200 selections"},
		{"10,000 __typename, a trailing space", typenames + " ", "the document has more than 200 selections"},
		{"201 __typename", "{" + strings.Repeat(" __typename", graph.MaxDocumentSelections+1) + " }", "more than 200 selections"},
		{"selections in fragments", "{ ...F } fragment F on Query {" + strings.Repeat(" __typename", graph.MaxDocumentSelections) + " }", "more than 200 selections"},
		{"many fragments", "{ ...F0 }\n" + numbered(graph.MaxDocumentDefinitions, "fragment F%d on Query { a%d: __typename }"), "defines 51 operations and fragments; at most 50"},
		{"many operations", numbered(graph.MaxDocumentDefinitions+1, "query Q%d { a%d: __typename }"), "defines 51 operations and fragments"},
	} {
		for _, accept := range []string{acceptGraphQL, acceptJSON} {
			t.Run(tc.name+"/"+accept, func(t *testing.T) {
				s := newServer(t, graph.DefaultOptions())
				s.checkRefused(t, s.do(t, post(tc.query, accept)), http.StatusBadRequest, "INVALID_REQUEST", tc.msg)
			})
		}
	}
}

// TestDocumentBoundsAdmit checks documents at the bounds run.
func TestDocumentBoundsAdmit(t *testing.T) {
	for _, tc := range []struct {
		name, query string
	}{
		{"200 selections", "{" + strings.Repeat(" __typename", graph.MaxDocumentSelections) + " }"},
		{"50 definitions", "{ " + spreads(graph.MaxDocumentDefinitions-1) + " }\n" + numbered(graph.MaxDocumentDefinitions-1, "fragment F%d on Query { a%d: __typename }")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, graph.DefaultOptions())
			if a := s.do(t, post(tc.query, acceptGraphQL)); a.status != http.StatusOK || len(a.errors) != 0 {
				t.Errorf("got %d %s; want 200 without errors", a.status, trim(a.body))
			}
		})
	}
}

// spreads returns the spreads of fragments F0 to Fn-1.
func spreads(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("...F%d", i)
	}
	return strings.Join(parts, " ")
}

// TestUnknownFragmentsRefusedEarly checks that spreads of undefined fragments, whose pairs
// validation compares, are a validation error found before validation.
func TestUnknownFragmentsRefusedEarly(t *testing.T) {
	s := newServer(t, graph.DefaultOptions())
	a := s.do(t, post("{ "+spreads(150)+" }", acceptGraphQL))
	s.checkRefused(t, a, http.StatusBadRequest, "INVALID_REQUEST", `Unknown fragment "F0".`)
	if len(a.errors) != 1 {
		t.Errorf("got %d errors; want 1", len(a.errors))
	}
}

// TestRequestErrorsTruncated checks that a document with thousands of validation errors (every
// pair of fields that share a response name conflicts) is answered with at most 100.
func TestRequestErrorsTruncated(t *testing.T) {
	s := newServer(t, graph.DefaultOptions())
	query := "{" + strings.Repeat(" p: pet(id: 1) { id } p: pet(id: 2) { id }", 40) + " }"
	a := s.do(t, post(query, acceptGraphQL))
	s.checkRefused(t, a, http.StatusBadRequest, "INVALID_REQUEST", "conflict")
	if last := a.errors[len(a.errors)-1].Message; len(a.errors) != 100 || !strings.HasSuffix(last, "more errors left out") {
		t.Errorf("got %d errors, the last %q; want 100, the last saying how many more", len(a.errors), last)
	}
}
