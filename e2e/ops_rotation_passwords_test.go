package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/testkit/dbtest"
)

// TestDatabasePasswordRotation walks the database password rotation of docs/operations.md on
// a MariaDB of the test's own: an instance runs with the old password; the user is given the
// new one beside it (two mysql_native_password methods, MariaDB's way to hold two passwords);
// an instance started with the new password serves beside the old one, both making new
// connections all along (their pools recycle each connection within a second); the old
// password is removed. Then the new instance serves on, a command run with the old password
// is refused, and the instance still on the old password, once its connections are recycled,
// is not ready and answers 503 to what needs the database: what a rollout left unfinished
// costs.
func TestDatabasePasswordRotation(t *testing.T) {
	t.Parallel()
	srv := dbtest.StartMariaDB(t)
	srv.Exec(t, "CREATE DATABASE petstore CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
	srv.Exec(t, "CREATE USER petstore@'%' IDENTIFIED BY 'old-secret'")
	srv.Exec(t, "GRANT ALL ON petstore.* TO petstore@'%'")
	env := func(password string) []string {
		return []string{fmt.Sprintf("PETSTORE_DB=mysql://petstore:%s@127.0.0.1:%d/petstore", password, srv.Port),
			"PETSTORE_DB_CONN_MAX_LIFETIME=1s", "PETSTORE_DB_CONN_MAX_IDLE_TIME=1s"}
	}
	_, oldURL, key := startServe(t, env("old-secret")...)

	srv.Exec(t, "ALTER USER petstore@'%' IDENTIFIED VIA mysql_native_password USING PASSWORD('old-secret') "+
		"OR mysql_native_password USING PASSWORD('new-secret')")
	_, newURL, _ := startServe(t, env("new-secret")...)
	serveOn(t, 3*time.Second, key, oldURL, newURL)
	for _, password := range []string{"old-secret", "new-secret"} {
		petstoreCmd(t, env(password), "keys", "list")
	}

	srv.Exec(t, "ALTER USER petstore@'%' IDENTIFIED BY 'new-secret'")
	if _, err := petstoreCmdErr(env("old-secret"), "keys", "list"); err == nil || !strings.Contains(err.Error(), "Access denied") {
		t.Errorf("keys list with the removed password: %v; want Access denied", err)
	}
	within(t, 10*time.Second, "the instance on the removed password is not ready, and refuses writes with 503", func() bool {
		_, _, err := createPet(http.DefaultClient, oldURL, key, "refused")
		return readyStatus(oldURL) == http.StatusServiceUnavailable && err != nil && strings.HasPrefix(err.Error(), "got 503 ")
	})
	serveOn(t, 3*time.Second, key, newURL)
	if _, _, err := createPet(http.DefaultClient, newURL, key, "stored"); err != nil {
		t.Errorf("a write on the new password: %v", err)
	}
}

// TestRedisPasswordRotation walks the Redis password rotation of docs/operations.md on a Redis
// of the test's own whose ACL user petstore the instances log in as, failing closed so that a
// Redis they cannot use shows as 503: an instance runs with the old password; the user is
// given the new one beside it (ACL SETUSER >new); an instance started with the new password
// serves beside the old one; the old password is removed (ACL SETUSER <old). Both serve on:
// connections made before stay logged in. A start with the old password fails; and once the
// connections are cut (CLIENT KILL USER, as a Redis restart or failover would), the instance
// still on the old password answers 503 while the other reconnects and serves.
func TestRedisPasswordRotation(t *testing.T) {
	t.Parallel()
	r := dbtest.NewRedisServer(t)
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	acl := func(args ...any) {
		t.Helper()
		if err := admin.Do(context.Background(), args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	acl("ACL", "SETUSER", "petstore", "on", ">old-secret", "~*", "&*", "+@all")
	dsn := dbtest.DSN(t, "mysql")
	env := func(password string) []string {
		return []string{"PETSTORE_DB=" + dsn, "PETSTORE_RATELIMIT_FAIL_OPEN=false",
			"PETSTORE_REDIS_URL=redis://petstore:" + password + "@" + r.Addr + "/0"}
	}
	_, oldURL, key := startServe(t, env("old-secret")...)

	acl("ACL", "SETUSER", "petstore", ">new-secret")
	_, newURL, _ := startServe(t, env("new-secret")...)
	serveOn(t, 2*time.Second, key, oldURL, newURL)

	acl("ACL", "SETUSER", "petstore", "<old-secret")
	serveOn(t, 2*time.Second, key, oldURL, newURL)
	if _, err := petstoreCmdErr(append(env("old-secret"), "PETSTORE_ADDR=127.0.0.1:0"), "serve"); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("serve with the removed password: %v; want WRONGPASS", err)
	}
	acl("CLIENT", "KILL", "USER", "petstore")
	within(t, 10*time.Second, "the instance on the removed password answers 503", func() bool {
		return getWithKey(oldURL, key) == http.StatusServiceUnavailable
	})
	serveOn(t, 2*time.Second, key, newURL)
}

// readyStatus returns the status of GET /readyz at base (0 when it got no answer).
func readyStatus(base string) int {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// serveOn calls GET /v1/pets with key and GET /readyz (a ping of the database) on each of urls
// in turn, every 50 ms for d, and fails t for each answer that is not a 200.
func serveOn(t *testing.T, d time.Duration, key string, urls ...string) {
	t.Helper()
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); n++ {
		u := urls[n%len(urls)]
		if status, ready := getWithKey(u, key), readyStatus(u); status != http.StatusOK || ready != http.StatusOK {
			t.Fatalf("%s: GET /v1/pets %d, GET /readyz %d; want 200 and 200", u, status, ready)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
