package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"

	sqlite "github.com/glebarez/go-sqlite"
	mysqldriver "github.com/go-sql-driver/mysql"

	"petstore/apierr"
)

// APIError returns the API error of a statement that failed with err: unavailable (503, "retry
// later") when Unavailable(err), else internal_error (500). Either way err is only logged,
// never shown to the client. It is the one translation of database errors for every package.
func APIError(err error) error {
	if Unavailable(err) {
		return &apierr.Error{Code: apierr.Unavailable, Message: "the database is not answering; retry later", Err: err}
	}
	return apierr.Wrap(err)
}

// MySQL server errors that say the server is overloaded, gave up or cannot serve for now, not
// that the statement was wrong: too many connections, lock wait timeout, deadlock (on Galera
// also a certification failure), query interrupted, query execution time exceeded (MySQL's
// MAX_EXECUTION_TIME, MariaDB's max_statement_time), server shutting down, connection killed,
// a Galera node that is not part of the cluster's primary component (1047: it serves no
// statement until it rejoins), and a login refused (1045: the instance reconnects with a
// password removed by a rotation, and cannot serve until it runs with the new one; the
// request was not at fault, and another instance may serve it).
var mysqlTransient = map[uint16]bool{1040: true, 1205: true, 1213: true, 1317: true, 3024: true, 1969: true,
	1053: true, 1927: true, 1047: true, 1045: true}

// SQLite result codes that say the database is busy: SQLITE_BUSY and SQLITE_LOCKED.
const (
	sqliteBusy   = 5
	sqliteLocked = 6
)

// Unavailable reports whether err means that the database could not be reached, did not
// answer in time or was too busy, so that a retry later may succeed (503), as opposed to a
// statement it refused (500).
func Unavailable(err error) bool {
	var myErr *mysqldriver.MySQLError
	if errors.As(err, &myErr) {
		return mysqlTransient[myErr.Number]
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		return liteErr.Code()&0xff == sqliteBusy || liteErr.Code()&0xff == sqliteLocked
	}
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, mysqldriver.ErrInvalidConn) ||
		errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
