package e2e

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/app"
	"petstore/migrations"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// startTogether runs start for n instances at once and returns how long each took.
func startTogether(t *testing.T, n int, start func(i int) error) []time.Duration {
	t.Helper()
	took := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			begin := time.Now()
			if err := start(i); err != nil {
				t.Errorf("instance %d: %v", i, err)
			}
			took[i] = time.Since(begin)
		})
	}
	wg.Wait()
	return took
}

// TestInstancesMigrateAtOnce starts six instances at once on a fresh MySQL database: one
// applies the migrations, the others wait for it and find nothing to apply; none fails.
// The others are woken when the lock is released, not by polling it: the bound on how much
// later than the first they finish is a property of the lock, not a performance figure (goose's
// lock table, polled every 5 s, made it 1 to 10 s).
func TestInstancesMigrateAtOnce(t *testing.T) {
	dsn := dbtest.DSN(t, migrations.MySQL)
	applied := make([]int, 6)
	took := startTogether(t, len(applied), func(i int) error {
		db, err := store.Open(context.Background(), dsn, store.DefaultPool)
		if err != nil {
			return err
		}
		defer db.Close()
		applied[i], err = db.Migrate(context.Background())
		return err
	})
	t.Logf("start-up times: %v", took)
	slices.Sort(applied)
	if n := shippedMigrations(); applied[len(applied)-1] != n || applied[len(applied)-2] != 0 {
		t.Errorf("migrations applied by each instance: got %v; want %d by one, 0 by the others", applied, n)
	}
	if spread := slices.Max(took) - slices.Min(took); spread > 2*time.Second {
		t.Errorf("the last instance finished %v after the first; want the others woken at once", spread)
	}
}

// TestMigrateOnOneConnection checks that the migration lock, which holds a connection of its
// own, does not deadlock a MySQL pool of one connection.
func TestMigrateOnOneConnection(t *testing.T) {
	db, err := store.Open(context.Background(), dbtest.DSN(t, migrations.MySQL), store.Pool{MaxOpen: 1, MaxIdle: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if n, err := db.Migrate(ctx); n != shippedMigrations() || err != nil {
		t.Fatalf("Migrate: got %d, %v; want %d, nil", n, err, shippedMigrations())
	}
	if got := db.SQL().Stats().MaxOpenConnections; got != 1 {
		t.Errorf("MaxOpenConnections after Migrate: got %d; want 1 again", got)
	}
}

// TestMigrationLockLeftBehind: a session that holds the migration lock (an instance stuck
// after migrating) holds no command back once the migrations are applied: keys create, which
// applies pending migrations first, makes its key at once instead of waiting for the lock.
func TestMigrationLockLeftBehind(t *testing.T) {
	dsn := dbtest.DSN(t, migrations.MySQL)
	if _, err := runCmd(t, dsn, "migrate"); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), dsn, store.Pool{MaxOpen: 1, MaxIdle: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got int
	if err := db.Raw("SELECT GET_LOCK(CONCAT('petstore-migrate:', DATABASE()), 0)").Scan(&got).Error; err != nil || got != 1 {
		t.Fatalf("GET_LOCK: %d, %v", got, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout bytes.Buffer
	err = app.Run(ctx, []string{"keys", "create", "--plan", "free"}, []string{"PETSTORE_DB=" + dsn}, &stdout, io.Discard)
	if err != nil || !strings.HasPrefix(lastLine(stdout.String()), "petstore_test_") {
		t.Errorf("keys create while another session holds the migration lock: %v, %q; want a key", err, stdout.String())
	}
}

// shippedMigrations returns how many migrations this build ships (0 when none is found, which
// no check accepts).
func shippedMigrations() int {
	files, _ := filepath.Glob("../migrations/mysql/*.sql")
	return len(files)
}
