package store

import (
	"database/sql"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
)

// Opener opens the database/sql handle of a driver and a data source name, as sql.Open does.
type Opener func(driverName, dsn string) (*sql.DB, error)

// Option changes how Open opens a database.
type Option func(*DB)

// WithOpener makes Open, and OpenReplicas for the replicas of the database Open returns, open
// their connection pools with open (such as tracing.Tracer.OpenSQL, which traces every
// statement) rather than with sql.Open.
func WithOpener(open Opener) Option { return func(db *DB) { db.open = open } }

// WithTimeout bounds the statements the database runs by itself (DB.Settler's) by timeout
// (PETSTORE_DB_TIMEOUT), rather than DefaultTimeout.
func WithTimeout(timeout time.Duration) Option { return func(db *DB) { db.timeout = timeout } }

// withConn returns d with its connection pool opened by open, which GORM then uses as it is;
// d itself when open is nil.
func withConn(d gorm.Dialector, open Opener) (gorm.Dialector, error) {
	if open == nil {
		return d, nil
	}
	var err error
	switch d := d.(type) {
	case *sqlite.Dialector:
		d.Conn, err = open(sqlite.DriverName, d.DSN)
	case *mysql.Dialector:
		d.Conn, err = open(mysql.DefaultDriverName, d.DSNConfig.FormatDSN())
	}
	return d, err
}
