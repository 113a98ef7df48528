// Package dblock takes MySQL named locks (GET_LOCK) so that, of several instances of the
// service sharing one database, one at a time runs a job: the migrations and the idempotency
// purge. A lock's name is its purpose followed by the current
// database's name, so that databases sharing a server (tests, staging beside production) never
// wait for each other. It is held by one connection and released with it: an instance that dies
// holding it frees it at once, with no lease to run out, and a waiter is woken as soon as it is
// free, with no polling.
//
// On a Galera cluster a named lock holds on its node only (NodeLocal), so there a lock is a
// lease instead: a row of the table petstore_locks, which two nodes cannot both insert (the
// second insert fails certification or as a duplicate), polled every pollEvery by waiters and
// deleted on release. An instance that dies holding a lease blocks the job until the lease
// runs out (LeaseFor).
package dblock

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
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

// RolledBack reports whether err is a MySQL error after which the statement had no effect and
// may simply run again: a deadlock, or on Galera a certification failure or an abort by a DDL
// replicated from another node, which ends reads too (1213); a lock wait timeout (1205); a
// Galera node not ready (1047: it is not in the primary component, its statements run nowhere).
func RolledBack(err error) bool {
	var myErr *mysql.MySQLError
	return errors.As(err, &myErr) && (myErr.Number == 1213 || myErr.Number == 1205 || myErr.Number == 1047)
}

// Lock is a named lock held by a connection of its own, or on Galera a lease held by holder.
type Lock struct {
	conn    *sql.Conn
	purpose string
	lease   *sql.DB   // on Galera: the database of the lease row
	holder  string    // on Galera: the lease row's holder
	expires time.Time // on Galera: when the lease runs out, by this machine's clock
}

// Acquire takes the lock of purpose in the current database, waiting at most wait for it (0:
// not at all; else in whole seconds, rounded up) on a connection of db's that it keeps until
// Release; on a Galera cluster, a lease of LeaseFor. It returns a nil Lock and no error when
// another session still holds it after wait.
func Acquire(ctx context.Context, db *sql.DB, purpose string, wait time.Duration) (*Lock, error) {
	nodeLocal, err := NodeLocal(ctx, db)
	if err != nil {
		return nil, err
	}
	if nodeLocal {
		return acquireLease(ctx, db, purpose, wait)
	}
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
// A lease is deleted, again and again until the delete takes effect (releaseLease).
func (l *Lock) Release(ctx context.Context) error {
	if l.lease != nil {
		return l.releaseLease(ctx)
	}
	_, err := l.conn.ExecContext(ctx, "DO RELEASE_LOCK("+nameSQL+")", l.purpose)
	if err != nil {
		err = fmt.Errorf("dblock: unlock %s: %w", l.purpose, err)
		_ = l.conn.Raw(func(any) error { return driver.ErrBadConn }) // discards the connection
	}
	return errors.Join(err, l.conn.Close())
}

// LeaseFor is how long a lease is held at most: longer than any job it serialises runs.
const LeaseFor = 10 * time.Minute

// pollEvery is how often a waiter tries a lease again.
const pollEvery = 100 * time.Millisecond

// acquireLease takes the lease of purpose, waiting at most wait for it: an expired lease is
// deleted and taken over. Two nodes inserting the lease at once cannot both succeed: the row's
// primary key makes the second a duplicate (1062) or a certification failure (1213); a statement
// the server rolled back (RolledBack) is tried again too. The table is made by the first lease
// of the database, which is the migrations' (a user that may not
// create tables finds it there).
func acquireLease(ctx context.Context, db *sql.DB, purpose string, wait time.Duration) (*Lock, error) {
	var token [16]byte
	_, _ = rand.Read(token[:])
	holder := hex.EncodeToString(token[:])
	deadline := time.Now().Add(wait)
	for created := false; ; {
		taken := time.Now()
		_, err := db.ExecContext(ctx, "DELETE FROM petstore_locks WHERE name = ? AND expires < NOW(6)", purpose)
		if err == nil {
			_, err = db.ExecContext(ctx, "INSERT INTO petstore_locks (name, holder, expires) VALUES (?, ?, NOW(6) + INTERVAL ? SECOND)",
				purpose, holder, int64(LeaseFor.Seconds()))
			if err == nil {
				return &Lock{purpose: purpose, lease: db, holder: holder, expires: taken.Add(LeaseFor)}, nil
			}
			var myErr *mysql.MySQLError
			if !errors.As(err, &myErr) { // no answer (ctx ended, connection lost): it may have been inserted
				(&Lock{purpose: purpose, lease: db, holder: holder, expires: time.Now().Add(undoFor)}).undo(ctx)
				return nil, fmt.Errorf("dblock: lease %s: %w", purpose, err)
			}
		}
		var myErr *mysql.MySQLError
		if errors.As(err, &myErr) && myErr.Number == 1146 && !created { // no such table
			_, err = db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS petstore_locks ("+
				"name VARCHAR(64) NOT NULL PRIMARY KEY, holder CHAR(32) CHARACTER SET ascii NOT NULL, "+
				"expires DATETIME(6) NOT NULL) ENGINE = InnoDB")
			if err == nil {
				created = true
				continue
			}
			if !RolledBack(err) {
				return nil, fmt.Errorf("dblock: the lease table: %w", err)
			}
		}
		if !RolledBack(err) && !(errors.As(err, &myErr) && myErr.Number == 1062) {
			return nil, fmt.Errorf("dblock: lease %s: %w", purpose, err)
		}
		if !time.Now().Before(deadline) {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// undoFor is how long an acquire that got no answer to its insert tries to delete the lease
// that the insert may have made.
const undoFor = 5 * time.Second

// undo deletes l's lease row, as Release does, though the acquire's ctx ended: the insert that
// got no answer may have taken the lease, which would otherwise hold every other instance back
// for LeaseFor.
func (l *Lock) undo(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoFor)
	defer cancel()
	_ = l.releaseLease(ctx)
}

// releaseLease deletes l's lease row, trying again every pollEvery until the delete takes
// effect or the lease has run out anyway: on Galera the delete can fail certification against
// the inserts of instances waiting on other nodes (1213), and a lease left behind would hold
// every one of them for the rest of LeaseFor.
func (l *Lock) releaseLease(ctx context.Context) error {
	for {
		_, err := l.lease.ExecContext(ctx, "DELETE FROM petstore_locks WHERE name = ? AND holder = ?", l.purpose, l.holder)
		if err == nil {
			return nil
		}
		if !time.Now().Before(l.expires) {
			return fmt.Errorf("dblock: release the lease %s: %w", l.purpose, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dblock: release the lease %s: %w", l.purpose, errors.Join(err, ctx.Err()))
		case <-time.After(pollEvery):
		}
	}
}
