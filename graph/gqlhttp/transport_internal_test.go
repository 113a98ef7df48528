package gqlhttp

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// FuzzWriteResponse checks that writeResponse writes a response as json.Marshal does, for data
// as gqlgen's marshallers write it (strings quoted by graphql.MarshalString).
func FuzzWriteResponse(f *testing.F) {
	for _, s := range []string{"Rex", "<script>&</script>", "\u2028\u2029", "\xff", `"\`} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, withErrors bool) {
		var data bytes.Buffer // as graph's appendGQLString writes s (FuzzGQLString)
		data.WriteString(`{"pets":[{"name":`)
		graphql.MarshalString(s).MarshalGQL(&data)
		resp := &graphql.Response{Data: append(data.Bytes(), `,"id":"1"}]}`...)}
		if withErrors {
			resp.Errors = gqlerror.List{{Message: s}}
		} else { // as gqlgen's executor leaves a response without errors
			resp.Errors, resp.Extensions = gqlerror.List{}, map[string]any{}
		}
		want, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		writeResponse(&got, resp)
		if got.String() != string(want) {
			t.Errorf("got  %s\nwant %s", got.String(), want)
		}
	})
}

// BenchmarkDecodeParams measures the reading of a typical POST body: a mutation with its
// input in variables.
func BenchmarkDecodeParams(b *testing.B) {
	body := []byte(`{"query":"mutation Add($in: NewPet!) { createPet(input: $in) { id name categoryId status } }",` +
		`"operationName":"Add","variables":{"in":{"name":"Rex","categoryId":3,"status":"AVAILABLE"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeParams(body); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNegotiateShortcuts checks that the Accept values negotiate answers without parsing get
// the answer of parseAccept.
func TestNegotiateShortcuts(t *testing.T) {
	for _, accept := range []string{"", mediaJSON, "*/*", mediaGraphQLResponse} {
		if got, want := negotiate(accept), parseAccept(accept); got != want {
			t.Errorf("negotiate(%q) = %s; parseAccept answers %s", accept, got, want)
		}
	}
}
