package graph_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"petstore/graph"
)

// TestLoneSurrogatesRefused checks that a string in the document with half a UTF-16 surrogate
// pair is refused before anything runs, as the strict JSON reading refuses it in bodies and
// variables: gqlparser's lexer would turn it into U+FFFD and the pet would be stored with
// another name than the one sent. Whole pairs, block strings and comments are untouched.
func TestLoneSurrogatesRefused(t *testing.T) {
	for _, name := range []string{`\ud800`, `\uDBFF x`, `\udc00`, `a\ud83d`, `\ud83d\u0041`, `ok\\\"\ud800`} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, graph.DefaultOptions())
			a := s.do(t, post(`mutation { createPet(input: {name: "`+name+`", categoryId: 1}) { name } }`, acceptGraphQL))
			s.checkRefused(t, a, http.StatusBadRequest, "INVALID_REQUEST", "surrogate")
		})
	}
	for _, tc := range []struct{ doc, want string }{
		{`mutation { createPet(input: {name: "\ud83d\udc36", categoryId: 1}) { name } }`, "🐶"},
		{`mutation { createPet(input: {name: """\ud800""", categoryId: 1}) { name } }`, `\ud800`},
		{`mutation { createPet(input: {name: "\\ud800", categoryId: 1}) { name } }`, `\ud800`},
		{"# \\ud800\nmutation { createPet(input: {name: \"\\u00e9\", categoryId: 1}) { name } }", "é"},
	} {
		s := newServer(t, graph.DefaultOptions())
		a := s.do(t, post(tc.doc, acceptGraphQL))
		var data struct{ CreatePet struct{ Name string } }
		if err := json.Unmarshal(a.data, &data); err != nil || len(a.errors) > 0 || data.CreatePet.Name != tc.want {
			t.Errorf("%s: got %s; want the pet named %q", tc.doc, trim(a.body), tc.want)
		}
	}
}
