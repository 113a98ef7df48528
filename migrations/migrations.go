// Package migrations holds the versioned SQL migrations of both dialects, embedded in the
// binary, and applies them with goose. `petstore serve` and `petstore migrate` apply them;
// nothing else changes the schema.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/pressly/goose/v3"

	"petstore/internal/dblock"
)

//go:embed mysql/*.sql sqlite/*.sql
var files embed.FS

// Dialects of the store.
const (
	MySQL  = "mysql"
	SQLite = "sqlite"
)

// migrateLockWait is how long an instance waits for another's migrations on MySQL.
const migrateLockWait = 5 * time.Minute

// recheckEvery is how often an instance waiting for another's migrations looks whether they
// are all applied, so that it goes on without the lock once they are.
const recheckEvery = time.Second

// Apply applies every pending migration of dialect to db and returns how many it applied.
//
// On MySQL it first looks, reading only, whether any is pending: when none is, it takes no
// lock and changes nothing, so that a user that may not change the schema can start the
// service on a current one; when some are and the user may not apply them, the error wraps
// ErrBehind. Else the whole of goose's work, its first look at the version
// table included, runs under a named lock (GET_LOCK, internal/dblock), so that of instances
// starting at once one migrates and the others wait in the server, which wakes the next as
// soon as the lock is free, then find nothing to apply. Goose's own lock is taken only after
// that first look, so on a fresh database instances would race to create the version table
// ("missing zero version migration"), and its waiters poll.
//
// On a Galera cluster the named lock holds on one node only, so there the lock is a lease,
// a row that two nodes cannot both insert (dblock): of instances starting on different nodes
// one migrates and the others poll until it is done. goose's own start (creating its version
// table and its first row) is not safe to run on two nodes at once (TestGaleraStartTogether).
// A waiter looks every recheckEvery whether the migrations are applied, and goes on once they
// are, whether or not the lease is free; a look that a DDL replicated from the migrating node
// aborts (1213, dblock.RolledBack) is taken again.
func Apply(ctx context.Context, db *sql.DB, dialect string) (int, error) {
	switch dialect {
	case SQLite:
		return up(ctx, db, dialect)
	case MySQL:
	default:
		return 0, fmt.Errorf("migrations: unknown dialect %q", dialect)
	}
	applied := 0
	err := whileBehind(ctx, db, func() (err error) {
		applied, err = up(ctx, db, dialect)
		return err
	})
	if refused(err) {
		if pending, perr := Pending(ctx, db, dialect); perr == nil && len(pending) > 0 {
			err = fmt.Errorf("%w; applying them was refused: %w", behind(pending), err)
		}
	}
	return applied, err
}

// refused reports whether err is MySQL's refusal of a statement to a user without the
// privilege it needs (1044, 1142, 1227), such as the serving user of deploy/mysql/grants.sql,
// which may not change the schema.
func refused(err error) bool {
	var myErr *mysql.MySQLError
	return errors.As(err, &myErr) && (myErr.Number == 1044 || myErr.Number == 1142 || myErr.Number == 1227)
}

// whileBehind runs fn under the migration lock of db, a MySQL database, unless no migration
// of this build is pending: before it takes the lock, and every recheckEvery while it waits.
func whileBehind(ctx context.Context, db *sql.DB, fn func() error) error {
	if db.Stats().MaxOpenConnections == 1 { // the lock holds one connection while goose uses another
		db.SetMaxOpenConns(2)
		defer db.SetMaxOpenConns(1)
	}
	for deadline := time.Now().Add(migrateLockWait); ; {
		pending, err := Pending(ctx, db, MySQL)
		if (err != nil && !dblock.RolledBack(err)) || (err == nil && len(pending) == 0) {
			return err
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("migrations: another instance has been migrating for %v; try again", migrateLockWait)
		}
		if err != nil { // on Galera, a DDL that another node's migrations run ends reads too
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(recheckEvery):
			}
			continue
		}
		lock, err := dblock.Acquire(ctx, db, "petstore-migrate", recheckEvery)
		if err != nil {
			return fmt.Errorf("migrations: %w", err)
		}
		if lock != nil {
			return errors.Join(fn(), lock.Release(context.WithoutCancel(ctx)))
		}
	}
}

// provider returns goose's provider of dialect's migrations on db.
func provider(db *sql.DB, dialect string) (*goose.Provider, error) {
	sub, err := fs.Sub(files, dialect)
	if err != nil {
		return nil, err
	}
	gooseDialect := goose.DialectMySQL
	if dialect == SQLite {
		gooseDialect = goose.DialectSQLite3
	}
	p, err := goose.NewProvider(gooseDialect, db, sub)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}

// up applies the pending migrations of dialect with goose.
func up(ctx context.Context, db *sql.DB, dialect string) (int, error) {
	p, err := provider(db, dialect)
	if err != nil {
		return 0, err
	}
	results, err := p.Up(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	for _, r := range results {
		slog.InfoContext(ctx, "migration applied", "version", r.Source.Version, "file", r.Source.Path,
			"duration_ms", float64(r.Duration.Microseconds())/1000)
	}
	return len(results), nil
}
