package e2e

import (
	"context"
	"strings"
	"testing"

	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestMigrateCommands: on a new database migrate status lists every migration pending and
// applies none; up applies them; down refuses to roll back a migration that drops data
// without --drop-data, changing nothing, and rolls it back with it; serve and keys with
// PETSTORE_MIGRATE=off then refuse the database, naming the migration missing and migrate up;
// up applies it again. A version applied by a later build is listed as such, down leaves it
// to that build, and PETSTORE_MIGRATE=off accepts the database.
func TestMigrateCommands(t *testing.T) {
	quiet(t)
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			dsn := dbtest.DSN(t, dialect)
			env := []string{"PETSTORE_DB=" + dsn}
			off := append(env, "PETSTORE_MIGRATE=off", "PETSTORE_ADDR=127.0.0.1:0")
			status := func(want ...string) {
				t.Helper()
				out := mustRun(t, env, "migrate", "status")
				for _, w := range want {
					if !strings.Contains(out, w) {
						t.Errorf("migrate status: no %q in\n%s", w, out)
					}
				}
			}
			status("00001_create_pets.sql              pending", "00006_webhook_tail.sql             pending", "pending: 6")
			if out := mustRun(t, env, "migrate", "up"); !strings.Contains(out, "migrations applied: 6;") {
				t.Errorf("migrate up after status: %q; want the 6 migrations applied", out)
			}
			status("00006_webhook_tail.sql             applied", "pending: 0")

			_, err := runAs(env, "migrate", "down")
			if err == nil || !strings.Contains(err.Error(), "drops data (ALTER TABLE webhook_endpoints DROP COLUMN queued_id") || !strings.Contains(err.Error(), "--drop-data") {
				t.Errorf("migrate down: %v; want a refusal naming the statement and --drop-data", err)
			}
			status("pending: 0")
			if out := mustRun(t, env, "migrate", "down", "--drop-data"); !strings.Contains(out, "rolled back migration 6 (00006_webhook_tail.sql)") {
				t.Errorf("migrate down --drop-data: %q", out)
			}
			status("00005_create_webhooks.sql          applied", "00006_webhook_tail.sql             pending", "pending: 1")
			for _, args := range [][]string{{"keys", "list"}, {"serve"}} {
				_, err := runAs(off, args...)
				if err == nil || !strings.Contains(err.Error(), "lacks migrations of this build: 00006_webhook_tail.sql") ||
					!strings.Contains(err.Error(), "run petstore migrate up first") {
					t.Errorf("%s with PETSTORE_MIGRATE=off: %v; want a refusal naming the migration and migrate up", args, err)
				}
			}
			if out := mustRun(t, env, "migrate"); !strings.Contains(out, "migrations applied: 1;") {
				t.Errorf("migrate: %q; want the migration applied again", out)
			}

			db, err := store.Open(context.Background(), dsn, store.Pool{MaxOpen: 1, MaxIdle: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, 1)").Error; err != nil {
				t.Fatal(err)
			}
			status("99 ", "(not in this build: applied by a later one)", "pending: 0")
			if _, err := runAs(env, "migrate", "down", "--drop-data"); err == nil || !strings.Contains(err.Error(), "version 99 was applied by a later build") {
				t.Errorf("migrate down of a later build's migration: %v; want a refusal", err)
			}
			mustRun(t, off, "keys", "list")
		})
	}
}
