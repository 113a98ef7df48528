package ratelimit

import (
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/auth"
	"petstore/clientaddr"
)

// Middleware is the gin.HandlerFunc of the limiter, to be placed after the middleware that
// identifies the key (auth.Identify, then Gate and auth.Lookup) and before the one that requires
// it. It charges the request to its key, or to its client address when it has no principal,
// sets the rate-limit headers (before the handler runs, so that every response carries them),
// and answers 429 rate_limited or key_suspended itself when the request is rejected. A
// request whose key could not be checked (auth.Unchecked: the database is down) is charged to
// nobody: it is answered 503 unavailable at once, so that an outage never spends an address's
// budget nor leads to a suspension; but for one from an address over its budget that Gate let
// through to a read that was not made, which gets the address's 429 that Gate counted.
func (l *Limiter) Middleware(c *gin.Context) {
	r := c.Request
	if err := auth.Unchecked(c); err != nil {
		if v, ok := c.Get(refusedKey); ok { // the gate let the read go on, but none was made
			l.reject(c, AddrSubject(clientaddr.From(r)), v.(Decision))
			return
		}
		l.unchecked(c, err)
		return
	}
	subj, p := l.subject(r)
	if subj.KeyID == 0 { // a valid key's request never looks
		if v, ok := c.Get(refusedKey); ok {
			l.reject(c, subj, v.(Decision)) // the gate counted it; its key was no valid one
			return
		}
	}
	d, err := l.store.Take(r.Context(), subj, p, 1)
	if err != nil {
		l.storeFailed(c, p, err)
		return
	}
	l.storeAnswered(r.Context())
	if l.observe != nil {
		l.observe(d.Outcome, planName(r))
	}
	if d.Outcome != Allowed {
		l.reject(c, subj, d)
		return
	}
	setHeaders(c.Writer.Header(), d)
	c.Next()
}

// unchecked answers 503 to a request whose key could not be checked, charging nothing and
// counting nothing toward a suspension (so the store is not asked: Check would count a
// rejection). Its rate-limit headers are those of the anonymous policy with nothing spent, as
// when the store fails; apierr.Write adds Retry-After: 1.
func (l *Limiter) unchecked(c *gin.Context, err error) {
	setHeaders(c.Writer.Header(), decision(l.anon, raw{outcome: Allowed, now: time.Now().UnixMilli()}))
	apierr.Write(c.Writer, c.Request, err)
	c.Abort()
}

// reject answers the rejected request of subj: 429 with the headers of d and Retry-After.
func (l *Limiter) reject(c *gin.Context, subj Subject, d Decision) {
	setHeaders(c.Writer.Header(), d)
	secs := int64(d.RetryAfter() / time.Second)
	c.Header("Retry-After", strconv.FormatInt(secs, 10))
	apierr.Write(c.Writer, c.Request, rejection(subj, d, secs))
	c.Abort()
}

// rejection returns the Error body of a rejected request.
func rejection(subj Subject, d Decision, secs int64) *apierr.Error {
	if d.Outcome == Suspended {
		who := "this API key"
		if subj.KeyID == 0 {
			who = "this client address"
		}
		return apierr.New(apierr.KeySuspended,
			"%s is suspended for sending requests after being rate limited; retry after %d seconds", who, secs)
	}
	w := d.Binding()
	return apierr.New(apierr.RateLimited,
		"rate limit of %d requests per %s exceeded; retry after %d seconds", w.Limit, w.Name, secs)
}
