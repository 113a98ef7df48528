// Package e2e holds the service's end-to-end tests: each drives the real wiring (app.New behind
// httptest, or the program itself as a child process) through its public surface, on both stores
// where the behaviour concerns storage. Files are named by what they show: rest_, graphql_,
// idempotency_, ratelimit_, paging_, subscriptions_, webpages_ (the playground and the REST reference), tracing_, ops_ (start-up,
// shutdown, outages, Galera, the cluster and the image) and docs_ (the README's snippets, run
// as written). Files that hold no test but what tests share end in _helpers_test.go:
// harness_helpers_test.go (the API in process), process_helpers_test.go (the program as a child
// process), subscriptions_server_helpers_test.go (a live server), the WebSocket and SSE clients
// of subscriptions_client*_helpers_test.go and subscriptions_raw_helpers_test.go, and others.
//
// Most tests call t.Parallel: each has its own database, Redis key prefix and servers, and most
// of their time goes in waiting (on timers, servers, a browser). Those that touch what the whole
// process shares (slog's default logger, which app.Run in process sets; the environment;
// OpenTelemetry's and the MySQL driver's globals) or measure it (memory, goroutines), and those
// whose bounds the load of other tests could upset (a rate limit's minute, a drain's timing), do
// not: they run one at a time, before the parallel ones.
package e2e

import (
	"fmt"
	"log/slog"
	"os"
	"testing"

	"petstore/app"
	"petstore/testkit/dbtest"
)

// TestMain lets the test binary act as the petstore binary, so that a test can run the real
// program as a child process and send it real signals; after the tests, it fails the run when
// they left a database or Redis key behind (dbtest.LeftBehind).
func TestMain(m *testing.M) {
	if os.Getenv("PETSTORE_TEST_AS_BINARY") == "1" {
		os.Exit(app.Main(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
	}
	// Tests and benchmarks log only failures: a line per request would drown their output.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	code := m.Run()
	// Each test removes the databases and Redis keys it made; anything left fails the run.
	if err := dbtest.LeftBehind(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	os.Exit(code)
}
