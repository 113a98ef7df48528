package store

import (
	"context"
	"sync"

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
	pool, _ := TxConnPool(ctx, db)
	return pool
}

// TxConnPool returns ConnPool(ctx, db) and InTx(ctx), looking the transaction up once.
func TxConnPool(ctx context.Context, db *gorm.DB) (gorm.ConnPool, bool) {
	if tx, ok := ctx.Value(txKey{}).(*gorm.DB); ok {
		return tx.Statement.ConnPool, true
	}
	return db.Statement.ConnPool, false
}

// InTx reports whether ctx carries a transaction (WithTx): reads made with it belong to that
// transaction, on the primary, and its statements must not be retried one by one, since a
// rollback ends the whole transaction; its owner retries it (Transact).
func InTx(ctx context.Context) bool {
	_, ok := ctx.Value(txKey{}).(*gorm.DB)
	return ok
}

type hooksKey struct{}

// CommitHooks collects what OnCommit defers until a transaction commits. Its owner runs them
// after the commit (Run), or drops them when the transaction rolls back.
type CommitHooks struct {
	mu  sync.Mutex
	fns []func()
}

// WithCommitHooks returns ctx carrying h, so that OnCommit with it defers to h.
func WithCommitHooks(ctx context.Context, h *CommitHooks) context.Context {
	return context.WithValue(ctx, hooksKey{}, h)
}

// OnCommit runs fn once the transaction of ctx has committed: it defers fn to the
// CommitHooks ctx carries (WithCommitHooks), or runs it at once when ctx carries none (a
// statement that committed on its own).
func OnCommit(ctx context.Context, fn func()) {
	if h, ok := ctx.Value(hooksKey{}).(*CommitHooks); ok {
		h.mu.Lock()
		h.fns = append(h.fns, fn)
		h.mu.Unlock()
		return
	}
	fn()
}

// Run runs the deferred functions in order, once the transaction committed.
func (h *CommitHooks) Run() {
	h.mu.Lock()
	fns := h.fns
	h.fns = nil
	h.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}
