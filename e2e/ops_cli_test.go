package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"petstore/app"
	"petstore/internal/version"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// statusWith answers GET /v1/pets with key through a freshly wired handler, whose key cache is
// empty.
func statusWith(t *testing.T, dsn, key string) int {
	t.Helper()
	db, err := store.Open(context.Background(), dsn, store.DefaultPool)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h, err := newHandler(app.DefaultConfig(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/v1/pets", nil)
	r.Header.Set("Authorization", "Bearer "+key)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec.Code
}

func TestKeysCommands(t *testing.T) {
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			dsn := dbtest.DSN(t, dialect)
			out, err := runCmd(t, dsn, "keys", "create", "--plan", "pro", "--name", "ci")
			if err != nil {
				t.Fatal(err)
			}
			key := lastLine(out)
			if !strings.HasPrefix(key, "petstore_test_") {
				t.Fatalf("last line: got %q; want the key", key)
			}
			if got := statusWith(t, dsn, key); got != http.StatusOK {
				t.Errorf("new key: got %d; want 200", got)
			}
			enterprise, err := runCmd(t, dsn, "keys", "create", "--plan", "enterprise", "--per-minute", "5", "--per-day", "50")
			if err != nil || statusWith(t, dsn, lastLine(enterprise)) != http.StatusOK {
				t.Errorf("enterprise key: %v %q", err, enterprise)
			}

			list, err := runCmd(t, dsn, "keys", "list")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(list, key) || !strings.Contains(list, key[:18]) || !strings.Contains(list, "ci") || !strings.Contains(list, "50") {
				t.Errorf("list must show the hint, name and limits, never the key:\n%s", list)
			}

			if _, err := runCmd(t, dsn, "keys", "revoke", "1"); err != nil {
				t.Fatal(err)
			}
			if got := statusWith(t, dsn, key); got != http.StatusUnauthorized {
				t.Errorf("revoked key: got %d; want 401", got)
			}
			list, _ = runCmd(t, dsn, "keys", "list")
			if row := strings.TrimSpace(strings.Split(list, "\n")[1]); strings.HasSuffix(row, "-") {
				t.Errorf("list must show when key 1 was revoked:\n%s", list)
			}
		})
	}
}

func TestKeysCommandErrors(t *testing.T) {
	dsn := dbtest.DSN(t, "sqlite")
	for _, args := range [][]string{
		{"keys"},
		{"keys", "create"},
		{"keys", "create", "--plan", "gold"},
		{"keys", "create", "--plan", "enterprise"},
		{"keys", "create", "--plan", "enterprise", "--per-minute", "5"},
		{"keys", "create", "--plan", "free", "--per-minute", "5"},
		{"keys", "revoke"},
		{"keys", "revoke", "x"},
		{"keys", "revoke", "99"},
		{"nonsense"},
		{},
	} {
		if out, err := runCmd(t, dsn, args...); err == nil {
			t.Errorf("%q: got success %q; want an error", args, out)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, env := range []map[string]string{
		{"PETSTORE_ENV": "prod"},
		{"PETSTORE_DB": "postgres://x"},
		{"PETSTORE_DB_MAX_OPEN": "lots"},
		{"PETSTORE_PUBLIC_URL": "https://api.example.com"},
	} {
		err := app.Run(context.Background(), []string{"migrate"}, environ(env), &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil {
			t.Errorf("%v: got success; want an error", env)
		}
	}
}

// TestBadSettingsChangeNothing checks that every setting is checked before the service touches
// anything: a setting that only a later step would refuse (the idempotency TTL, a rate-limit
// rule) stops serve and migrate before a database is created or migrated.
func TestBadSettingsChangeNothing(t *testing.T) {
	for _, bad := range []map[string]string{
		{"PETSTORE_IDEMPOTENCY_TTL": "1h"},
		{"PETSTORE_SUSPEND_BASE": "2h", "PETSTORE_SUSPEND_MAX": "1h"},
		{"PETSTORE_TRUSTED_PROXIES": "10.0.0.0/33"},
	} {
		for _, cmd := range []string{"serve", "migrate"} {
			path := filepath.Join(t.TempDir(), "petstore.db")
			env := append(environ(bad), "PETSTORE_DB=sqlite:"+path)
			var out bytes.Buffer
			if err := app.Run(context.Background(), []string{cmd, "--addr", "127.0.0.1:0"}, env, &out, &out); err == nil {
				t.Errorf("%s with %v: got success; want an error", cmd, bad)
			}
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s with %v: the database exists (stat: %v); want nothing created", cmd, bad, err)
			}
		}
	}
}

// TestVersion: petstore --version (and version) prints the build's line and exits 0, and
// /metrics carries petstore_build_info with the same version and commit.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "-version", "version"} {
		out, err := runCmd(t, "", arg)
		if err != nil || out != version.String()+"\n" {
			t.Errorf("petstore %s: got %q, %v; want %q", arg, out, err, version.String())
		}
	}
	var stderr bytes.Buffer
	env := []string{"PETSTORE_DB=sqlite:" + filepath.Join(t.TempDir(), "v.db")}
	if err := app.Run(context.Background(), []string{"migrate"}, env, io.Discard, &stderr); err != nil {
		t.Fatal(err)
	}
	if line := fmt.Sprintf(`"version":%q,"commit":%q`, version.Version(), version.Commit()); !strings.Contains(stderr.String(), line) {
		t.Errorf("start-up log line: got %s; want it to carry %s", stderr.String(), line)
	}
	api := newTestAPI(t, dbtestSQLite(t))
	req := get("/metrics")
	req.noAuth = true
	want := fmt.Sprintf(`petstore_build_info{commit=%q,goversion=%q,version=%q} 1`, version.Commit(), runtime.Version(), version.Version())
	if resp := api.do(t, req); !strings.Contains(resp.body, want) {
		t.Errorf("/metrics: no line %s", want)
	}
}
