package e2e

import (
	"strconv"
	"strings"
	"testing"

	"petstore/documents"
	"petstore/testkit/dbtest"
)

// TestDocumentsAddAttacks: documents add refuses, naming the document and adding none, a
// hostile manifest: ids too long or outside the allowed characters (unicode, control
// characters), an id given two bodies across the manifests of one add, an id that is another
// body's SHA-256 (so that one hash would name two documents), bodies that are not strings or
// hold a NUL or invalid UTF-8, JSON nested too deep, and documents the server would refuse as
// text: over the complexity limit, the token limit, the root-field or definition bounds, or
// the size of a request body; a mutation of two fields. It stores nothing of them.
func TestDocumentsAddAttacks(t *testing.T) {
	var complex strings.Builder // 7 pages of 100 pets of 3 fields: a complexity of 7 * 301
	complex.WriteString("{ ")
	for i := range 7 {
		complex.WriteString("p" + strconv.Itoa(i) + ": pets(limit: 100) { id name categoryId } ")
	}
	complex.WriteString("}")
	manyRoots := "{ a: __typename p1: pet(id: 1) { id } p2: pet(id: 2) { id } p3: pet(id: 3) { id } p4: pet(id: 4) { id } p5: pet(id: 5) { id } p6: pet(id: 6) { id } p7: pet(id: 7) { id } p8: pet(id: 8) { id } p9: pet(id: 9) { id } p10: pet(id: 10) { id } p11: pet(id: 11) { id } }"
	var defs strings.Builder
	for i := range 51 {
		defs.WriteString("query Q" + strings.Repeat("x", i) + " { __typename } ")
	}
	tokens := "{ pets(limit: 1) { id " + strings.Repeat("id ", 10_000) + "} }"
	big := "# " + strings.Repeat("x", 1<<20) + "\n{ pets { id } }"
	twoMutations := `mutation { a: createPet(input: {name: "a", categoryId: "1"}) { id } b: createPet(input: {name: "b", categoryId: "1"}) { id } }`
	refused := []struct {
		name      string
		manifests []string
		want      string
	}{
		{"unicode id", []string{`{"ид":"{ pets { id } }"}`}, "an id has at most"},
		{"control character in an id", []string{`{"ok\n":"{ pets { id } }"}`}, "an id has at most"},
		{"id of 256 characters", []string{`{"` + strings.Repeat("a", 256) + `":"{ pets { id } }"}`}, "an id has at most"},
		{"space in an id", []string{`{"a b":"{ pets { id } }"}`}, "an id has at most"},
		{"one id, two bodies, two manifests", []string{`{"same":"{ pets { id } }"}`, `{"same":"{ pets { name } }"}`}, "listed with another body"},
		{"an id that is another body's hash", []string{`{"` + documents.Hash("{ pets { name } }") + `":"{ pets { id } }"}`}, "must be its body's"},
		{"a sha256: id of another body", []string{`{"sha256:` + documents.Hash("{ pets { name } }") + `":"{ pets { id } }"}`}, "must be its body's"},
		{"an Apollo id of another body", []string{`{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":"` + documents.Hash("{ pets { name } }") + `","body":"{ pets { id } }"}]}`}, "must be its body's"},
		{"a NUL in a body", []string{`{"nul":"{ pets { id } }\u0000"}`}, `document "nul"`},
		{"invalid UTF-8 in a body", []string{"{\"utf\":\"{ pets { id } }\xff\"}"}, "UTF-8"},
		{"deeply nested JSON", []string{strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000)}, "JSON object"},
		{"an Apollo manifest without operations", []string{`{"format":"apollo-persisted-query-manifest","version":1,"operations":null}`}, "no documents"},
		{"a body that is not a string", []string{`{"n":5}`}, "neither"},
		{"an Apollo entry without a body", []string{`{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":"x"}]}`}, "has no body"},
		{"too complex", []string{jsonBody(map[string]string{"complex": complex.String()})}, `document "complex"`},
		{"too many root fields", []string{jsonBody(map[string]string{"roots": manyRoots})}, `document "roots"`},
		{"too many definitions", []string{jsonBody(map[string]string{"defs": defs.String()})}, `document "defs"`},
		{"too many tokens", []string{jsonBody(map[string]string{"tokens": tokens})}, `document "tokens"`},
		{"two mutation fields", []string{jsonBody(map[string]string{"two": twoMutations})}, `document "two"`},
		{"larger than a request body", []string{jsonBody(map[string]string{"big": big})}, `document "big"`},
	}
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			dsn := dbtest.DSN(t, dialect)
			for _, c := range refused {
				args := []string{"documents", "add"}
				for _, m := range c.manifests {
					args = append(args, writeManifest(t, "m.json", m))
				}
				out, err := runCmd(t, dsn, args...)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: %v (out %q); want an error naming %q", c.name, err, out, c.want)
				}
			}
			if list, err := runCmd(t, dsn, "documents", "list"); err != nil || strings.Count(list, "\n") != 1 {
				t.Errorf("documents list after refused adds: %v\n%s; want no document", err, list)
			}
			body := "{ pets { id } }"
			honest := `{"sha256:` + documents.Hash(body) + `":"` + body + `","` + documents.Hash(body) + `":"` + body + `"}`
			if out, err := runCmd(t, dsn, "documents", "add", writeManifest(t, "m.json", honest)); err != nil || !strings.Contains(out, "added 2 documents") {
				t.Errorf("ids that are their bodies' hashes: %v\n%s; want both added", err, out)
			}
		})
	}
}
