package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/config"
	"petstore/internal/testkit/dbtest"
	"petstore/migrations"
	"petstore/models"
	"petstore/store"
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
	if applied[len(applied)-1] != 3 || applied[len(applied)-2] != 0 {
		t.Errorf("migrations applied by each instance: got %v; want 3 by one, 0 by the others", applied)
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
	if n, err := db.Migrate(ctx); n != 3 || err != nil {
		t.Fatalf("Migrate: got %d, %v; want 3, nil", n, err)
	}
	if got := db.SQL().Stats().MaxOpenConnections; got != 1 {
		t.Errorf("MaxOpenConnections after Migrate: got %d; want 1 again", got)
	}
}

// TestDevKeyCreatedOnce starts six development instances at once on a fresh database of each
// dialect: one prints the key, the others say that keys exist, and the database holds one key.
func TestDevKeyCreatedOnce(t *testing.T) {
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			cfg := config.Default()
			cfg.DB = dbtest.DSN(t, dialect)
			outs := make([]bytes.Buffer, 6)
			dbs := make([]*store.DB, len(outs))
			for i := range dbs { // migrated first, so that the key's creations meet
				db, err := openDB(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				dbs[i] = db
			}
			startTogether(t, len(outs), func(i int) error {
				return printDevKey(context.Background(), dbs[i], cfg, &outs[i])
			})
			printed := 0
			for i := range outs {
				if strings.Contains(outs[i].String(), "development API key") {
					printed++
				}
			}
			check, err := store.Open(context.Background(), cfg.DB, store.DefaultPool)
			if err != nil {
				t.Fatal(err)
			}
			defer check.Close()
			var keys int64
			if err := check.Model(&models.APIKey{}).Count(&keys).Error; err != nil {
				t.Fatal(err)
			}
			if printed != 1 || keys != 1 {
				t.Errorf("got %d keys printed and %d stored; want 1 and 1", printed, keys)
			}
		})
	}
}
