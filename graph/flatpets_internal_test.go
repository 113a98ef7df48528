package graph

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/vektah/gqlparser/v2/ast"

	"petstore/models"
)

// TestGeneratedListsUseMarshalList checks that generated.go was made by `make generate`
// (tools/gqlgen), which points the generated list marshallers at marshalList: plain `gqlgen
// generate` leaves gqlgen's MarshalSliceConcurrently, and the flat path would no longer run.
func TestGeneratedListsUseMarshalList(t *testing.T) {
	src, err := os.ReadFile("generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), "marshalList(ec, ctx, sel, v, "); n == 0 || strings.Contains(string(src), "MarshalSliceConcurrently") {
		t.Errorf("generated.go calls marshalList %d times and MarshalSliceConcurrently %d times; want every list through marshalList (run make generate)",
			n, strings.Count(string(src), "MarshalSliceConcurrently"))
	}
}

// TestNoFieldInterceptors checks what the flat path assumes: the handler runs no field
// interceptor, which the flat path would skip.
func TestNoFieldInterceptors(t *testing.T) {
	for _, ext := range extensions(DefaultOptions().withDefaults(), graphql.NoCache[*ast.QueryDocument]{}, nil) {
		if _, ok := ext.(graphql.FieldInterceptor); ok {
			t.Errorf("extension %s intercepts fields: the flat path of flatpets.go would skip it", ext.ExtensionName())
		}
	}
}

// TestDirectSkipsNoInterceptor checks what the direct path (direct.go) assumes: besides
// operationRefusals, which acts on answers without data alone, no extension of the handler,
// a gate's included, intercepts operations, root fields or responses, which the direct path
// would skip.
func TestDirectSkipsNoInterceptor(t *testing.T) {
	opts := DefaultOptions().withDefaults()
	opts.Gate = nopGate{}
	for _, ext := range extensions(opts, graphql.NoCache[*ast.QueryDocument]{}, nil) {
		_, ops := ext.(graphql.OperationInterceptor)
		_, roots := ext.(graphql.RootFieldInterceptor)
		_, resps := ext.(graphql.ResponseInterceptor)
		if _, refusals := ext.(operationRefusals); ops || roots || (resps && !refusals) {
			t.Errorf("extension %s intercepts operations, root fields or responses: the direct path would skip it", ext.ExtensionName())
		}
	}
}

// nopGate is an OperationGate that charges nothing.
type nopGate struct{}

func (nopGate) Charge(context.Context, int) error { return nil }
func (nopGate) Admitted(context.Context)          {}
func (nopGate) Refused(context.Context)           {}

// FuzzGQLString checks that appendGQLString writes any string as graphql.MarshalString does.
func FuzzGQLString(f *testing.F) {
	for _, s := range []string{"", "Rex", `a"b\c`, "\x00\x01\t\n\r\x1f\x7f", "ü🐕", "\xff\xfe", "\u2028<>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		graphql.MarshalString(s).MarshalGQL(&want)
		if got := appendGQLString([]byte("x"), s); string(got[1:]) != want.String() {
			t.Errorf("appendGQLString(%q) = %s; want %s", s, got[1:], want.String())
		}
	})
}

// FuzzPlainFlatPlan checks that the plan plainFlatPlan makes of any valid selection of a list
// of pets writes what the plan of gqlgen's CollectFields writes, first made and then cached,
// and that it takes every plain selection.
func FuzzPlainFlatPlan(f *testing.F) {
	for _, s := range []string{
		"id name categoryId status",
		"name name id a: name",
		"a: id b: name c: categoryId d: status e: __typename",
		"__typename id __typename",
		"id ...F",
		"id @skip(if: true) name",
		"... on Pet { name }",
	} {
		f.Add(s)
	}
	es := NewExecutableSchema(Config{Resolvers: &Resolver{}})
	status := models.PetStatusSold
	pet := &models.Pet{ID: 7, Name: `Rex "the" dog`, CategoryID: 3, Status: &status}
	f.Fuzz(func(t *testing.T, sel string) {
		query := "{ pets { " + sel + " } }\nfragment F on Pet { status }"
		if !strings.Contains(sel, "...F") {
			query = "{ pets { " + sel + " } }"
		}
		oc, errs := executor.New(es).CreateOperationContext(graphql.StartOperationTrace(context.Background()), &graphql.RawParams{Query: query})
		if errs != nil {
			return
		}
		root := graphql.CollectFields(oc, oc.Operation.SelectionSet, queryImplementors)
		if len(root) != 1 || root[0].Name != "pets" {
			return
		}
		set := root[0].Selections
		want := newFlatPlan(graphql.CollectFields(oc, set, petImplementors))
		plain := true
		for _, s := range set {
			if f, ok := s.(*ast.Field); !ok || len(f.Directives) > 0 || len(f.SelectionSet) > 0 {
				plain = false
			}
		}
		for range 2 {
			got := plainFlatPlan(slices.Clone(set))
			switch {
			case got == nil && plain && want != nil:
				t.Fatalf("%s: plainFlatPlan took no plan of a plain selection", sel)
			case got == nil:
				continue
			case want == nil:
				t.Fatalf("%s: plainFlatPlan made a plan where CollectFields' fields are not flat", sel)
			}
			g, w := (&flatPet{plan: got, pet: pet}).appendTo(nil), (&flatPet{plan: want, pet: pet}).appendTo(nil)
			if !bytes.Equal(g, w) {
				t.Fatalf("%s:\nplain   %s\ncollect %s", sel, g, w)
			}
		}
	})
}
