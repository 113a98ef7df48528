package ratelimit

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
)

// failureLogEvery bounds the store-failure log lines while a failure lasts.
const failureLogEvery = 10 * time.Second

// storeFailed applies the failure policy to the request of c, the store having failed to decide
// on it under p, and reports whether the request goes on (failing open, with the headers of
// the full quota); otherwise it has been answered 503, or dropped silently when its client has
// gone.
func (l *Limiter) storeFailed(c *gin.Context, p Policy, err error) bool {
	ctx := c.Request.Context()
	if ctx.Err() != nil {
		c.Abort()
		return false
	}
	l.noteFailure(ctx, err)
	setHeaders(c.Writer.Header(), decision(p, raw{outcome: Allowed, now: time.Now().UnixMilli()}))
	if l.failOpen {
		return true
	}
	c.Header("Retry-After", "1")
	apierr.Write(c.Writer, c.Request, unavailable(err))
	c.Abort()
	return false
}

// unavailable returns the error of a request the store could not decide on, failing closed.
func unavailable(err error) *apierr.Error {
	return &apierr.Error{Code: apierr.Unavailable, Message: "rate limiting is temporarily unavailable; retry in a second", Err: err}
}

// noteFailure counts a store failure and logs it, at most once per failureLogEvery.
func (l *Limiter) noteFailure(ctx context.Context, err error) {
	n := l.storeErrors.Add(1)
	l.degraded.Store(true)
	now := time.Now().UnixNano()
	next := l.nextLog.Load()
	if now < next || !l.nextLog.CompareAndSwap(next, now+int64(failureLogEvery)) {
		return
	}
	l.log.ErrorContext(ctx, "rate-limit store failed", "err", err, "fail_open", l.failOpen,
		"store_errors_total", n)
}

// storeAnswered logs the first success after failures.
func (l *Limiter) storeAnswered(ctx context.Context) {
	if l.degraded.Load() && l.degraded.Swap(false) {
		l.nextLog.Store(0)
		l.log.InfoContext(ctx, "rate-limit store answers again", "store_errors_total", l.storeErrors.Load())
	}
}
