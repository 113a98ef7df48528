package auth

import (
	"github.com/gin-gonic/gin"

	"petstore/apierr"
)

// failureKey is the gin context key under which Identify leaves the reason a request has no
// principal, for Require to answer with.
const failureKey = "auth.failure"

// Identify is the middleware that authenticates the request's bearer key. A valid key puts its
// Principal in the request context (read with FromContext); otherwise the request goes on
// without one, so that the rate limiter can count it by client address, and Require answers it.
func (a *Authenticator) Identify(c *gin.Context) {
	p, err := a.Authenticate(c.Request.Context(), c.GetHeader("Authorization"))
	if err != nil {
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
	err, _ := c.Value(failureKey).(error)
	if err == nil {
		err = errMissingKey
	}
	if apierr.From(err).Code == apierr.Unauthorized {
		c.Header("WWW-Authenticate", Challenge(err))
	}
	apierr.Write(c.Writer, c.Request, err)
	c.Abort()
}
