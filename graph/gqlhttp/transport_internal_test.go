package gqlhttp

import "testing"

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
