package dblock

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"
	"testing"
)

// TestLeaseUndoneWhenInsertUnanswered: an insert of the lease that gets no answer (its context
// ended while it was under way) may have taken the lease; the acquire returns the error and
// deletes the lease of its holder, with a context of its own, so that none is left behind.
func TestLeaseUndoneWhenInsertUnanswered(t *testing.T) {
	rec := &statements{insertErr: context.Canceled}
	db := sql.OpenDB(rec)
	defer db.Close()
	lock, err := acquireLease(context.Background(), db, "petstore-purge", 0)
	if lock != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("acquireLease: %v, %v; want no lock and the insert's error", lock, err)
	}
	got := rec.list()
	if len(got) != 3 || !strings.HasPrefix(got[1], "INSERT") || !strings.HasPrefix(got[2], "DELETE FROM petstore_locks WHERE name = ? AND holder = ?") {
		t.Fatalf("statements: %q; want the expired lease's delete, the insert, then the delete of its own lease", got)
	}
}

// statements is a database/sql connector whose connections record each statement they are
// given and answer it, but for an INSERT, which fails with insertErr.
type statements struct {
	mu        sync.Mutex
	run       []string
	insertErr error
}

func (s *statements) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.run...)
}

func (s *statements) Connect(context.Context) (driver.Conn, error) { return conn{s}, nil }
func (s *statements) Driver() driver.Driver                        { return nil }

// conn is a connection of statements.
type conn struct{ s *statements }

func (c conn) ExecContext(_ context.Context, query string, _ []driver.NamedValue) (driver.Result, error) {
	c.s.mu.Lock()
	c.s.run = append(c.s.run, query)
	c.s.mu.Unlock()
	if strings.HasPrefix(query, "INSERT") {
		return nil, c.s.insertErr
	}
	return driver.RowsAffected(1), nil
}

func (conn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("not supported") }
func (conn) Close() error                        { return nil }
func (conn) Begin() (driver.Tx, error)           { return nil, errors.New("not supported") }
