package dbtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"petstore/store"
)

// TestMain fails the run when a test of this package left a database or key behind.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := LeftBehind(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// TestDatabaseDropped: a test's MySQL database exists while it runs, and is gone once it ended.
func TestDatabaseDropped(t *testing.T) {
	var name string
	t.Run("user", func(t *testing.T) {
		db := New(t, "mysql")
		if err := db.Raw("SELECT DATABASE()").Scan(&name).Error; err != nil || !strings.HasPrefix(name, "petstore_t_"+run+"_") {
			t.Fatalf("the test's database: %q, %v; want petstore_t_%s_...", name, err, run)
		}
	})
	if name == "" {
		t.SkipNow() // the user skipped: MySQL is unreachable
	}
	admin, err := store.Open(context.Background(), mysqlURL(), store.Pool{MaxOpen: 1, MaxIdle: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var n int
	if err := admin.Raw("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?", name).Scan(&n).Error; err != nil || n != 0 {
		t.Errorf("database %s after its test: %d found, %v; want it dropped", name, n, err)
	}
}

// TestRedisKeysDeleted: every key under a test's prefix, hash-tagged or not, is deleted once
// the test ended, and nothing else; the default server is not database 0.
func TestRedisKeysDeleted(t *testing.T) {
	c, outer := Redis(t)
	other := outer + "kept"
	if err := c.Set(context.Background(), other, "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	t.Run("user", func(t *testing.T) {
		c, prefix := Redis(t)
		keys = []string{prefix + "plain", "{" + prefix + "k:1}", "{" + prefix + "live:k:1}:subs"}
		for _, k := range keys {
			if err := c.Set(context.Background(), k, "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if n, err := c.Exists(context.Background(), keys...).Result(); err != nil || n != 0 {
		t.Errorf("%d of %v left after their test, %v; want none", n, keys, err)
	}
	if n, err := c.Exists(context.Background(), other).Result(); err != nil || n != 1 {
		t.Errorf("%s, another test's key, deleted too (%v)", other, err)
	}
	if opts, err := redis.ParseURL(DefaultRedis); err != nil || opts.DB == 0 {
		t.Errorf("DefaultRedis %s: database %d, %v; want one other than 0", DefaultRedis, opts.DB, err)
	}
}

// TestSkipSummary runs testkit/test.sh, as make test does, on a test that needs MySQL with
// PETSTORE_TEST_MYSQL naming a port nothing listens on, services not required: go test says
// ok, and the summary line names the server, the variable and why.
func TestSkipSummary(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command("../test.sh", "-count=1", "-run", "^TestDatabaseDropped$", ".")
	cmd.Env = append(os.Environ(), "PETSTORE_TEST_MYSQL=mysql://root:@"+addr+"/test", "PETSTORE_TEST_REQUIRE_SERVICES=", "CI=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("test.sh: %v\n%s", err, out)
	}
	want := regexp.MustCompile(`(?m)^ok  \tpetstore/testkit/dbtest\t.*\nskipped: 1 test, MySQL at mysql://root:\*\*\*@` +
		regexp.QuoteMeta(addr) + `/test \(set by PETSTORE_TEST_MYSQL\) unreachable: .*connection refused\n\z`)
	if !want.Match(out) {
		t.Errorf("test.sh printed:\n%s\nwant it to match %s", out, want)
	}
}
