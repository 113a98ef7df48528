package idempotency

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"petstore/store"
)

// execute runs the rest of the chain for cl inside one transaction with a buffered response,
// records a final answer below 500 in that same transaction, and sends the response once the
// outcome is committed. A 5xx, a panic or a failed commit stores nothing and releases cl.
//
// On SQLite the transaction holds the one connection until it ends: every statement of this
// request in between runs in it, and the release runs after it.
func (s *Store) execute(c *gin.Context, cl *claim) {
	ctx := c.Request.Context()
	// The transaction lasts at most a lease: past it another request may take the key over,
	// and database/sql rolls back a transaction whose context has ended.
	txCtx, cancel := context.WithTimeout(ctx, s.cfg.Lease)
	defer cancel()
	tx := s.db.WithContext(txCtx).Begin()
	if tx.Error != nil {
		s.release(ctx, cl)
		abort(c, store.APIError(tx.Error))
		return
	}
	w := s.runHandler(c, txCtx, tx, cl)
	if w.status >= http.StatusInternalServerError {
		tx.Rollback()
		s.release(ctx, cl)
		w.sendTo(c.Writer)
		return
	}
	if err := s.commit(txCtx, tx, cl, w.answer()); err != nil {
		s.release(ctx, cl)
		if errors.Is(err, errLeaseLost) {
			inUse(c)
		} else {
			abort(c, errNotRecorded(err))
		}
		return
	}
	w.sendTo(c.Writer)
}

// runHandler runs the rest of the chain with tx in the request context and the response
// buffered, and returns the buffer. A handler that panics (or exits its goroutine) gets tx
// rolled back and cl released; the panic goes on up to the router's recovery untouched.
func (s *Store) runHandler(c *gin.Context, txCtx context.Context, tx *gorm.DB, cl *claim) *bufferedWriter {
	w := newBufferedWriter(c.Writer)
	orig, req := c.Writer, c.Request
	c.Writer, c.Request = w, req.WithContext(store.WithTx(txCtx, tx))
	returned := false
	defer func() {
		c.Writer, c.Request = orig, req
		if !returned {
			tx.Rollback()
			s.release(req.Context(), cl)
		}
	}()
	c.Next()
	returned = true
	return w
}

// commit records a as the answer of cl in tx and commits tx; on failure tx is rolled back.
func (s *Store) commit(ctx context.Context, tx *gorm.DB, cl *claim, a answer) error {
	if err := s.saveAnswer(ctx, tx, cl, a); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit().Error
}
