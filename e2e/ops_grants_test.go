package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"petstore/app"
	"petstore/migrations"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// grantsUsers runs deploy/mysql/grants.sql with the mariadb client as root, the PETSTORE_DB of
// a fresh database, for that database: the file's database and user names replaced by the
// database's and by names of the test's own (users are the server's, shared by every test).
// The users are dropped when t ends. It returns the PETSTORE_DB of the migrating user and of
// the serving user, with the passwords of the file.
func grantsUsers(t *testing.T, root string) (migrate, serve string) {
	t.Helper()
	u, err := url.Parse(root)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	script, err := os.ReadFile("../deploy/mysql/grants.sql")
	if err != nil {
		t.Fatal(err)
	}
	users := regexp.MustCompile(`(?m)^CREATE USER '(\w+)'@'%' IDENTIFIED BY '([^']*)';$`).FindAllStringSubmatch(string(script), -1)
	if len(users) != 2 || users[0][1] != "petstore_migrate" || users[1][1] != "petstore" {
		t.Fatalf("grants.sql creates %q; want petstore_migrate, then petstore, each with a password", users)
	}
	sql := string(script)
	for old, new := range map[string]string{"`petstore`": "`" + name + "`", "'petstore_migrate'@": "'" + name + "_m'@", "'petstore'@": "'" + name + "_s'@"} {
		if !strings.Contains(sql, old) {
			t.Fatalf("grants.sql has no %s", old)
		}
		sql = strings.ReplaceAll(sql, old, new)
	}
	admin, err := store.Open(context.Background(), root, store.Pool{MaxOpen: 1, MaxIdle: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, user := range []string{name + "_m", name + "_s"} {
			_ = admin.Exec("DROP USER IF EXISTS '" + user + "'@'%'").Error
		}
		_ = admin.Close()
	})
	cmd := mariadbClient(t, "mariadb", root)
	cmd.Stdin = strings.NewReader(sql)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mariadb < grants.sql: %v\n%s", err, out)
	}
	as := func(user, password string) string {
		v := *u
		v.User = url.UserPassword(user, password)
		return v.String()
	}
	return as(name+"_m", users[0][2]), as(name+"_s", users[1][2])
}

// mariadbClient returns the command of program, a client of MariaDB's (mariadb, mariadb-dump),
// connecting to the server of dsn, a mysql:// PETSTORE_DB, as its user; args follow. It skips
// t, or fails it where services are required, when program is missing.
func mariadbClient(t *testing.T, program, dsn string, args ...string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath(program)
	if err != nil {
		dbtest.Unreachable(t, program, err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pass, _ := u.User.Password()
	return exec.Command(path, append([]string{"--protocol=tcp", "-h", u.Hostname(), "-P", u.Port(), "-u", u.User.Username(), "--password=" + pass}, args...)...)
}

// runAs runs the petstore command line with env and returns its stdout and error.
func runAs(env []string, args ...string) (string, error) {
	var stdout bytes.Buffer
	err := app.Run(context.Background(), args, env, &stdout, io.Discard)
	return stdout.String(), err
}

// TestLeastPrivilege creates the two users of deploy/mysql/grants.sql and runs the service as
// the serving one, which may not change the schema: serve and keys refuse a database the
// migrations have not reached, saying to run petstore migrate up; migrate up as the migrating
// user; then the serving user serves the whole surface (servedAs) with Redis, prints the
// development key, purges expired Idempotency-Key records, runs the keys and documents
// commands, reads the documents it lists, and may run no DDL.
func TestLeastPrivilege(t *testing.T) {
	quiet(t)
	root := dbtest.DSN(t, migrations.MySQL)
	migrate, serve := grantsUsers(t, root)
	for _, env := range [][]string{{"PETSTORE_DB=" + serve}, {"PETSTORE_DB=" + serve, "PETSTORE_MIGRATE=off"}} {
		_, err := runAs(env, "keys", "list")
		if err == nil || !strings.Contains(err.Error(), "lacks migrations") || !strings.Contains(err.Error(), "petstore migrate up") {
			t.Errorf("keys list as the serving user, %s, before migrate up: %v; want an error saying to run petstore migrate up", env[1:], err)
		}
	}
	if out, err := runAs([]string{"PETSTORE_DB=" + migrate}, "migrate", "up"); err != nil || !strings.Contains(out, fmt.Sprintf("migrations applied: %d;", shippedMigrations())) {
		t.Fatalf("migrate up as the migrating user: %q, %v", out, err)
	}
	if out, err := runAs([]string{"PETSTORE_DB=" + serve}, "migrate", "status"); err != nil || !strings.Contains(out, "pending: 0") {
		t.Errorf("migrate status as the serving user: %q, %v; want nothing pending", out, err)
	}

	db, err := store.Open(context.Background(), root, store.Pool{MaxOpen: 1, MaxIdle: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Key ids of the test's own, so that its rate limits in the shared Redis meet no other
	// test's; and an expired record for the purge that serve runs at start.
	if err := db.Exec(fmt.Sprintf("ALTER TABLE api_keys AUTO_INCREMENT = %d", 1_000_000_000+rand.Int64N(1_000_000_000_000))).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("INSERT INTO idempotency_keys (key_id, idem_key, request_hash, state, lease_token, headers, body, created_at, expires_at, locked_until) " +
		"VALUES (1, 'expired', REPEAT('0', 64), 'done', REPEAT('0', 32), '{}', '', NOW(6), NOW(6) - INTERVAL 1 DAY, NOW(6))").Error; err != nil {
		t.Fatal(err)
	}

	dbtest.Redis(t) // skips or fails when Redis is unreachable
	env := []string{"PETSTORE_DB=" + serve, "PETSTORE_MIGRATE=off", "PETSTORE_REDIS_URL=" + dbtest.RedisURL(), "PETSTORE_KEY_CACHE_TTL=1s"}
	_, base, devKey := startServe(t, env...)
	if devKey == "" {
		t.Fatal("serve as the serving user printed no development key")
	}
	within(t, 5*time.Second, "the expired record purged", func() bool {
		var n int64
		return db.Raw("SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = 'expired'").Scan(&n).Error == nil && n == 0
	})
	out, err := runAs(env, "keys", "create", "--plan", "business")
	key := lastLine(out)
	if err != nil || !strings.HasPrefix(key, "petstore_test_") {
		t.Fatalf("keys create as the serving user: %q, %v", out, err)
	}
	servedAs(t, base, devKey, key)
	if out, err := runAs(env, "keys", "list"); err != nil || strings.Count(out, "\n") != 3 {
		t.Errorf("keys list as the serving user: %q, %v; want a header and two keys", out, err)
	}
	checkRevoked(t, env, base)
	documentsAs(t, env, base, key)

	servingDB, err := store.Open(context.Background(), serve, store.Pool{MaxOpen: 1, MaxIdle: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer servingDB.Close()
	for _, ddl := range []string{"CREATE TABLE intruder (i INT)", "ALTER TABLE pets ADD COLUMN intruder INT", "DROP TABLE pets", "CREATE INDEX intruder ON pets (name)"} {
		if err := servingDB.Exec(ddl).Error; err == nil || !strings.Contains(err.Error(), "denied") {
			t.Errorf("%s as the serving user: %v; want it denied", ddl, err)
		}
	}
}

// mustRun runs the petstore command line with env and returns its stdout, or fails t.
func mustRun(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, err := runAs(env, args...)
	if err != nil {
		t.Fatalf("%s: %v", args, err)
	}
	return out
}

// documentsAs runs documents add, list and remove with env, the serving user's, and checks that
// the server at base, serving as that user, runs the listed document for key.
func documentsAs(t *testing.T, env []string, base, key string) {
	t.Helper()
	manifest := writeManifest(t, "apollo.json", apolloListed)
	if out, err := runAs(env, "documents", "add", manifest); err != nil || !strings.Contains(out, "added 1 documents") {
		t.Fatalf("documents add as the serving user: %q, %v", out, err)
	}
	within(t, 10*time.Second, "the server runs the listed document", func() bool {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/graphql?documentId=list-pets", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if out, err := runAs(env, "documents", "list"); err != nil || !strings.Contains(out, "list-pets") {
		t.Errorf("documents list as the serving user: %q, %v", out, err)
	}
	if _, err := runAs(env, "documents", "remove", "list-pets"); err != nil {
		t.Errorf("documents remove as the serving user: %v", err)
	}
}
