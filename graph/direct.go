package graph

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"petstore/models"
)

// The query front ends send most is one page of pets, { pets(limit: 20) { ... } } or
// { petsConnection(first: 100) { edges { cursor node { ... } } pageInfo { ... } } }, and once
// its elements are written on the flat paths, what is left of its cost beside REST's is
// gqlgen's execution of the few objects around them: the root field's and the connection's
// field contexts, closures and boxed values, and the edges built for them. So a query whose
// one root field is such a page with a flat selection is answered directly: its arguments
// read by gqlgen's generated code, its page read by the resolver, its answer written in one
// buffer by the flat plans. Everything else, and such a query whose resolver fails (its
// error is gqlgen's to present: the failed read is handed over, not repeated), takes gqlgen's
// executor. The answers are byte for byte gqlgen's (TestFlatListsMatchGeneric, FuzzFlatLists);
// parsing, validation, the limits, persisted queries and the rate-limit charge run before
// either, as they do for every operation.
//
// The direct path runs no operation, field or response interceptor: NewHandler takes it only
// without Options.Tracer; the response interceptors it installs act on errors alone, and a
// direct answer has none (TestDirectSkipsNoInterceptor).

// directExec is what the direct path needs of the handler: its resolver and schema, and the
// direct answers of the operations that use no variables, made once (pages).
type directExec struct {
	r  *Resolver
	es *executableSchema

	mu    sync.RWMutex
	pages map[string]*directPage // by query and operation name; nil for gqlgen's executor
}

// Bounds of directExec.pages: it is cleared when it reaches maxDirectPages entries, each of a
// query of at most maxDirectQuery bytes.
const (
	maxDirectPages = 1024
	maxDirectQuery = 2048
)

// page returns the direct answer of the operation of opCtx (newDirectPage), or nil. That of
// an operation without variables, a function of its text alone, is made once.
func (d *directExec) page(ctx context.Context, opCtx *graphql.OperationContext) *directPage {
	if len(opCtx.Operation.VariableDefinitions) > 0 || len(opCtx.RawQuery)+len(opCtx.OperationName) > maxDirectQuery {
		return newDirectPage(ctx, d.r, d.es, opCtx)
	}
	key := opCtx.RawQuery + "\x00" + opCtx.OperationName
	d.mu.RLock()
	p, ok := d.pages[key]
	d.mu.RUnlock()
	if ok {
		return p
	}
	p = newDirectPage(ctx, d.r, d.es, opCtx)
	d.mu.Lock()
	if len(d.pages) >= maxDirectPages {
		clear(d.pages)
	}
	d.pages[key] = p
	d.mu.Unlock()
	return p
}

// dispatch runs the operation of opCtx as gqlgen's executor does, directly when it can
// (newDirectPage): the page is read, lazily, by the first call of the answer's handler.
func (e *meteredExecutor) dispatch(ctx context.Context, opCtx *graphql.OperationContext) (graphql.ResponseHandler, context.Context) {
	var p *directPage
	if e.direct != nil {
		p = e.direct.page(ctx, opCtx)
	}
	if p == nil {
		return e.GraphExecutor.DispatchOperation(ctx, opCtx)
	}
	done := false
	return func(ctx context.Context) *graphql.Response {
		if done || ctx.Err() != nil { // gqlgen's handler answers once, and nothing to a client gone
			return nil
		}
		done = true
		resp, err := p.answer(ctx)
		if err == nil {
			return resp
		}
		next, ctx := e.GraphExecutor.DispatchOperation(context.WithValue(ctx, pageReadKey{}, err), opCtx)
		return next(ctx)
	}, graphql.WithOperationContext(ctx, opCtx)
}

// directPage is the direct answer of one operation: its root field and what to write of it.
type directPage struct {
	r      *Resolver
	prefix []byte // `{"alias":`
	conn   bool   // petsConnection, else pets
	size   *int   // limit or first
	after  *string
	status *models.PetStatus
	pets   *flatPlan   // the plan of each pet of pets
	fields []connField // the fields of the connection of petsConnection
}

// newDirectPage returns the direct answer of the operation of opCtx, or nil when it takes
// gqlgen's executor: not a query of one root field, pets or petsConnection, with flat
// selections and arguments that gqlgen's generated code reads without error.
func newDirectPage(ctx context.Context, r *Resolver, es *executableSchema, opCtx *graphql.OperationContext) *directPage {
	if opCtx.Operation.Operation != ast.Query {
		return nil
	}
	root := graphql.CollectFields(opCtx, opCtx.Operation.SelectionSet, queryImplementors)
	if len(root) != 1 || root[0].IsDeferred() {
		return nil
	}
	f := root[0]
	ec := newExecutionContext(opCtx, es, nil)
	p := &directPage{r: r, prefix: append(appendGQLString([]byte{'{'}, f.Alias), ':')}
	switch f.Name {
	case "pets":
		args, err := ec.field_Query_pets_args(ctx, f.ArgumentMap(opCtx.Variables))
		if err != nil {
			return nil
		}
		p.size, p.status = args["limit"].(*int), args["status"].(*models.PetStatus)
		if p.pets = plainFlatPlan(f.Selections); p.pets == nil {
			p.pets = newFlatPlan(graphql.CollectFields(opCtx, f.Selections, petImplementors))
		}
		if p.pets == nil {
			return nil
		}
	case "petsConnection":
		args, err := ec.field_Query_petsConnection_args(ctx, f.ArgumentMap(opCtx.Variables))
		if err != nil {
			return nil
		}
		p.conn, p.size, p.after, p.status = true, args["first"].(*int), args["after"].(*string), args["status"].(*models.PetStatus)
		if p.fields = connFields(ec, f.Selections); p.fields == nil {
			return nil
		}
	default:
		return nil
	}
	return p
}

// answer reads the page and returns the answer, or the resolver's error.
func (p *directPage) answer(ctx context.Context) (*graphql.Response, error) {
	sizeName := "limit"
	if p.conn {
		sizeName = "first"
	}
	pets, more, err := p.r.list(ctx, sizeName, p.size, p.after, p.status)
	if err != nil {
		return nil, err
	}
	b := append(make([]byte, 0, p.guess(len(pets))), p.prefix...)
	if p.conn {
		b = appendConn(b, p.fields, pets, more)
	} else {
		b = append(b, '[')
		for i := range pets {
			if i > 0 {
				b = append(b, ',')
			}
			b = (&flatPet{plan: p.pets, pet: &pets[i]}).appendTo(b)
		}
		b = append(b, ']')
	}
	return &graphql.Response{Data: append(b, '}')}, nil
}

// guess returns a guess of the bytes of an answer of n pets.
func (p *directPage) guess(n int) int {
	if !p.conn {
		return len(p.prefix) + 3 + n*(p.pets.size+1)
	}
	size := len(p.prefix) + 256
	for _, f := range p.fields {
		if f.kind == connEdges {
			size += n * (f.edges.size + 1)
		}
	}
	return size
}

// pageReadKey is the context key of a page read that failed on the direct path, which gqlgen's
// path, answering instead, is handed: Resolver.list returns its error rather than read again.
type pageReadKey struct{}

// readFailed returns the error of a failed page read that ctx hands over, or nil.
func readFailed(ctx context.Context) error {
	err, _ := ctx.Value(pageReadKey{}).(error)
	return err
}
