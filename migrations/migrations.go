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

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed mysql/*.sql sqlite/*.sql
var files embed.FS

// Dialects of the store.
const (
	MySQL  = "mysql"
	SQLite = "sqlite"
)

// Apply applies every pending migration of dialect to db and returns how many it applied.
// On MySQL a lock table serialises instances that start at once.
func Apply(ctx context.Context, db *sql.DB, dialect string) (int, error) {
	sub, err := fs.Sub(files, dialect)
	if err != nil {
		return 0, err
	}
	var opts []goose.ProviderOption
	gooseDialect := goose.DialectSQLite3
	switch dialect {
	case MySQL:
		gooseDialect = goose.DialectMySQL
		locker, err := lock.NewMySQLTableLocker()
		if err != nil {
			return 0, err
		}
		opts = append(opts, goose.WithLocker(locker))
	case SQLite:
	default:
		return 0, fmt.Errorf("migrations: unknown dialect %q", dialect)
	}
	p, err := goose.NewProvider(gooseDialect, db, sub, opts...)
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	for _, r := range results {
		slog.InfoContext(ctx, "migration applied", "version", r.Source.Version, "file", r.Source.Path, "took", r.Duration)
	}
	return len(results), nil
}
