package dbtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/secret"
	"petstore/store"
)

// run names this test process's MySQL databases (petstore_t_RUN_...) and Redis keys
// (test:RUN:...), so that LeftBehind finds what its tests left, and nothing of other
// processes sharing the servers.
var run = randomHex(3)

// usedMySQL and usedRedis record whether a test of this process made a database or took a
// Redis prefix: LeftBehind looks only at the servers that were used.
var usedMySQL, usedRedis atomic.Bool

// LeftBehind returns an error naming the MySQL databases and Redis keys that this process's
// tests made through DSN, New and Redis and did not remove, nil when there are none. Call it
// from TestMain after m.Run: each test removes what it wrote when it ends, so anything left is
// a defect of a test (or of its order of cleanups: a server still writing after its prefix
// was emptied).
func LeftBehind() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	if usedMySQL.Load() {
		if names, err := leftDatabases(ctx); err != nil || len(names) > 0 {
			errs = append(errs, fmt.Errorf("MySQL databases left behind: %v %v", names, err))
		}
	}
	if usedRedis.Load() {
		if keys, err := leftKeys(ctx); err != nil || len(keys) > 0 {
			errs = append(errs, fmt.Errorf("Redis keys left behind: %v %v", keys, err))
		}
	}
	return errors.Join(errs...)
}

// leftDatabases returns the databases of this run on the test MySQL server.
func leftDatabases(ctx context.Context) ([]string, error) {
	admin, err := store.Open(ctx, mysqlURL(), store.Pool{MaxOpen: 1, MaxIdle: 1})
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	var names []string
	err = admin.WithContext(ctx).Raw(`SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE ?`,
		`petstore\_t\_`+run+`\_%`).Scan(&names).Error
	return names, err
}

// leftKeys returns the keys of this run on the test Redis server.
func leftKeys(ctx context.Context) ([]string, error) {
	opts, err := redis.ParseURL(RedisURL())
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(opts)
	defer c.Close()
	var keys []string
	for _, pattern := range []string{"test:" + run + ":*", "{test:" + run + ":*"} {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return keys, err
		}
	}
	return keys, nil
}

// described names the server at url, and where its address came from: the variable env, or
// the default when env is unset.
func described(what, env, url string) string {
	if os.Getenv(env) == "" {
		return fmt.Sprintf("%s at %s (%s unset)", what, secret.Mask(url), env)
	}
	return fmt.Sprintf("%s at %s (set by %s)", what, secret.Mask(url), env)
}

// recordSkip appends "need<TAB>why" to the file PETSTORE_TEST_SKIPS names, when it is set, for
// testkit/test.sh's summary of what skipped and why. A line is one write to a file opened for
// appending, so the test processes of one run may share the file.
func recordSkip(need string, why error) {
	path := os.Getenv("PETSTORE_TEST_SKIPS")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = fmt.Fprintf(f, "%s\t%s\n", need, oneLine(why.Error()))
}

// oneLine returns s with its line breaks and tabs as spaces.
func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\n' || c == '\r' || c == '\t' {
			b[i] = ' '
		}
	}
	return string(b)
}
