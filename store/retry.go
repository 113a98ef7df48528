package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"petstore/apierr"
	"petstore/internal/dblock"
)

// The one retry policy of every write (plain statements, transactions, key creation): at most
// MaxAttempts runs, with full-jitter exponential backoff between them (a random wait up to
// retryBase, 2×, 4× ..., at most retryCap), and never a wait that would end past the
// context's deadline. A hand-written loop: the policy is a dozen lines, and it must ask
// Retryable, not the error's type, what is safe.
const (
	// MaxAttempts bounds the runs of one write.
	MaxAttempts = 4
	retryBase   = 10 * time.Millisecond
	retryCap    = 200 * time.Millisecond
)

// Retryable reports whether err says that the write it ended had no effect and may simply run
// again: the server rolled it back (deadlock or certification failure, lock wait timeout, a
// Galera node not ready) or the driver knows nothing was sent (driver.ErrBadConn). A lost
// connection is not retryable on its own: an autocommit statement or a COMMIT may have taken
// effect (see LostConnection and Transact).
func Retryable(err error) bool {
	return dblock.RolledBack(err) || errors.Is(err, driver.ErrBadConn)
}

// mysqlConnectionEnded are MySQL server errors that end the connection: killed (MariaDB's
// 1927, MySQL's 1317 is a query interrupted and stays transient), server shutting down (1053).
var mysqlConnectionEnded = map[uint16]bool{1927: true, 1053: true}

// LostConnection reports whether err says the connection broke or was ended while a statement
// was under way, so that its outcome is unknown to the client (the server may or may not have
// run it). A context that ended is not a lost connection.
func LostConnection(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var myErr *mysqldriver.MySQLError
	if errors.As(err, &myErr) {
		return mysqlConnectionEnded[myErr.Number]
	}
	var netErr net.Error
	return errors.Is(err, mysqldriver.ErrInvalidConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		(errors.As(err, &netErr) && !netErr.Timeout())
}

// WriteError returns the API error of a write that failed with err, as APIError does, except
// that a lost connection (the write may have taken effect) says so: 503, retry with an
// Idempotency-Key, which makes the retry safe.
func WriteError(err error) error {
	if LostConnection(err) && !Retryable(err) {
		return &apierr.Error{Code: apierr.Unavailable, Err: err,
			Message: "the database connection was lost while the write was under way, so it may have been stored; retry with an Idempotency-Key header to make the retry safe"}
	}
	return APIError(err)
}

// Retry runs write, an autocommit statement (or anything whose failure Retryable judges
// alone), up to MaxAttempts times while it fails with a Retryable error and ctx leaves time
// for the backoff. It returns write's last error.
func Retry(ctx context.Context, write func(ctx context.Context) error) error {
	return runAgain(ctx, func() (bool, error) {
		err := write(ctx)
		return Retryable(err), err
	})
}

// runAgain runs once up to MaxAttempts times while it fails, reports that the failure left
// nothing behind (again), and ctx leaves time for the backoff. It returns once's last error.
func runAgain(ctx context.Context, once func() (again bool, err error)) error {
	var err error
	for attempt := range MaxAttempts {
		var again bool
		if again, err = once(); err == nil || !again || !backoff(ctx, attempt) {
			return err
		}
	}
	return err
}

// backoff waits before run attempt+2 and reports whether it may go ahead: not after the last
// attempt, nor when the wait would end past ctx's deadline.
func backoff(ctx context.Context, attempt int) bool {
	if attempt+1 >= MaxAttempts {
		return false
	}
	wait := rand.N(min(retryCap, retryBase<<attempt)) + 1
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ErrCommitUnknown means that the connection broke after COMMIT was sent: the transaction may
// or may not have committed, so Transact did not run it again. Its API error (WriteError) is
// 503 with a message that an Idempotency-Key makes the retry safe.
var ErrCommitUnknown = errors.New("store: the connection was lost after COMMIT was sent; the transaction may have committed")

// Transact runs body in a transaction of db (bound to ctx) and commits it. The whole runs
// again, under Retry's policy, when the transaction ends without effect: a statement in it, or
// the COMMIT, failed with a Retryable error, or the connection broke before COMMIT was sent
// (the server rolls back the transaction of a connection it loses). body may run several
// times, so it must leave no trace outside the transaction. When the connection breaks after
// COMMIT was sent, Transact returns an error wrapping ErrCommitUnknown and runs nothing again.
//
// Transact learns what failed inside body from the transaction's connection itself, so body
// may return its own error (a handler that answered 503, say): the first error of any
// statement decides whether to run again.
func Transact(ctx context.Context, db *gorm.DB, body func(tx *gorm.DB) error) error {
	return runAgain(ctx, func() (bool, error) { return transactOnce(ctx, db, body) })
}

// transactOnce runs body in one transaction and commits it; again reports whether a failure
// left nothing behind, so that the whole may run again.
func transactOnce(ctx context.Context, db *gorm.DB, body func(tx *gorm.DB) error) (again bool, err error) {
	tx := db.WithContext(ctx).Begin()
	if tx.Error != nil {
		return Retryable(tx.Error) || LostConnection(tx.Error), tx.Error
	}
	rec := &recordingPool{ConnPool: tx.Statement.ConnPool}
	tx.Statement.ConnPool = rec
	committed := false
	defer func() {
		if !committed {
			tx.Rollback()
		}
	}()
	if err := body(tx); err != nil {
		first := rec.first()
		return first != nil && (Retryable(first) || LostConnection(first)) || Retryable(err), err
	}
	committed = true
	if err := tx.Commit().Error; err != nil {
		if Retryable(err) {
			return true, err
		}
		if LostConnection(err) {
			return false, errors.Join(ErrCommitUnknown, err)
		}
		return false, err
	}
	return false, nil
}

// recordingPool is a transaction's connection that remembers the first error of its
// statements, for Transact to judge what a failed body left behind.
type recordingPool struct {
	gorm.ConnPool
	mu  sync.Mutex
	err error
}

var (
	_ gorm.ConnPool    = (*recordingPool)(nil)
	_ gorm.TxCommitter = (*recordingPool)(nil)
)

func (p *recordingPool) note(err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
}

func (p *recordingPool) first() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// PrepareContext prepares query in the transaction.
func (p *recordingPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	st, err := p.ConnPool.PrepareContext(ctx, query)
	p.note(err)
	return st, err
}

// ExecContext runs query in the transaction.
func (p *recordingPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := p.ConnPool.ExecContext(ctx, query, args...)
	p.note(err)
	return res, err
}

// QueryContext runs query in the transaction.
func (p *recordingPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	rows, err := p.ConnPool.QueryContext(ctx, query, args...)
	p.note(err)
	return rows, err
}

// QueryRowContext runs query in the transaction.
func (p *recordingPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	row := p.ConnPool.QueryRowContext(ctx, query, args...)
	p.note(row.Err())
	return row
}

// Commit commits the transaction.
func (p *recordingPool) Commit() error { return p.ConnPool.(gorm.TxCommitter).Commit() }

// Rollback rolls the transaction back.
func (p *recordingPool) Rollback() error { return p.ConnPool.(gorm.TxCommitter).Rollback() }
