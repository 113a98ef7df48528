package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"petstore/internal/dblock"
)

// ErrDropsData marks Down's refusal to roll back a migration whose down section drops data
// when it was not told it may.
var ErrDropsData = errors.New("rolling it back drops data")

// Down rolls back the last migration applied to db and returns it. It refuses, with an error
// wrapping ErrDropsData, when the migration's down section drops data (dropsData) and dropData
// is false; and when that migration is not in this build (a later build applied it: its own
// Down rolls it back). On MySQL it runs under the migration lock, as Apply does.
func Down(ctx context.Context, db *sql.DB, dialect string, dropData bool) (Migration, error) {
	if dialect == SQLite {
		return down(ctx, db, dialect, dropData)
	}
	lock, err := dblock.Acquire(ctx, db, "petstore-migrate", migrateLockWait)
	if err != nil {
		return Migration{}, fmt.Errorf("migrations: %w", err)
	}
	if lock == nil {
		return Migration{}, fmt.Errorf("migrations: another instance has been migrating for %v; try again", migrateLockWait)
	}
	m, err := down(ctx, db, dialect, dropData)
	return m, errors.Join(err, lock.Release(context.WithoutCancel(ctx)))
}

// down is Down without the lock.
func down(ctx context.Context, db *sql.DB, dialect string, dropData bool) (Migration, error) {
	list, err := Status(ctx, db, dialect)
	if err != nil {
		return Migration{}, err
	}
	var last *Migration
	for i, m := range list {
		if m.Applied && (last == nil || m.Version > last.Version) {
			last = &list[i]
		}
	}
	switch {
	case last == nil:
		return Migration{}, errors.New("migrations: no migration is applied; there is nothing to roll back")
	case last.File == "":
		return Migration{}, fmt.Errorf("migrations: version %d was applied by a later build; roll it back with that build", last.Version)
	}
	text, err := files.ReadFile(dialect + "/" + last.File)
	if err != nil {
		return Migration{}, err
	}
	if drops := dropsData(downSection(string(text))); len(drops) > 0 && !dropData {
		return *last, fmt.Errorf("migrations: %s: %w (%s)", last.File, ErrDropsData, strings.Join(drops, "; "))
	}
	p, err := provider(db, dialect)
	if err != nil {
		return Migration{}, err
	}
	r, err := p.Down(ctx)
	if err != nil {
		return Migration{}, fmt.Errorf("migrations: %w", err)
	}
	return Migration{Version: r.Source.Version, File: r.Source.Path}, nil
}

// downSection returns the statements of a migration file's down section, without comments.
func downSection(text string) []string {
	_, section, _ := strings.Cut(text, "-- +goose Down")
	var lines []string
	for line := range strings.Lines(section) {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			lines = append(lines, line)
		}
	}
	var statements []string
	for s := range strings.SplitSeq(strings.Join(lines, ""), ";") {
		if s = strings.Join(strings.Fields(s), " "); s != "" {
			statements = append(statements, s)
		}
	}
	return statements
}

// dropsData returns the statements that may drop rows or values: all but those that create
// (CREATE, INSERT), drop an index, or alter a table only by adding to it or dropping its
// indexes and constraints. When in doubt, a statement drops data.
func dropsData(statements []string) []string {
	var drops []string
	for _, s := range statements {
		words := strings.Fields(strings.ToUpper(s))
		keeps := words[0] == "CREATE" || words[0] == "INSERT" || (len(words) > 1 && words[0] == "DROP" && words[1] == "INDEX")
		if len(words) > 3 && words[0] == "ALTER" && words[1] == "TABLE" {
			keeps = true
			for _, clause := range clauses(strings.Join(words[3:], " ")) {
				keeps = keeps && keepsData(strings.Fields(clause))
			}
		}
		if !keeps {
			drops = append(drops, s)
		}
	}
	return drops
}

// keepsData reports whether a clause of ALTER TABLE, in words, keeps every row and value.
func keepsData(clause []string) bool {
	if len(clause) == 0 || clause[0] == "ADD" {
		return true
	}
	if len(clause) < 2 || clause[0] != "DROP" {
		return false
	}
	switch clause[1] {
	case "INDEX", "KEY", "CONSTRAINT", "CHECK", "FOREIGN", "PRIMARY":
		return true
	}
	return false
}

// clauses splits the clauses of ALTER TABLE at the commas outside parentheses.
func clauses(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
