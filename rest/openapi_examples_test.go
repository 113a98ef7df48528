package rest_test

import (
	"bytes"
	"slices"
	"testing"
)

func TestOpenAPIDeprecationHeaderExamples(t *testing.T) {
	doc := loadDoc(t)
	headers := doc.Paths.Find("/pets/{petId}").Get.Responses.Value("200").Value.Headers
	tests := []struct{ name, want string }{
		{"Deprecation", "@1767225600"},
		{"Sunset", "Thu, 05 Dec 2030 00:00:00 GMT"},
		{"Link", `</v1/pets>; rel="successor-version"`},
	}
	for _, tt := range tests {
		if got := headers[tt.name].Value.Example; got != tt.want {
			t.Errorf("%s example: got %v; want %v", tt.name, got, tt.want)
		}
	}
}

func TestOpenAPIErrorCodes(t *testing.T) {
	doc := loadDoc(t)
	want := []string{
		"invalid_request", "unauthorized", "not_found", "method_not_allowed", "idempotency_key_in_use",
		"payload_too_large", "unsupported_media_type", "idempotency_key_reused", "rate_limited",
		"key_suspended", "internal_error", "not_implemented", "unavailable",
	}
	var got []string
	for _, v := range doc.Components.Schemas["Error"].Value.Properties["code"].Value.Enum {
		s, _ := v.(string)
		got = append(got, s)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Error.code enum: got %v; want %v", got, want)
	}
}

// TestOpenAPISchemas checks the schemas against values the contract allows and refuses.
func TestOpenAPISchemas(t *testing.T) {
	doc := loadDoc(t)
	tests := []struct {
		schema string
		value  any
		valid  bool
	}{
		{"NewPet", map[string]any{"name": "Rex", "categoryId": 3}, true},
		{"NewPet", map[string]any{"name": "Rex", "categoryId": 3, "status": "sold"}, true},
		{"NewPet", map[string]any{"name": "Rex", "categoryId": 3, "status": nil}, true},
		{"NewPet", map[string]any{"name": "Rex", "categoryId": 3, "status": "lost"}, false},
		{"NewPet", map[string]any{"name": "", "categoryId": 3}, false},
		{"NewPet", map[string]any{"name": "   ", "categoryId": 3}, false},
		{"NewPet", map[string]any{"name": string(bytes.Repeat([]byte("é"), 256)), "categoryId": 3}, false},
		{"NewPet", map[string]any{"name": "Rex", "categoryId": 0}, false},
		{"NewPet", map[string]any{"name": "Rex", "categoryId": 1.5}, false},
		{"NewPet", map[string]any{"name": "Rex", "categoryId": "3"}, false},
		{"NewPet", map[string]any{"categoryId": 3}, false},
		{"Pet", map[string]any{"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}, true},
		{"Pet", map[string]any{"id": 7, "name": "Rex", "categoryId": 3}, true},
		{"Pet", map[string]any{"id": 7, "name": "Rex", "categoryId": 3, "status": nil}, false},
		{"Pet", map[string]any{"name": "Rex", "categoryId": 3}, false},
		{"Pets", []any{}, true},
		{"Pets", map[string]any{}, false},
		{"Error", map[string]any{"code": "invalid_request", "message": "limit must be an integer from 1 to 100; got \"0\"", "status": 400}, true},
		{"Error", map[string]any{"code": "teapot", "message": "no", "status": 418}, false},
		{"Error", map[string]any{"code": "not_found", "message": "no"}, false},
	}
	for _, tt := range tests {
		err := doc.Components.Schemas[tt.schema].Value.VisitJSON(tt.value)
		if got := err == nil; got != tt.valid {
			t.Errorf("%s %v: got valid %v (%v); want %v", tt.schema, tt.value, got, err, tt.valid)
		}
	}
}
