package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// TestConditionalGraphQLGet: a persisted query sent by GET gets an ETag and Cache-Control:
// private, no-cache; If-None-Match with that tag gets 304 until the answer changes; an answer
// with errors carries no validator.
func TestConditionalGraphQLGet(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		api.do(t, post("/v1/pets", `{"name":"Rex","categoryId":1}`))
		const query = "{ pets(limit: 5) { id name } }"
		sum := sha256.Sum256([]byte(query))
		ext := `{"persistedQuery":{"version":1,"sha256Hash":"` + hex.EncodeToString(sum[:]) + `"}}`
		persisted := "/v1/graphql?extensions=" + url.QueryEscape(ext)

		unknown := api.do(t, get(persisted))
		if unknown.status != 200 || !strings.Contains(unknown.body, "PERSISTED_QUERY_NOT_FOUND") || unknown.header.Get("ETag") != "" {
			t.Fatalf("unknown persisted query: %d, ETag %q, %s; want 200 PERSISTED_QUERY_NOT_FOUND without ETag",
				unknown.status, unknown.header.Get("ETag"), unknown.body)
		}
		register, _ := json.Marshal(map[string]any{"query": query, "extensions": json.RawMessage(ext)})
		if r := api.do(t, post("/v1/graphql", string(register))); r.status != 200 || strings.Contains(r.body, "errors") {
			t.Fatalf("registering the query: %d %s", r.status, r.body)
		}

		first := api.do(t, get(persisted))
		tag := first.header.Get("ETag")
		if first.status != 200 || tag == "" || first.header.Get("Cache-Control") != revalidate {
			t.Fatalf("persisted query by GET: %d, ETag %q, Cache-Control %q; want 200, a tag, %q",
				first.status, tag, first.header.Get("Cache-Control"), revalidate)
		}
		same := api.do(t, conditional(persisted, tag))
		if same.status != 304 || same.body != "" || same.header.Get("ETag") != tag {
			t.Fatalf("If-None-Match with its tag: %d, ETag %q, body %q; want 304, the tag, no body", same.status, same.header.Get("ETag"), same.body)
		}
		if same.header.Get("X-RateLimit-Remaining") == "" {
			t.Error("304 without the rate-limit headers")
		}
		api.do(t, post("/v1/pets", `{"name":"Tom","categoryId":1}`))
		changed := api.do(t, conditional(persisted, tag))
		if changed.status != 200 || changed.header.Get("ETag") == tag || !strings.Contains(changed.body, "Tom") {
			t.Fatalf("after a pet was added: %d, ETag %q, %s; want 200, a new tag, the new pet", changed.status, changed.header.Get("ETag"), changed.body)
		}
	})
}
