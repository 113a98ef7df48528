// Package apicompat checks that, within /v1, the REST API's OpenAPI document (rest/openapi.json)
// breaks no client of the v1 document as published (rest/openapi/published/v1.json): oasdiff's
// breaking-change rules find nothing between the two, and a program written against the client
// that oapi-codegen generates from the published document compiles against the client generated
// from the current one. It is a module of its own, so that oasdiff and what it needs stay out of
// the service's module; `make test` runs it.
package apicompat

// The published v1 document and the current one, from this module's folder.
const (
	publishedDocument = "../../rest/openapi/published/v1.json"
	currentDocument   = "../../rest/openapi.json"
)
