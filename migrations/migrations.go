// Package migrations holds the versioned SQL migrations of both dialects, embedded in the
// binary, and applies them with goose. `petstore serve` and `petstore migrate` apply them;
// nothing else changes the schema.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

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

// Apply applies every pending migration of dialect to db and returns how many it applied.
//
// On MySQL the whole of goose's work, its first look at the version table included, runs under
// a named lock (GET_LOCK, internal/dblock), so that of instances starting at once one migrates
// and the others wait in the server, which wakes the next as soon as the lock is free, then
// find nothing to apply. Goose's own lock is taken only after that first look, so on a fresh
// database instances would race to create the version table ("missing zero version
// migration"), and its waiters poll.
//
// On a Galera cluster the named lock holds on one node only, so there the lock is a lease,
// a row that two nodes cannot both insert (dblock): of instances starting on different nodes
// one migrates and the others poll until it is done. goose's own start (creating its version
// table and its first row) is not safe to run on two nodes at once (TestGaleraStartTogether).
func Apply(ctx context.Context, db *sql.DB, dialect string) (int, error) {
	switch dialect {
	case SQLite:
		return up(ctx, db, dialect, goose.DialectSQLite3)
	case MySQL:
	default:
		return 0, fmt.Errorf("migrations: unknown dialect %q", dialect)
	}
	if db.Stats().MaxOpenConnections == 1 { // the lock holds one connection while goose uses another
		db.SetMaxOpenConns(2)
		defer db.SetMaxOpenConns(1)
	}
	lock, err := dblock.Acquire(ctx, db, "petstore-migrate", migrateLockWait)
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	if lock == nil {
		return 0, fmt.Errorf("migrations: another instance has been migrating for %v; try again", migrateLockWait)
	}
	defer func() { _ = lock.Release(context.WithoutCancel(ctx)) }()
	return up(ctx, db, dialect, goose.DialectMySQL)
}

// up applies the pending migrations of dialect with goose.
func up(ctx context.Context, db *sql.DB, dialect string, gooseDialect goose.Dialect) (int, error) {
	sub, err := fs.Sub(files, dialect)
	if err != nil {
		return 0, err
	}
	p, err := goose.NewProvider(gooseDialect, db, sub)
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
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
