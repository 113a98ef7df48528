package tracing

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"

	"github.com/XSAM/otelsql"
	"github.com/go-sql-driver/mysql"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"petstore/store"
)

// errorType returns the type of a statement's error: MySQL's error number, else the Go type.
func errorType(err error) string {
	if my, ok := errors.AsType[*mysql.MySQLError](err); ok {
		return strconv.Itoa(int(my.Number))
	}
	return fmt.Sprintf("%T", err)
}

// dbSystems are the db.system.name of the drivers the store opens.
var dbSystems = map[string]attribute.KeyValue{"mysql": semconv.DBSystemNameMySQL, "sqlite": semconv.DBSystemNameSQLite}

// StoreOptions returns the options of store.Open that trace the statements of the database
// and its replicas, or none when t is nil.
func (t *Tracer) StoreOptions() []store.Option {
	if t == nil {
		return nil
	}
	return []store.Option{store.WithOpener(t.OpenSQL)}
}

// OpenSQL opens a database/sql handle as sql.Open does, whose statements are traced: a span
// for each one run within a traced request. A span holds the statement's text, with its
// placeholders, never its arguments.
func (t *Tracer) OpenSQL(driverName, dsn string) (*sql.DB, error) {
	opts := []otelsql.Option{
		otelsql.WithTracerProvider(t.tp),
		otelsql.WithMeterProvider(noop.NewMeterProvider()), // pool metrics are observe's
		otelsql.WithSpanOptions(otelsql.SpanOptions{
			OmitConnResetSession: true,
			OmitRows:             true,
			// Statements outside a request (migrations, the replicas' watch) make no span.
			SpanFilter: func(ctx context.Context, _ otelsql.Method, _ string, _ []driver.NamedValue) bool {
				return trace.SpanContextFromContext(ctx).IsValid()
			},
			// An error's message may quote the statement's arguments (MySQL's duplicate entry
			// does): only its type is kept.
			RecordError: func(error) bool { return false },
		}),
		otelsql.WithSpanErrorAttributesGetter(func(err error) []attribute.KeyValue {
			return []attribute.KeyValue{semconv.ErrorTypeKey.String(errorType(err))}
		}),
	}
	if sys, ok := dbSystems[driverName]; ok {
		opts = append(opts, otelsql.WithAttributes(sys))
	}
	return otelsql.Open(driverName, dsn, opts...)
}
