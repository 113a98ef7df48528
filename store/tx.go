package store

import (
	"context"

	"gorm.io/gorm"
)

type txKey struct{}

// WithTx returns ctx carrying tx, so that the resolvers called with it write in tx: a
// middleware can then commit their writes together with its own, or not at all.
func WithTx(ctx context.Context, tx *gorm.DB) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// Conn returns the transaction ctx carries, or db when it carries none, bound to ctx.
func Conn(ctx context.Context, db *gorm.DB) *gorm.DB {
	if tx, ok := ctx.Value(txKey{}).(*gorm.DB); ok {
		return tx.WithContext(ctx)
	}
	return db.WithContext(ctx)
}

// ConnPool returns the connection pool of Conn(ctx, db) without starting a GORM session: the
// transaction's connection, or db's pool (its prepared-statement cache when it has one). Pass
// ctx to each statement.
func ConnPool(ctx context.Context, db *gorm.DB) gorm.ConnPool {
	if tx, ok := ctx.Value(txKey{}).(*gorm.DB); ok {
		return tx.Statement.ConnPool
	}
	return db.Statement.ConnPool
}

// InTx reports whether ctx carries a transaction (WithTx): reads made with it belong to that
// transaction, on the primary, and its statements must not be retried one by one, since a
// rollback ends the whole transaction; its owner retries it (Transact).
func InTx(ctx context.Context) bool {
	_, ok := ctx.Value(txKey{}).(*gorm.DB)
	return ok
}
