package graph

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
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
