package graph

import (
	"context"
	"errors"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"

	"petstore/internal/dbtest"
	"petstore/migrations"
	"petstore/store"
)

// TestListStatementsGiveUpOnTheServer checks that a MySQL page stuck behind a transaction
// that does not end is ended by the server after the statement timeout, not by InnoDB's lock
// wait timeout (50 s by default) long after the client gave up, and that the error it gets
// is one that answers 503.
func TestListStatementsGiveUpOnTheServer(t *testing.T) {
	db := dbtest.New(t, migrations.MySQL)
	tx, err := db.SQL().Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.Exec("INSERT INTO pets (name, category_id, status) VALUES ('stuck', 1, 'sold')"); err != nil {
		t.Fatal(err)
	}
	stmts := newListStatements(migrations.MySQL, 200*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // far beyond the bound
	defer cancel()
	pool := db.Statement.ConnPool // GORM's prepared statements, as the resolvers use them
	for _, q := range []struct {
		sql  string
		args []any
	}{{stmts.all, []any{0, 10}}, {stmts.byStatus, []any{"sold", 0, 10}}, {stmts.first, []any{10}}, {stmts.firstByStatus, []any{"sold", 10}}} {
		rows, err := pool.QueryContext(ctx, q.sql, q.args...)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			_ = rows.Close()
		}
		var myErr *mysqldriver.MySQLError
		if !errors.As(err, &myErr) || !store.Unavailable(err) {
			t.Errorf("%s behind an open insert: got %v; want a server timeout that store.Unavailable reports", q.sql, err)
		}
	}
}
