package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"petstore/rest"
)

const (
	publicURL  = "https://api.example.com/v1"
	stagingURL = "https://staging.example.com/v1"
)

var contact = rest.Contact{Email: "api@example.com", URL: "https://example.com/support"}

// loadDoc returns the served document, parsed and validated by kin-openapi.
func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	raw, err := rest.OpenAPIDocument(publicURL, stagingURL, contact)
	if err != nil {
		t.Fatalf("OpenAPIDocument: %v", err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		t.Fatalf("LoadFromData: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return doc
}

func TestOpenAPIDocumentIsCompactJSON(t *testing.T) {
	raw, err := rest.OpenAPIDocument(publicURL, stagingURL, contact)
	if err != nil {
		t.Fatalf("OpenAPIDocument: %v", err)
	}
	const prefix = `{"openapi":"3.0.3","info":`
	if !bytes.HasPrefix(raw, []byte(prefix)) {
		t.Errorf("got prefix %.40q; want %q", raw, prefix)
	}
	if bytes.ContainsAny(raw, "\n\t") {
		t.Errorf("got a document with newlines or tabs; want compact JSON")
	}
}

func TestOpenAPIDocumentRejectsBadSettings(t *testing.T) {
	tests := []struct {
		name, public, staging string
	}{
		{"empty public", "", stagingURL},
		{"empty staging", publicURL, ""},
		{"relative", "/v1", stagingURL},
		{"no version", "https://api.example.com", stagingURL},
		{"other scheme", "ftp://api.example.com/v1", stagingURL},
		{"query", publicURL, stagingURL + "?x=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := rest.OpenAPIDocument(tt.public, tt.staging, contact); err == nil {
				t.Errorf("got no error; want one")
			}
		})
	}
	if _, err := rest.OpenAPIDocument(publicURL, stagingURL, rest.Contact{URL: contact.URL}); err == nil {
		t.Errorf("contact without an email: got no error; want one")
	}
}

func TestOpenAPIInfoAndServers(t *testing.T) {
	doc := loadDoc(t)
	if got, want := doc.OpenAPI, "3.0.3"; got != want {
		t.Errorf("openapi: got %v; want %v", got, want)
	}
	if got, want := doc.Info.Version, "1.0.0"; got != want {
		t.Errorf("info.version: got %v; want %v", got, want)
	}
	if doc.Info.Title == "" {
		t.Errorf("info.title: got empty; want a title")
	}
	for _, want := range []string{"petstore_live_", "petstore_test_", "| free | 60 | 1,000 |", "5 December 2030"} {
		if !bytes.Contains([]byte(doc.Info.Description), []byte(want)) {
			t.Errorf("info.description: got no %q; want it mentioned", want)
		}
	}
	if l := doc.Info.License; l == nil || l.Name != "MIT" || l.URL != "https://opensource.org/licenses/MIT" {
		t.Errorf("info.license: got %+v; want MIT, https://opensource.org/licenses/MIT", l)
	}
	if c := doc.Info.Contact; c == nil || c.Name != "Pet Store API support" || c.Email != contact.Email || c.URL != contact.URL {
		t.Errorf("info.contact: got %+v; want Pet Store API support, %s, %s", c, contact.Email, contact.URL)
	}
	want := []struct{ url, description string }{{publicURL, "Production"}, {stagingURL, "Staging"}}
	if got := len(doc.Servers); got != len(want) {
		t.Fatalf("servers: got %v; want %v", got, len(want))
	}
	for i, w := range want {
		if got := doc.Servers[i]; got.URL != w.url || got.Description != w.description {
			t.Errorf("servers[%d]: got %v %v; want %v %v", i, got.URL, got.Description, w.url, w.description)
		}
	}
}

// TestOpenAPIContactWithoutURL: a contact without a web page has no url member.
func TestOpenAPIContactWithoutURL(t *testing.T) {
	raw, err := rest.OpenAPIDocument(publicURL, stagingURL, rest.Contact{Email: "api@example.com"})
	if err != nil {
		t.Fatalf("OpenAPIDocument: %v", err)
	}
	var doc struct {
		Info struct{ Contact map[string]string }
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"name": "Pet Store API support", "email": "api@example.com"}
	if !maps.Equal(doc.Info.Contact, want) {
		t.Errorf("info.contact: got %v; want %v", doc.Info.Contact, want)
	}
}

func TestOpenAPITags(t *testing.T) {
	doc := loadDoc(t)
	for _, name := range []string{"animals", "Store", "Pets", "webhooks"} {
		tag := doc.Tags.Get(name)
		if tag == nil {
			t.Errorf("tag %s: got none; want it declared", name)
			continue
		}
		if tag.Description == "" {
			t.Errorf("tag %s: got no description; want one", name)
		}
	}
}

func TestOpenAPIOperations(t *testing.T) {
	doc := loadDoc(t)
	tests := []struct {
		method, path, id, tag string
		deprecated            bool
	}{
		{http.MethodGet, "/pets", "listPets", "animals", false},
		{http.MethodPost, "/pets", "createPet", "animals", false},
		{http.MethodGet, "/pets/{petId}", "getPet", "animals", true},
		{http.MethodGet, "/store/orders", "listOrders", "Store", false},
		{http.MethodGet, "/webhooks", "listWebhooks", "webhooks", false},
		{http.MethodPost, "/webhooks", "createWebhook", "webhooks", false},
		{http.MethodDelete, "/webhooks/{webhookId}", "deleteWebhook", "webhooks", false},
		{http.MethodPost, "/webhooks/{webhookId}/secret", "rotateWebhookSecret", "webhooks", false},
		{http.MethodGet, "/webhooks/{webhookId}/deliveries", "listWebhookDeliveries", "webhooks", false},
		{http.MethodPost, "/webhooks/{webhookId}/replay", "replayWebhook", "webhooks", false},
	}
	count := 0
	for _, item := range doc.Paths.Map() {
		count += len(item.Operations())
	}
	if count != len(tests) {
		t.Errorf("operations: got %v; want %v", count, len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			op := doc.Paths.Find(tt.path).GetOperation(tt.method)
			if op == nil {
				t.Fatalf("%s %s: got no operation; want %s", tt.method, tt.path, tt.id)
			}
			if op.OperationID != tt.id {
				t.Errorf("operationId: got %v; want %v", op.OperationID, tt.id)
			}
			if !slices.Equal(op.Tags, []string{tt.tag}) {
				t.Errorf("tags: got %v; want %v", op.Tags, []string{tt.tag})
			}
			if op.Deprecated != tt.deprecated {
				t.Errorf("deprecated: got %v; want %v", op.Deprecated, tt.deprecated)
			}
			if op.Security == nil || len(*op.Security) != 1 || (*op.Security)[0]["bearerAuth"] == nil {
				t.Errorf("security: got %v; want [{bearerAuth: []}]", op.Security)
			}
		})
	}
}

func TestOpenAPIBearerScheme(t *testing.T) {
	doc := loadDoc(t)
	ref := doc.Components.SecuritySchemes["bearerAuth"]
	if ref == nil || ref.Value == nil {
		t.Fatalf("securitySchemes.bearerAuth: got none; want it declared")
	}
	s := ref.Value
	got := []string{s.Type, s.Scheme, s.BearerFormat}
	if want := []string{"http", "bearer", "API key"}; !slices.Equal(got, want) {
		t.Errorf("bearerAuth: got %v; want %v", got, want)
	}
}

// rateLimitHeaders are the headers every response of every /v1 operation declares.
var rateLimitHeaders = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"}

func TestOpenAPIEveryResponseDeclaresRateLimitHeaders(t *testing.T) {
	doc := loadDoc(t)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, resp := range op.Responses.Map() {
				for _, name := range rateLimitHeaders {
					h := resp.Value.Headers[name]
					if h == nil || h.Value == nil || h.Value.Schema == nil {
						t.Errorf("%s %s %s: got no header %s; want it declared", method, path, status, name)
						continue
					}
					if !h.Value.Required {
						t.Errorf("%s %s %s %s: got optional; want required (the limiter sets it on every answer)", method, path, status, name)
					}
				}
				c := resp.Value.Content.Get("application/json")
				bodiless := status == "304" || status == "204"
				if bodiless && c != nil {
					t.Errorf("%s %s %s: got a body; want none", method, path, status)
				}
				if !bodiless && (c == nil || c.Schema == nil) {
					t.Errorf("%s %s %s: got no application/json body; want one", method, path, status)
				}
			}
		}
	}
}

func TestOpenAPIResponses(t *testing.T) {
	doc := loadDoc(t)
	errorsOf := func(more ...string) []string { return append([]string{"400", "401", "429", "500", "503"}, more...) }
	tests := []struct {
		method, path string
		statuses     []string
		required     map[string][]string // status -> headers that must be required
	}{
		{http.MethodGet, "/pets", errorsOf("200", "304"), map[string][]string{
			"200": {"ETag", "Cache-Control"}, "304": {"ETag", "Cache-Control"}, "401": {"WWW-Authenticate"}, "429": {"Retry-After"},
		}},
		{http.MethodPost, "/pets", errorsOf("201", "409", "413", "415", "422"), map[string][]string{"401": {"WWW-Authenticate"}, "429": {"Retry-After"}}},
		{http.MethodGet, "/pets/{petId}", errorsOf("200", "304", "404"), map[string][]string{
			"200": {"Deprecation", "Sunset", "Link", "ETag", "Cache-Control"}, "304": {"Deprecation", "Sunset", "Link", "ETag", "Cache-Control"},
			"401": {"WWW-Authenticate"}, "429": {"Retry-After"},
		}},
		{http.MethodGet, "/store/orders", []string{"400", "401", "429", "500", "501", "503"}, map[string][]string{"401": {"WWW-Authenticate"}, "429": {"Retry-After"}}},
		{http.MethodPost, "/webhooks", errorsOf("201", "413", "415"), map[string][]string{"201": {"Location"}, "401": {"WWW-Authenticate"}, "429": {"Retry-After"}}},
		{http.MethodDelete, "/webhooks/{webhookId}", []string{"204", "401", "404", "429", "500", "503"}, map[string][]string{"401": {"WWW-Authenticate"}}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			op := doc.Paths.Find(tt.path).GetOperation(tt.method)
			var got []string
			for status := range op.Responses.Map() {
				got = append(got, status)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.statuses))
			if !slices.Equal(got, want) {
				t.Errorf("statuses: got %v; want %v", got, want)
			}
			for status, names := range tt.required {
				resp := op.Responses.Value(status)
				if resp == nil {
					continue
				}
				for _, name := range names {
					if h := resp.Value.Headers[name]; h == nil || !h.Value.Required {
						t.Errorf("%s header %s: got absent or optional; want required", status, name)
					}
				}
			}
		})
	}
}
