package rest

import (
	"github.com/gin-gonic/gin"

	"petstore/apierr"
)

// Request limits checked before any route runs. The server itself refuses header blocks over
// 1 MiB (with a plain-text 431, before any handler); within that, these give an Error body.
const (
	MaxURL          = 8 << 10  // bytes of the request target (path and query)
	MaxHeaderFields = 100      // header lines
	MaxHeaderBytes  = 32 << 10 // bytes of header names and values
)

// limitRequest refuses requests whose URL or headers are larger than any client of this API
// needs, so that floods cost the server nothing further.
func limitRequest(c *gin.Context) {
	if len(c.Request.RequestURI) > MaxURL {
		writeError(c, apierr.Invalid("the URL must be at most %d bytes", MaxURL))
		return
	}
	fields, size := 0, 0
	for k, vs := range c.Request.Header {
		fields += len(vs)
		for _, v := range vs {
			size += len(k) + len(v)
		}
	}
	if fields > MaxHeaderFields || size > MaxHeaderBytes {
		writeError(c, apierr.Invalid("request headers must be at most %d fields and %d bytes", MaxHeaderFields, MaxHeaderBytes))
	}
}
