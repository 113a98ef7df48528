package migrations_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"
	"sync/atomic"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"

	"petstore/migrations"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestApplyLooksAgainAfterAbort applies the migrations to a fresh MySQL database whose first
// looks at the migrations' state are aborted as a Galera node aborts a read that a DDL
// replicated from another node meets (1213): Apply looks again and applies them all, where an
// instance starting beside another's migrations used to exit.
func TestApplyLooksAgainAfterAbort(t *testing.T) {
	aborts := new(atomic.Int32)
	aborts.Store(2)
	open := func(_, dsn string) (*sql.DB, error) {
		return sql.OpenDB(abortingConnector{dsn: dsn, aborts: aborts}), nil
	}
	db, err := store.Open(context.Background(), dbtest.DSN(t, migrations.MySQL), store.DefaultPool, store.WithOpener(open))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, err := migrations.Apply(context.Background(), db.SQL(), migrations.MySQL)
	if err != nil {
		t.Fatalf("Apply after two aborted looks: %v", err)
	}
	if aborts.Load() >= 0 {
		t.Fatalf("%d aborts left; the test aborted nothing", aborts.Load()+1)
	}
	if pending, err := migrations.Pending(context.Background(), db.SQL(), migrations.MySQL); err != nil || len(pending) > 0 || n == 0 {
		t.Fatalf("applied %d; pending after: %v, %v; want every migration applied", n, pending, err)
	}
}

// abortingConnector connects with the MySQL driver and fails the reads of the migrations'
// state (whether goose's table exists) with 1213 while aborts stays positive.
type abortingConnector struct {
	dsn    string
	aborts *atomic.Int32
}

func (c abortingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := mysqldriver.MySQLDriver{}.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return abortingConn{conn.(fullConn), c.aborts}, nil
}

func (c abortingConnector) Driver() driver.Driver { return mysqldriver.MySQLDriver{} }

// fullConn is what database/sql uses of a MySQL driver connection here.
type fullConn interface {
	driver.Conn
	driver.QueryerContext
	driver.ExecerContext
}

type abortingConn struct {
	fullConn
	aborts *atomic.Int32
}

func (c abortingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if strings.Contains(query, "information_schema.tables") && strings.Contains(query, "goose_db_version") && c.aborts.Add(-1) >= 0 {
		return nil, &mysqldriver.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction"}
	}
	return c.fullConn.QueryContext(ctx, query, args)
}
