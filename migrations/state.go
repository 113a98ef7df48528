package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Migration is the state of one migration in a database.
type Migration struct {
	Version   int64
	File      string // its file in this build; empty for a version applied that this build lacks
	Applied   bool
	AppliedAt string // when it was applied, as the database gives it; empty when pending
}

// Status returns the migrations of this build, in order, each applied or pending in db, then
// any version applied in db that this build lacks (applied by a later build). It reads only:
// a database that no migration touched yet has every migration pending.
func Status(ctx context.Context, db *sql.DB, dialect string) ([]Migration, error) {
	p, err := provider(db, dialect)
	if err != nil {
		return nil, err
	}
	applied, err := appliedVersions(ctx, db, dialect)
	if err != nil {
		return nil, err
	}
	var list []Migration
	for _, s := range p.ListSources() {
		at, ok := applied[s.Version]
		list = append(list, Migration{Version: s.Version, File: s.Path, Applied: ok, AppliedAt: at})
		delete(applied, s.Version)
	}
	for _, v := range slices.Sorted(maps.Keys(applied)) {
		list = append(list, Migration{Version: v, Applied: true, AppliedAt: applied[v]})
	}
	return list, nil
}

// Pending returns the migrations of this build that db lacks, in order; it reads only.
func Pending(ctx context.Context, db *sql.DB, dialect string) ([]Migration, error) {
	list, err := Status(ctx, db, dialect)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list, func(m Migration) bool { return m.Applied }), nil
}

// ErrBehind marks the error of a database that lacks migrations of this build which were not
// applied: the command was not to apply them (Check), or the database refused (Apply).
var ErrBehind = errors.New("the database lacks migrations of this build")

// Check returns nil when db has every migration of this build, else an error wrapping
// ErrBehind that names the missing ones; it reads only.
func Check(ctx context.Context, db *sql.DB, dialect string) error {
	pending, err := Pending(ctx, db, dialect)
	if err != nil || len(pending) == 0 {
		return err
	}
	return behind(pending)
}

// behind returns the ErrBehind of a database that lacks pending.
func behind(pending []Migration) error {
	files := make([]string, len(pending))
	for i, m := range pending {
		files[i] = m.File
	}
	return fmt.Errorf("migrations: %w: %s", ErrBehind, strings.Join(files, ", "))
}

// appliedVersions returns the versions recorded in goose's table of db, but goose's own 0,
// each with when it was applied; none when the table does not exist.
func appliedVersions(ctx context.Context, db *sql.DB, dialect string) (map[int64]string, error) {
	exists := "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'goose_db_version'"
	if dialect == SQLite {
		exists = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'goose_db_version'"
	}
	var n int
	if err := db.QueryRowContext(ctx, exists).Scan(&n); err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	versions := map[int64]string{}
	if n == 0 {
		return versions, nil
	}
	rows, err := db.QueryContext(ctx, "SELECT version_id, tstamp FROM goose_db_version WHERE version_id > 0")
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int64
		var at sql.NullString
		if err := rows.Scan(&v, &at); err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		versions[v] = at.String
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return versions, nil
}
