// Package dbtest gives tests a fresh, migrated database of each dialect: SQLite always, MySQL
// when the server named by PETSTORE_TEST_MYSQL answers. Where PETSTORE_TEST_REQUIRE_SERVICES=1
// or CI=true, an unreachable server fails the test instead of skipping it.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"petstore/migrations"
	"petstore/store"
)

// DefaultMySQL is the server tests use when PETSTORE_TEST_MYSQL is unset.
const DefaultMySQL = "mysql://root:@127.0.0.1:3306/test"

// Dialects lists the dialects every store test runs against.
var Dialects = []string{migrations.SQLite, migrations.MySQL}

// Required reports whether tests must fail, not skip, when a server they need is unreachable.
func Required() bool {
	return os.Getenv("PETSTORE_TEST_REQUIRE_SERVICES") == "1" || os.Getenv("CI") == "true"
}

// Unreachable skips tb, or fails it where services are required, because server is down.
func Unreachable(tb testing.TB, server string, err error) {
	tb.Helper()
	skipOrFail(tb, server, "unreachable", err)
}

// Missing skips tb, or fails it where services are required, because program is not
// installed.
func Missing(tb testing.TB, program string, err error) {
	tb.Helper()
	skipOrFail(tb, program, "missing", err)
}

// skipOrFail fails tb where services are required, saying that need is state; elsewhere it
// skips tb as Skip does.
func skipOrFail(tb testing.TB, need, state string, err error) {
	tb.Helper()
	if Required() {
		tb.Fatalf("%s is required here but %s: %v", need, state, err)
	}
	Skip(tb, need+" "+state, err)
}

// Skip skips tb because of err, for want of need (a server or program, and its state), and
// records it for testkit/test.sh's summary; for a test that decides by itself whether it may
// skip.
func Skip(tb testing.TB, need string, err error) {
	tb.Helper()
	recordSkip(need, err)
	tb.Skipf("%s, skipping: %v", need, err)
}

// mysqlURL returns the test MySQL server: PETSTORE_TEST_MYSQL, else DefaultMySQL.
func mysqlURL() string {
	if url := os.Getenv("PETSTORE_TEST_MYSQL"); url != "" {
		return url
	}
	return DefaultMySQL
}

// ForEach runs fn as a subtest against a fresh database of each dialect.
func ForEach(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(d, func(t *testing.T) { fn(t, New(t, d)) })
	}
}

// New returns a fresh, migrated database of dialect, removed when tb ends.
func New(tb testing.TB, dialect string) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), DSN(tb, dialect), store.DefaultPool)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return db
}

// DSN returns the PETSTORE_DB value of a fresh, empty database of dialect, dropped when tb
// ends (a MySQL database is named petstore_t_ and this run's name: see LeftBehind).
func DSN(tb testing.TB, dialect string) string {
	tb.Helper()
	if dialect == migrations.SQLite {
		return "sqlite:" + filepath.Join(tb.TempDir(), "petstore.db")
	}
	server := mysqlURL()
	admin, err := store.Open(context.Background(), server, store.Pool{MaxOpen: 1, MaxIdle: 1})
	if err != nil {
		Unreachable(tb, described("MySQL", "PETSTORE_TEST_MYSQL", server), err)
	}
	usedMySQL.Store(true)
	name := "petstore_t_" + run + "_" + randomHex(4)
	if err := admin.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin").Error; err != nil {
		_ = admin.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := admin.Exec("DROP DATABASE " + name).Error; err != nil {
			tb.Errorf("drop test database %s: %v", name, err)
		}
		_ = admin.Close()
	})
	u, err := url.Parse(server)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
