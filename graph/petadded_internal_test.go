package graph

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/vektah/gqlparser/v2/ast"

	"petstore/live"
	"petstore/models"
)

// petAddedRun is the petAdded selection of one subscription document, ready to write events.
type petAddedRun struct {
	ctx context.Context
	ec  *executionContext
	sel ast.SelectionSet
}

// newPetAddedRun parses and validates query with vars as the WebSocket and SSE transports do,
// and returns its petAdded selection; false when the document is not a valid subscription of
// petAdded.
func newPetAddedRun(query string, vars map[string]any) (petAddedRun, bool) {
	es := NewExecutableSchema(Config{Resolvers: &Resolver{}})
	ctx := graphql.StartOperationTrace(context.Background())
	oc, errs := executor.New(es).CreateOperationContext(ctx, &graphql.RawParams{Query: query, Variables: vars})
	if errs != nil || oc.Operation.Operation != ast.Subscription {
		return petAddedRun{}, false
	}
	root := graphql.CollectFields(oc, oc.Operation.SelectionSet, subscriptionImplementors)
	if len(root) != 1 || root[0].Name != "petAdded" {
		return petAddedRun{}, false
	}
	ctx = graphql.WithResponseContext(graphql.WithOperationContext(ctx, oc), graphql.DefaultErrorPresenter, graphql.DefaultRecover)
	return petAddedRun{ctx: ctx, ec: newExecutionContext(oc, es.(*executableSchema), nil), sel: root[0].Selections}, true
}

// write returns ev as gqlgen's _PetAdded writes it, as marshalPetAdded does, and whether
// marshalPetAdded took the event's shared rendering.
func (r petAddedRun) write(ev *live.Event) (generic, ours string, shared bool) {
	var g, o bytes.Buffer
	r.ec._PetAdded(r.ctx, r.sel, ev).MarshalGQL(&g)
	m := r.ec.marshalPetAdded(r.ctx, r.sel, ev)
	m.MarshalGQL(&o)
	_, shared = m.(*renderedEvent)
	return g.String(), o.String(), shared
}

// TestPetAddedMatchesGeneric checks that an event written from its shared rendering reads
// byte for byte like gqlgen's own writing of it, for every way of spelling a selection,
// variables deciding @skip and @include, names that need escaping (invalid UTF-8 included), a
// missing status; with every selection asking the same event in turn, so that each must get
// the rendering of its own shape (the first live.MaxRenderings kept, the others made afresh).
// The selections gqlgen's path must keep are written by it.
func TestPetAddedMatchesGeneric(t *testing.T) {
	cases := []struct {
		sel, fragments string
		vars           map[string]any
		shared         bool
	}{
		{sel: "cursor pet { id }", shared: true},
		{sel: "c: cursor pet { i: id }", shared: true}, // the same fields, other names
		{sel: "cursor pet { i: id }", shared: true},
		{sel: "cursor pet { id name categoryId status }", shared: true},
		{sel: "pet { status categoryId name id __typename } cursor __typename", shared: true},
		{sel: "__typename", shared: true},
		{sel: "c: cursor p: pet { a: id b: name } t: __typename", shared: true},
		{sel: "cursor cursor pet { name name id a: name } pet { status }", shared: true},
		{sel: "...F", fragments: "fragment F on PetAdded { cursor pet { ...P } } fragment P on Pet { id name }", shared: true},
		{sel: "... on PetAdded { cursor } ... { pet { id } }", shared: true},
		{sel: "cursor @skip(if: true) pet { id @include(if: false) name }", shared: true},
		{sel: "cursor @skip(if: $v) pet { id @skip(if: $v) name @include(if: $v) status }", vars: map[string]any{"v": true}, shared: true},
		{sel: "cursor @skip(if: $v) pet { id @skip(if: $v) name @include(if: $v) status }", vars: map[string]any{"v": false}, shared: true},
		{sel: "pet { id } cursor", shared: true},
		{sel: "cursor pet { name }", shared: true},
		{sel: "cursor pet { __typename @skip(if: true) }"},
		{sel: "cursor @skip(if: true)"},
	}
	names := []string{"Rex", `quote " back \ slash`, "tab\tnew\nline\rcr\x00nul\x1funit", "<b>&amp;</b>", "ünïcødé 🐕", "bad \xff\xfe utf8", "\u2028\u2029"}
	statuses := []*models.PetStatus{ptr(models.PetStatusAvailable), nil, ptr(models.PetStatusSold)}
	for i, name := range names {
		id := int64(1)<<62 + int64(i)
		ev := &live.Event{Cursor: models.EncodeCursor(id), Pet: &models.Pet{ID: id, Name: name, CategoryID: int64(i) + 1, Status: statuses[i%len(statuses)]}}
		for _, tc := range cases {
			decl := ""
			if tc.vars != nil {
				decl = "($v: Boolean!)"
			}
			run, ok := newPetAddedRun("subscription"+decl+" { petAdded { "+tc.sel+" } }\n"+tc.fragments, tc.vars)
			if !ok {
				t.Fatalf("%s: not a valid subscription", tc.sel)
			}
			generic, ours, shared := run.write(ev)
			if ours != generic {
				t.Errorf("%s %v, pet %q:\nours    %s\ngeneric %s", tc.sel, tc.vars, name, ours, generic)
			}
			if shared != tc.shared {
				t.Errorf("%s %v: shared rendering %v; want %v", tc.sel, tc.vars, shared, tc.shared)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestGeneratedPetAddedUsesMarshalPetAdded checks that generated.go was made by `make
// generate` (tools/gqlgen), which points PetAdded's marshaller at marshalPetAdded.
func TestGeneratedPetAddedUsesMarshalPetAdded(t *testing.T) {
	src, err := os.ReadFile("generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "return ec.marshalPetAdded(ctx, sel, v)") {
		t.Error("generated.go does not call marshalPetAdded; run make generate")
	}
}

// FuzzPetAdded checks that any valid selection of petAdded, with any pet, is written as
// gqlgen writes it, from a fresh event and from one that has rendered it already.
func FuzzPetAdded(f *testing.F) {
	for _, s := range []string{
		"{ cursor pet { id name } }",
		"{ c: cursor pet { ...P __typename } } fragment P on Pet { status categoryId }",
		"{ ... on PetAdded { pet { id @skip(if: $v) } } cursor @include(if: $v) }",
		"{ pet { __typename } __typename }",
	} {
		f.Add(s, "Rex", int64(1), int64(2), uint8(0), true)
	}
	f.Add("{ pet { name } }", "<\xff\u2028\"", int64(-1), int64(1)<<62, uint8(3), false)
	f.Fuzz(func(t *testing.T, sel, name string, id, categoryID int64, status uint8, v bool) {
		query, vars := "subscription { petAdded "+sel, map[string]any(nil)
		if strings.Contains(sel, "$v") {
			query, vars = "subscription($v: Boolean!) { petAdded "+sel, map[string]any{"v": v}
		}
		run, ok := newPetAddedRun(query, vars)
		if !ok {
			return
		}
		pet := &models.Pet{ID: id, Name: name, CategoryID: categoryID}
		if all := []models.PetStatus{models.PetStatusAvailable, models.PetStatusPending, models.PetStatusSold}; int(status) < len(all) {
			pet.Status = &all[status]
		}
		ev := &live.Event{Cursor: models.EncodeCursor(id), Pet: pet}
		for range 2 {
			if generic, ours, _ := run.write(ev); ours != generic {
				t.Fatalf("%s %v, pet %+v:\nours    %s\ngeneric %s", query, vars, pet, ours, generic)
			}
		}
	})
}
