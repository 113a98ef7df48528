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
	if subj, p, ok := l.subjectOf(c); ok {
		l.charge(c, subj, p)
	}
}

// subjectOf returns who the request of c is charged to and under which limits, or answers it
// and reports false: a request whose key could not be checked, and one whose address Gate
// refused.
func (l *Limiter) subjectOf(c *gin.Context) (Subject, Policy, bool) {
	r := c.Request
	if err := auth.Unchecked(c); err != nil {
		if v, ok := c.Get(refusedKey); ok { // the gate let the read go on, but none was made
			l.reject(c, AddrSubject(clientaddr.From(r)), v.(Decision))
			return Subject{}, Policy{}, false
		}
		l.unchecked(c, err)
		return Subject{}, Policy{}, false
	}
	subj, p := l.subject(r)
	if subj.KeyID == 0 { // a valid key's request never looks
		if v, ok := c.Get(refusedKey); ok {
			l.reject(c, subj, v.(Decision)) // the gate counted it; its key was no valid one
			return Subject{}, Policy{}, false
		}
	}
	return subj, p, true
}

// charge charges the request of c one request to subj under p, and sets the rate-limit
// headers before the handlers after it run, or answers it when it is rejected.
func (l *Limiter) charge(c *gin.Context, subj Subject, p Policy) {
	r := c.Request
	d, err := l.store.Take(r.Context(), subj, p, 1)
	if err != nil {
		if l.storeFailed(c, p, err) {
			c.Next()
		}
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
	refuse(c, d, rejection(subj, d, retrySecs(d)))
}

// refuse answers the request of c with e, the rate-limit headers of d and Retry-After.
func refuse(c *gin.Context, d Decision, e *apierr.Error) {
	setHeaders(c.Writer.Header(), d)
	c.Header("Retry-After", strconv.FormatInt(retrySecs(d), 10))
	apierr.Write(c.Writer, c.Request, e)
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
