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

// TestBanner: the first development start prints a key of the pro plan, its curl line and the
// pages at an address a browser opens; PETSTORE_DEV_KEY_PLAN picks another plan; a later start
// prints a keys create line that a make run user can paste, with the server's PETSTORE_DB.
func TestBanner(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "banner.db")
	out := serveBanner(t, "PETSTORE_DB="+dsn)
	for _, want := range []string{"development API key (pro plan, shown once; PETSTORE_DEV_KEY_PLAN picks another):\npetstore_test_",
		"/v1/pets\npetstore listening on http://127.0.0.1:", "\nREST reference:     http://127.0.0.1:", "/v1/docs\nGraphQL playground: http://127.0.0.1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("first start: no %q in\n%s", want, out)
		}
	}
	if list, err := runCmd(t, dsn, "keys", "list"); err != nil || !strings.Contains(list, " pro ") {
		t.Errorf("keys list: got %q, %v; want the development key on the pro plan", list, err)
	}
	again := serveBanner(t, "PETSTORE_DB="+dsn)
	hint := "development: API keys exist already; make a new one with: PETSTORE_DB='" + dsn + "' go run . keys create --plan pro\n"
	if !strings.Contains(again, hint) {
		t.Errorf("second start: got\n%s\nwant %q", again, hint)
	}
	business := serveBanner(t, "PETSTORE_DB=sqlite:"+filepath.Join(t.TempDir(), "b.db"), "PETSTORE_DEV_KEY_PLAN=business")
	if !strings.Contains(business, "development API key (business plan") {
		t.Errorf("PETSTORE_DEV_KEY_PLAN=business: got\n%s", business)
	}
	for _, plan := range []string{"enterprise", "gold"} {
		err := app.Run(context.Background(), []string{"serve"}, []string{"PETSTORE_DEV_KEY_PLAN=" + plan}, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "PETSTORE_DEV_KEY_PLAN") {
			t.Errorf("PETSTORE_DEV_KEY_PLAN=%s: got %v; want it refused", plan, err)
		}
	}
}
