package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"petstore/app"
	"petstore/auth"
	"petstore/observe"
	"petstore/store"
	"petstore/testkit/dbtest"
	"petstore/tracing"
)

// Scopes of the instrumentation libraries, by which the tests tell spans apart.
const (
	sqlScope   = "github.com/XSAM/otelsql"
	redisScope = "github.com/redis/go-redis/extra/redisotel"
)

// incoming is the traceparent header of the tests' requests: the caller's trace and span.
const (
	incomingTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	incomingSpan  = "00f067aa0ba902b7"
	incoming      = "00-" + incomingTrace + "-" + incomingSpan + "-01"
)

// tracedAPI is the real handler, traced to an in-memory exporter, over a fresh traced
// database and, optionally, Redis; its request lines are kept.
type tracedAPI struct {
	h     http.Handler
	key   string
	spans *tracetest.InMemoryExporter
	logs  *lockedBuffer
}

func newTracedAPI(t *testing.T, dialect string, withRedis bool) *tracedAPI {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	tr := tracing.New(tp)
	db, err := store.Open(context.Background(), dbtest.DSN(t, dialect), store.DefaultPool, tr.StoreOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg := app.DefaultConfig()
	var rdb redis.UniversalClient
	if withRedis {
		client, prefix := dbtest.Redis(t)
		cfg.RedisKeyPrefix = prefix
		if err := tr.InstrumentRedis(client); err != nil {
			t.Fatal(err)
		}
		rdb = client
	}
	api := &tracedAPI{spans: spans, logs: captureLog(t)}
	if api.h, err = newTracedHandler(cfg, db, rdb, tr); err != nil {
		t.Fatal(err)
	}
	api.key = (&testAPI{db: db, cfg: cfg}).createKey(t, auth.KeySpec{Plan: "business"})
	return api
}

// do sends a request with the API key and the incoming traceparent.
func (api *tracedAPI) do(t *testing.T, method, path, body string) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+api.key)
	r.Header.Set("Traceparent", incoming)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	api.h.ServeHTTP(rec, r)
	if rec.Code >= 300 {
		t.Fatalf("%s %s: got %d %s; want 2xx", method, path, rec.Code, rec.Body)
	}
}

// TestTracingSpanTree checks, on each store with Redis, the spans of one REST and one GraphQL
// call: the HTTP server span continues the incoming trace, under it the rate-limit command
// and, for GraphQL, the operation, its resolver and the resolver's SQL; and the request's log
// line carries the trace ID. /healthz has no span.
func TestTracingSpanTree(t *testing.T) {
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			api := newTracedAPI(t, dialect, true)
			api.do(t, http.MethodGet, "/healthz", "")
			if spans := api.spans.GetSpans(); len(spans) != 0 {
				t.Errorf("GET /healthz: got %d spans (first %q); want none", len(spans), spans[0].Name)
			}

			api.do(t, http.MethodGet, "/v1/pets", "")
			tree := newSpanTree(t, api.spans.GetSpans())
			t.Logf("spans of GET /v1/pets:%s", tree)
			server := tree.one(t, "GET /v1/pets", trace.SpanKindServer)
			if got := server.Parent.SpanID().String(); got != incomingSpan || !server.Parent.IsRemote() {
				t.Errorf("server span's parent: got %s (remote %v); want the incoming %s", got, server.Parent.IsRemote(), incomingSpan)
			}
			tree.childOf(t, server, redisScope)
			tree.childOf(t, server, sqlScope, "FROM `pets`", "FROM pets")
			api.logs.requestLine(t, "/v1/pets").wantTraceID(t, incomingTrace)
			api.spans.Reset()

			api.do(t, http.MethodPost, "/v1/graphql", `{"query":"query Pets { pets { id name } }"}`)
			tree = newSpanTree(t, api.spans.GetSpans())
			t.Logf("spans of POST /v1/graphql:%s", tree)
			server = tree.one(t, "POST /v1/graphql", trace.SpanKindServer)
			tree.childOf(t, server, redisScope)
			op := tree.one(t, "query Pets", trace.SpanKindInternal)
			if op.Parent.SpanID() != server.SpanContext.SpanID() {
				t.Errorf("operation span's parent: got %s; want the server span", op.Parent.SpanID())
			}
			resolver := tree.one(t, "Query.pets", trace.SpanKindInternal)
			if resolver.Parent.SpanID() != op.SpanContext.SpanID() {
				t.Errorf("resolver span's parent: got %s; want the operation span", resolver.Parent.SpanID())
			}
			tree.childOf(t, resolver, sqlScope, "FROM `pets`", "FROM pets")
			api.logs.requestLine(t, "/v1/graphql").wantTraceID(t, incomingTrace)
		})
	}
}

// spanTree is the spans of the incoming trace.
type spanTree []tracetest.SpanStub

func newSpanTree(t *testing.T, spans tracetest.SpanStubs) spanTree {
	t.Helper()
	var tree spanTree
	for _, s := range spans {
		if s.SpanContext.TraceID().String() == incomingTrace {
			tree = append(tree, s)
		}
	}
	if len(tree) == 0 {
		t.Fatalf("no span of the incoming trace among %d", len(spans))
	}
	return tree
}

// one returns the only span named name, of kind.
func (tree spanTree) one(t *testing.T, name string, kind trace.SpanKind) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range tree {
		if s.Name == name && s.SpanKind == kind {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("spans named %q of kind %s: got %d; want 1 (spans: %s)", name, kind, len(found), tree)
	}
	return found[0]
}

// childOf checks that parent has a child span of scope, one whose attributes hold one of
// texts unless texts is empty.
func (tree spanTree) childOf(t *testing.T, parent tracetest.SpanStub, scope string, texts ...string) {
	t.Helper()
	for _, s := range tree {
		if s.InstrumentationScope.Name == scope && s.Parent.SpanID() == parent.SpanContext.SpanID() &&
			(len(texts) == 0 || slices.ContainsFunc(s.Attributes, func(a attribute.KeyValue) bool {
				return slices.ContainsFunc(texts, func(text string) bool { return strings.Contains(a.Value.Emit(), text) })
			})) {
			return
		}
	}
	t.Errorf("no span of %s holding one of %q under %q (spans: %s)", scope, texts, parent.Name, tree)
}

// String lists the spans, each with its parent, for failure messages.
func (tree spanTree) String() string {
	var b strings.Builder
	for _, s := range tree {
		b.WriteString("\n  " + s.Name + " [" + s.InstrumentationScope.Name + "] " + s.SpanContext.SpanID().String() + " <- " + s.Parent.SpanID().String())
		for _, a := range s.Attributes {
			b.WriteString("\n      " + string(a.Key) + "=" + a.Value.Emit())
		}
	}
	return b.String()
}

// captureLog makes the default logger write JSON lines, as the service does, to the buffer it
// returns, for t.
func captureLog(t *testing.T) *lockedBuffer {
	t.Helper()
	buf := new(lockedBuffer)
	prev := slog.Default()
	slog.SetDefault(slog.New(observe.NewJSONLogHandler(buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return buf
}

// logLine is one JSON log line.
type logLine map[string]any

// requestLine returns the last request line of path.
func (l *lockedBuffer) requestLine(t *testing.T, path string) logLine {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var last logLine
	for _, raw := range bytes.Split(l.b.Bytes(), []byte("\n")) {
		var line logLine
		if json.Unmarshal(raw, &line) == nil && line["msg"] == "request" && line["path"] == path {
			last = line
		}
	}
	if last == nil {
		t.Fatalf("no request line of %s in:\n%s", path, l.b.String())
	}
	return last
}

func (line logLine) wantTraceID(t *testing.T, want string) {
	t.Helper()
	if got, _ := line["trace_id"].(string); got != want {
		t.Errorf("trace_id of the request line: got %q; want %q (line %v)", got, want, line)
	}
}

// TestTracingKeepsSecretsOut checks SECURITY.md's promise: no span carries the API key, the
// Authorization header, a cookie, a spoofed X-Forwarded-For, the query string, a request body or a GraphQL document or
// its variables, whatever the request. And GraphQL spans are of resolvers only.
func TestTracingKeepsSecretsOut(t *testing.T) {
	api := newTracedAPI(t, "sqlite", true)
	const marker, spoofed = "Zq7marker", "198.51.100.66"
	api.do(t, http.MethodPost, "/v1/pets", `{"name":"`+marker+`body","categoryId":1}`)
	api.do(t, http.MethodPost, "/v1/graphql", `{"query":"mutation { createPet(input: {name: \"`+marker+`literal\", categoryId: 1}) { id } }"}`)
	api.do(t, http.MethodPost, "/v1/graphql", `{"query":"mutation($in: NewPet!) { createPet(input: $in) { id } }","variables":{"in":{"name":"`+marker+`variable","categoryId":1}}}`)
	api.do(t, http.MethodGet, "/v1/graphql?query=%7Bpets(status:AVAILABLE)%7Bname%7D%7D&"+marker+"=query", "")
	api.do(t, http.MethodGet, "/v1/pets?limit=5&"+marker+"=query", "")
	r := httptest.NewRequest(http.MethodGet, "/v1/pets/1", nil) // a 404, and a cookie
	r.Header.Set("Authorization", "Bearer "+api.key)
	r.Header.Set("Cookie", "session="+marker+"cookie")
	r.Header.Set("X-Forwarded-For", spoofed) // from a peer that is no trusted proxy
	api.h.ServeHTTP(httptest.NewRecorder(), r)

	secretPart := api.key[strings.LastIndex(api.key, "_")+1:]
	forbidden := []string{api.key, secretPart, "Bearer", marker, "AVAILABLE", spoofed}
	spans := api.spans.GetSpans()
	if len(spans) < 12 {
		t.Fatalf("got %d spans; want the spans of 6 requests", len(spans))
	}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "Pet.") { // createPet's { id } runs gqlgen's field path
			t.Errorf("span %q: want spans of resolvers only, not of Pet's fields", s.Name)
		}
		texts := []string{s.Name, s.Status.Description}
		for _, a := range s.Attributes {
			texts = append(texts, string(a.Key)+"="+a.Value.Emit())
		}
		for _, e := range s.Events {
			for _, a := range e.Attributes {
				texts = append(texts, string(a.Key)+"="+a.Value.Emit())
			}
		}
		for _, text := range texts {
			for _, f := range forbidden {
				if strings.Contains(text, f) {
					t.Errorf("span %q carries %q: %s", s.Name, f, text)
				}
			}
		}
	}
}
