// Package dblock takes MySQL named locks (GET_LOCK) so that, of several instances of the
// service sharing one database, one at a time runs a job: the migrations, the idempotency purge,
// the creation of the development key. A lock's name is its purpose followed by the current
// database's name, so that databases sharing a server (tests, staging beside production) never
// wait for each other. It is held by one connection and released with it: an instance that dies
// holding it frees it at once, with no lease to run out, and a waiter is woken as soon as it is
// free, with no polling. On a Galera cluster a named lock holds on its node only (NodeLocal).
package dblock

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// nameSQL is the lock name: MySQL refuses names longer than 64 characters.
const nameSQL = "LEFT(CONCAT(?, ':', DATABASE()), 64)"

// NodeLocal reports whether named locks on db hold on one server only while others write the
// same data: the server is a node of a Galera cluster (MariaDB Galera Cluster, Percona XtraDB
// Cluster: wsrep_on), where GET_LOCK is not replicated. A job serialised by a Lock must then
// stay correct when instances on two nodes run it at once. MySQL has no wsrep_on; MariaDB
// without a cluster has it OFF.
func NodeLocal(ctx context.Context, db *sql.DB) (bool, error) {
	var name, value string
	err := db.QueryRowContext(ctx, "SHOW GLOBAL VARIABLES LIKE 'wsrep_on'").Scan(&name, &value)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dblock: %w", err)
	}
	return strings.EqualFold(value, "ON"), nil
}

// Lock is a named lock held by a connection of its own.
type Lock struct {
	conn    *sql.Conn
	purpose string
}

// Acquire takes the lock of purpose in the current database, waiting at most wait for it (0:
// not at all; else in whole seconds, rounded up) on a connection of db's that it keeps until
// Release. It returns a nil Lock and no error when another session still holds it after wait.
func Acquire(ctx context.Context, db *sql.DB, purpose string, wait time.Duration) (*Lock, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var got sql.NullInt64
	seconds := int64(math.Ceil(wait.Seconds()))
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK("+nameSQL+", ?)", purpose, seconds).Scan(&got); err != nil || got.Int64 != 1 {
		_ = conn.Close()
		switch {
		case err != nil:
			return nil, fmt.Errorf("dblock: lock %s: %w", purpose, err)
		case !got.Valid:
			return nil, fmt.Errorf("dblock: lock %s: GET_LOCK failed", purpose)
		}
		return nil, nil
	}
	return &Lock{conn: conn, purpose: purpose}, nil
}

// Release releases l and gives its connection back to the pool; when the release fails, the
// connection is closed instead, which frees the lock, so that no pooled connection holds it.
func (l *Lock) Release(ctx context.Context) error {
	_, err := l.conn.ExecContext(ctx, "DO RELEASE_LOCK("+nameSQL+")", l.purpose)
	if err != nil {
		err = fmt.Errorf("dblock: unlock %s: %w", l.purpose, err)
		_ = l.conn.Raw(func(any) error { return driver.ErrBadConn }) // discards the connection
	}
	return errors.Join(err, l.conn.Close())
}
