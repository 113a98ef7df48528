package rest

import (
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
)

// writeError writes err as the contract's Error body and stops the handler chain.
func writeError(c *gin.Context, err error) {
	apierr.Write(c.Writer, c.Request, err)
	c.Abort()
}

// notFound answers a request for a path the service does not have.
func notFound(c *gin.Context) {
	writeError(c, apierr.New(apierr.NotFound, "no such resource: %s %s; see /v1/openapi.json", c.Request.Method, c.Request.URL.Path))
}

// methodNotAllowed answers a request whose path exists for other methods; gin has already set
// the Allow header.
func methodNotAllowed(c *gin.Context) {
	writeError(c, apierr.New(apierr.MethodNotAllowed, "method %s is not allowed on %s; allowed: %s",
		c.Request.Method, c.Request.URL.Path, c.Writer.Header().Get("Allow")))
}

// recovered answers a request whose handler panicked: a 500 Error body without internals.
func recovered(c *gin.Context, p any) {
	slog.ErrorContext(c.Request.Context(), "handler panicked", "method", c.Request.Method,
		"path", c.Request.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	if c.Writer.Written() {
		c.Abort()
		return
	}
	writeError(c, apierr.Wrap(fmt.Errorf("panic: %v", p)))
}
