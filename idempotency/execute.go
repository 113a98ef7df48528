package idempotency

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"petstore/store"
)

// execute runs the handler (the last of the chain, right after Middleware) for cl inside one
// transaction with a buffered response, records a final answer below 500 in that same
// transaction, and sends the response once the outcome is committed. The transaction runs
// again, handler included, when it ended without effect (store.Transact: a deadlock, a
// certification failure, a connection lost before COMMIT), so a safe retry is made here
// rather than by the client. A 5xx, a panic or a failed commit stores nothing and releases
// cl; a COMMIT whose outcome is unknown is not run again: 503, and the client's retry with the
// same key gets the recorded answer if it did commit (the commit hooks run, in case it did).
//
// On SQLite the transaction holds the one connection until it ends: every statement of this
// request in between runs in it, and the release runs after it.
func (s *Records) execute(c *gin.Context, cl *claim) {
	ctx := c.Request.Context()
	// The transaction lasts at most a lease: past it another request may take the key over,
	// and database/sql rolls back a transaction whose context has ended.
	txCtx, cancel := context.WithTimeout(ctx, s.cfg.Lease)
	defer cancel()
	var (
		w     *bufferedWriter
		hooks *store.CommitHooks // what the handler defers to the commit (store.OnCommit)
	)
	err := store.Transact(txCtx, s.db, func(tx *gorm.DB) error {
		hooks = new(store.CommitHooks) // a new one for each attempt: a rolled back one's are dropped
		w = s.runHandler(c, txCtx, tx, cl, hooks)
		if w.status >= http.StatusInternalServerError {
			return errHandlerFailed
		}
		return s.saveAnswer(txCtx, tx, cl, w.answer())
	})
	c.Abort() // the handler ran here, as many times as it took
	switch {
	case err == nil:
		hooks.Run()
		w.sendTo(c.Writer)
	case errors.Is(err, errHandlerFailed):
		s.release(ctx, cl)
		w.sendTo(c.Writer)
	case errors.Is(err, errLeaseLost):
		s.release(ctx, cl)
		inUse(c)
	case errors.Is(err, store.ErrCommitUnknown):
		// It may have committed, and a retry then gets its 201: what waits for the commit
		// (the live Hub's wake-up, the page cache's late pet) runs, harmless if it did not.
		hooks.Run()
		s.release(ctx, cl)
		abort(c, errNotRecorded(err))
	default:
		s.release(ctx, cl)
		abort(c, errNotRecorded(err))
	}
}

// errHandlerFailed means that the handler answered 5xx: nothing is recorded.
var errHandlerFailed = errors.New("idempotency: the handler answered 5xx")

// runHandler runs the handler with tx and hooks in the request context, a fresh copy of the body and
// the response buffered, and returns the buffer. A handler that panics (or exits its
// goroutine) gets tx rolled back and cl released; the panic goes on up to the
// router's recovery untouched.
func (s *Records) runHandler(c *gin.Context, txCtx context.Context, tx *gorm.DB, cl *claim, hooks *store.CommitHooks) *bufferedWriter {
	w := newBufferedWriter(c.Writer)
	orig, req := c.Writer, c.Request
	run := req.WithContext(store.WithCommitHooks(store.WithTx(txCtx, tx), hooks))
	run.Body = io.NopCloser(bytes.NewReader(cl.body))
	c.Writer, c.Request = w, run
	returned := false
	defer func() {
		c.Writer, c.Request = orig, req
		if !returned {
			tx.Rollback() // before the release: on SQLite tx holds the one connection
			s.release(req.Context(), cl)
		}
	}()
	c.Handler()(c)
	returned = true
	return w
}
