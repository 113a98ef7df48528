package auth

import (
	"github.com/gin-gonic/gin"

	"petstore/apierr"
)

// The gin context keys under which Identify leaves the reason a request has no principal, for
// Require to answer with, and the hash of a key it left for Lookup to read. They are read with
// c.Get, from the gin context alone: c.Value would search the request context too, through
// every value the middleware put there, for a key that is never there.
const (
	failureKey = "auth.failure"
	pendingKey = "auth.pending"
)

// Identify is the middleware that identifies the request's bearer key. A key whose lookup is
// cached puts its Principal in the request context (read with FromContext); a missing,
// malformed or cached unknown key leaves the request without one, so that the rate limiter
// counts it by client address, and Require answers it. A key that was valid when its expired
// lookup was made, or that is in the instance's set of valid keys (Listed), is read at once.
// Any other well-formed key, one this server has neither found valid nor listed, is left for
// Lookup (Pending reports it), so that the rate limiter can refuse an address over its budget
// before the key table is read for a guess.
func (a *Authenticator) Identify(c *gin.Context) {
	hash, p, err := a.cached(c.GetHeader("Authorization"))
	switch {
	case hash == "":
		settle(c, p, err)
	case a.knownValid(hash) || a.listed(hash):
		p, err = a.lookup(c.Request.Context(), hash)
		settle(c, p, err)
	default:
		c.Set(pendingKey, hash)
	}
}

// Lookup is the middleware that reads the key table for the key Identify left pending, if any,
// and identifies the request as Identify does: a valid key puts its Principal in the context;
// an unknown or revoked key, or a key table that cannot be read, leaves the reason for Require.
func (a *Authenticator) Lookup(c *gin.Context) {
	hash := c.GetString(pendingKey)
	if hash == "" {
		return
	}
	c.Delete(pendingKey)
	p, err := a.lookup(c.Request.Context(), hash)
	settle(c, p, err)
}

// Pending reports whether Identify left the request's key for Lookup to read: a well-formed key
// whose lookup is not cached.
func Pending(c *gin.Context) bool { return PendingHash(c) != "" }

// PendingHash returns the hash of the key Identify left for Lookup to read, "" for none.
func PendingHash(c *gin.Context) string { return c.GetString(pendingKey) }

// settle puts p in the request context, or leaves err for Require when p is nil.
func settle(c *gin.Context, p *Principal, err error) {
	if p == nil {
		c.Set(failureKey, err)
		return
	}
	c.Request = c.Request.WithContext(NewContext(c.Request.Context(), p))
}

// Require is the middleware that stops a request without a principal: 401 with a
// WWW-Authenticate challenge, or 503 when the key could not be checked.
func Require(c *gin.Context) {
	if FromContext(c.Request.Context()) != nil {
		return
	}
	v, _ := c.Get(failureKey)
	err, _ := v.(error)
	if err == nil {
		err = errMissingKey
	}
	if apierr.From(err).Code == apierr.Unauthorized {
		c.Header("WWW-Authenticate", Challenge(err))
	}
	apierr.Write(c.Writer, c.Request, err)
	c.Abort()
}

// Unchecked returns the error of a request whose key could not be checked because the key
// table did not answer (an unavailable *apierr.Error, for 503), or nil. Such a request is
// nobody's yet: the rate limiter charges it to no budget.
func Unchecked(c *gin.Context) error {
	v, _ := c.Get(failureKey)
	err, _ := v.(error)
	if err != nil && apierr.From(err).Code == apierr.Unavailable {
		return err
	}
	return nil
}
