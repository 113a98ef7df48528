// Package client is a Go client of the pet store's REST API.
//
// Most of it is generated from the OpenAPI document that the service serves at /v1/openapi.json
// (rest/openapi.json) by oapi-codegen: the types (Pet, NewPet, PetStatus, Error, ...) and
// ClientWithResponses, one method per operation. `make generate` regenerates openapi.gen.go;
// never edit it by hand.
//
// The hand-written part, PetStore, does what the interface asks of clients:
//
//   - it retries 429 (rate_limited), 503 (unavailable) and 409 (idempotency_key_in_use: the
//     same create still running) after their Retry-After plus exponential backoff with full
//     jitter, and a broken connection after the backoff alone; attempts are bounded
//     (RetryPolicy), and neither a Retry-After longer than RetryPolicy.MaxRetryAfter (a
//     suspended key's) nor one that would outlast the context's deadline is waited for: the
//     answer is returned at once;
//   - it sends an Idempotency-Key with every POST that has none: one random key per logical
//     create, the same across its retries, so that a retried create never stores twice;
//   - Pets follows the Link rel="next" header from page to page as an iterator;
//   - RateLimit reports the rate-limit headers of the last answer.
//
// Every operation, including those of the generated client in PetStore.API, goes through the
// same retries, keys and rate-limit tracking.
package client

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../rest/openapi.json
