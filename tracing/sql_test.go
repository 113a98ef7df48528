package tracing_test

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"petstore/store"
	"petstore/testkit/dbtest"
	"petstore/tracing"
)

// TestSQLErrorMessageNotKept checks that a failed statement's span keeps the error's type but
// not its message, which quotes the statement's arguments (MySQL's duplicate entry).
func TestSQLErrorMessageNotKept(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	db, err := store.Open(context.Background(), dbtest.DSN(t, "mysql"), store.DefaultPool, tracing.New(tp).StoreOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sqlDB := db.SQL()
	if _, err := sqlDB.Exec("CREATE TABLE t (v VARCHAR(64) UNIQUE)"); err != nil {
		t.Fatal(err)
	}
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	const marker = "Zq7secret"
	for range 2 {
		_, err = sqlDB.ExecContext(ctx, "INSERT INTO t (v) VALUES (?)", marker)
	}
	span.End()
	if err == nil || !strings.Contains(err.Error(), marker) {
		t.Fatalf("second insert: got %v; want a duplicate entry quoting the value", err)
	}
	var typed bool
	for _, s := range spans.GetSpans() {
		for _, a := range s.Attributes {
			typed = typed || (a.Key == "error.type" && a.Value.AsString() == "1062")
			if strings.Contains(a.Value.Emit(), marker) {
				t.Errorf("span %q carries the value: %s=%s", s.Name, a.Key, a.Value.Emit())
			}
		}
		for _, e := range s.Events {
			for _, a := range e.Attributes {
				if strings.Contains(a.Value.Emit(), marker) {
					t.Errorf("span %q's event %q carries the value: %s", s.Name, e.Name, a.Value.Emit())
				}
			}
		}
		if strings.Contains(s.Status.Description, marker) {
			t.Errorf("span %q's status carries the value: %s", s.Name, s.Status.Description)
		}
	}
	if !typed {
		t.Errorf("no span with error.type=1062 among %d", len(spans.GetSpans()))
	}
}
