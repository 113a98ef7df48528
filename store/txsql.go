package store

import (
	"context"
	"database/sql"
	"errors"
)

// TransactSQL is Transact on a transaction of database/sql itself, for a hot path whose
// statements db prepared once: within it, Tx.StmtContext runs each on the connection's own
// prepared statement, where a GORM transaction prepares each statement again. The whole runs
// again under the same policy as Transact's, and body may run several times.
func TransactSQL(ctx context.Context, db *sql.DB, body func(tx *sql.Tx) error) error {
	return runAgain(ctx, func() (bool, error) { return transactSQLOnce(ctx, db, body) })
}

// transactSQLOnce runs body in one transaction and commits it; again reports whether a
// failure left nothing behind.
func transactSQLOnce(ctx context.Context, db *sql.DB, body func(tx *sql.Tx) error) (again bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return Retryable(err) || LostConnection(err), err
	}
	if err := body(tx); err != nil {
		_ = tx.Rollback()
		return Retryable(err) || LostConnection(err), err
	}
	if err := tx.Commit(); err != nil {
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
