// Package guard bounds what one GraphQL request may cost before any resolver runs: gqlgen
// extensions and validation rules that refuse, in linear time, documents and operations over
// the service's bounds (selections, definitions, validated bytes, depth, complexity, root
// fields, introspection, lone surrogates), and the byte-bounded caches of parsed documents and
// persisted queries. A refusal is an INVALID_REQUEST *apierr.Error wrapped in the GraphQL
// error, so that the transport answers it with 400 whatever the media type.
package guard
