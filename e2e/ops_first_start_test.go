package e2e

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"petstore/app"
)

// serveBanner runs serve with env until it has printed its banner, and returns what it printed.
func serveBanner(t *testing.T, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stdout := &cancelOn{mark: "GraphQL playground: ", cancel: cancel}
	env = append(env, "PETSTORE_ADDR=127.0.0.1:0")
	if err := app.Run(ctx, []string{"serve"}, env, stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	stdout.mu.Lock()
	defer stdout.mu.Unlock()
	return stdout.buf.String()
}

// TestBusyPort: serve on a port that is taken fails at once, naming the variable and the
// address, before it creates, migrates or writes anything.
func TestBusyPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	path := filepath.Join(t.TempDir(), "busy.db")
	start := time.Now()
	err = app.Run(context.Background(), []string{"serve"}, []string{"PETSTORE_ADDR=" + taken.Addr().String(), "PETSTORE_DB=sqlite:" + path},
		&bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "PETSTORE_ADDR") || !strings.Contains(err.Error(), taken.Addr().String()) {
		t.Errorf("got %v; want an error naming PETSTORE_ADDR and %s", err, taken.Addr())
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %v; want the failure within a second", took)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the database exists (stat: %v); want nothing created", err)
	}
}

// TestBanner: serve prints the pages beside its address, at an address a browser opens.
func TestBanner(t *testing.T) {
	out := serveBanner(t, "PETSTORE_DB=sqlite:"+filepath.Join(t.TempDir(), "banner.db"))
	for _, want := range []string{"/v1/pets\npetstore listening on http://127.0.0.1:", "\nREST reference:     http://127.0.0.1:",
		"/v1/docs\nGraphQL playground: http://127.0.0.1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}
