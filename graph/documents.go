package graph

import (
	"context"
	"maps"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"petstore/apierr"
	"petstore/documents"
	"petstore/graph/gqlhttp"
)

// DocumentsMode is which documents the handler runs: PETSTORE_DOCUMENTS, whose values
// (config.DocumentsModes) are these.
type DocumentsMode string

// The modes of Options.DocumentsMode.
const (
	// DocumentsAny runs any document: sent as text, by an automatic persisted query's hash, or
	// by the id of a listed document.
	DocumentsAny DocumentsMode = "any"
	// DocumentsListed runs listed documents only, sent by id (or hash) or as text whose
	// SHA-256 is that of a listed document's body.
	DocumentsListed DocumentsMode = "listed"
	// DocumentsIDs runs listed documents sent by id (or hash) only: never a text.
	DocumentsIDs DocumentsMode = "ids"
)

// DocumentList is the list of trusted documents the handler looks documents up in
// (documents.Registry).
type DocumentList interface {
	// Lookup returns the document that the documentId id names, or nil.
	Lookup(id string) *documents.Listed
	// ByHash returns the document whose id or body's SHA-256 is hash, or nil.
	ByHash(hash string) *documents.Listed
	// Len returns how many documents are listed.
	Len() int
}

// trustedStat is the name of the stats extension that holds the listed document an operation
// runs, its *documents.Listed.
const trustedStat = "petstore.trustedDocument"

// listedOf returns the listed document the operation of opCtx runs, or nil.
func listedOf(opCtx *graphql.OperationContext) *documents.Listed {
	l, _ := opCtx.Stats.GetExtension(trustedStat).(*documents.Listed)
	return l
}

// trustedDocuments names the document of each request and enforces mode, before automatic
// persisted queries are looked up and before anything is parsed, on every transport. A request
// names a listed document by extensions.documentId (where the HTTP transports put a POST's
// documentId member and a GET's documentId parameter), by an automatic persisted query's hash
// alone, or by a text whose SHA-256 is that of a listed body; that document's text replaces
// the query, and its parsed and validated form and its cost are those worked out once
// (trustedCache, operationCost). Refusals carry Apollo Router's codes and statuses.
type trustedDocuments struct {
	list DocumentList
	mode DocumentsMode
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = trustedDocuments{}

// ExtensionName names the extension for gqlgen.
func (trustedDocuments) ExtensionName() string { return "TrustedDocuments" }

// Validate accepts every schema.
func (trustedDocuments) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters resolves the document params name, or refuses it.
func (t trustedDocuments) MutateOperationParameters(ctx context.Context, params *graphql.RawParams) *gqlerror.Error {
	raw, hasID := params.Extensions["documentId"]
	id, isString := raw.(string)
	_, hasPQ := params.Extensions["persistedQuery"]
	hash, hasHash := persistedHash(params.Extensions)
	var l *documents.Listed
	switch {
	case hasID && !isString:
		return documentRefusal(apierr.Invalid("documentId must be a string"))
	case hasID && params.Query != "":
		return documentRefusal(apierr.Invalid("send a document by its documentId or as query text, not both"))
	case hasID:
		if l = t.list.Lookup(id); l == nil {
			return documentRefusal(apierr.New(apierr.PersistedQueryNotInList, "no listed document has the id %q", id))
		}
	case params.Query == "" && (hasHash || hasPQ && t.mode != DocumentsAny):
		if hasHash {
			l = t.list.ByHash(hash)
		}
		if l == nil && t.mode == DocumentsAny {
			return nil // an automatic persisted query's
		}
		if l == nil {
			return documentRefusal(apierr.New(apierr.PersistedQueryNotInList, "no listed document has the hash %q", hash))
		}
	case params.Query != "":
		if t.mode == DocumentsIDs {
			return documentRefusal(apierr.New(apierr.PersistedQueryIDRequired, "this server runs listed documents sent by id only: send {\"documentId\": ...}, not the query text"))
		}
		if t.list.Len() > 0 {
			if l = t.list.ByHash(documents.Hash(params.Query)); l != nil && l.Body != params.Query {
				l = nil
			}
		}
		if l == nil && t.mode == DocumentsListed {
			return documentRefusal(apierr.New(apierr.QueryNotInSafelist, "this server runs listed documents only, and this query is not one of them"))
		}
		if l == nil {
			return nil
		}
	default:
		return nil // no document: the executor says so
	}
	if hasPQ && (hasID || params.Query == "" || t.mode != DocumentsAny) {
		// the id or hash named the document, or persisted queries store and find nothing
		params.Extensions = maps.Clone(params.Extensions)
		delete(params.Extensions, "persistedQuery")
	}
	params.Query = l.Body
	if graphql.HasOperationContext(ctx) {
		graphql.GetOperationContext(ctx).Stats.SetExtension(trustedStat, l)
	}
	return nil
}

// persistedHash returns the sha256Hash of the persisted-query extension in ext, if it has one
// that is a string. Its key is matched regardless of case, as gqlgen's persisted-query
// extension matches it: a hash under "SHA256HASH" is one it would look up.
func persistedHash(ext map[string]any) (string, bool) {
	pq, _ := ext["persistedQuery"].(map[string]any)
	if h, ok := pq["sha256Hash"].(string); ok {
		return h, true
	}
	for k, v := range pq {
		if h, ok := v.(string); ok && strings.EqualFold(k, "sha256Hash") {
			return h, true
		}
	}
	return "", false
}

// documentRefusal is the GraphQL error of err, which the transports answer with err's status.
func documentRefusal(err *apierr.Error) *gqlerror.Error {
	e := &gqlerror.Error{Message: err.Message, Err: err}
	gqlhttp.SetCode(e, err.Code)
	return e
}

// emptyList is the DocumentList of a handler without one.
type emptyList struct{}

func (emptyList) Lookup(string) *documents.Listed { return nil }
func (emptyList) ByHash(string) *documents.Listed { return nil }
func (emptyList) Len() int                        { return 0 }

// trustedCache is the handler's query cache, which gives the operation of a listed document
// the document parsed and validated when it was read: the executor neither parses nor
// validates it again, nor keeps it among the documents sent as text.
type trustedCache struct {
	graphql.Cache[*ast.QueryDocument]
}

// Get returns the parsed and validated document of query.
func (c trustedCache) Get(ctx context.Context, query string) (*ast.QueryDocument, bool) {
	if graphql.HasOperationContext(ctx) {
		if l := listedOf(graphql.GetOperationContext(ctx)); l != nil && l.Body == query {
			return l.Doc, true
		}
	}
	return c.Cache.Get(ctx, query)
}
