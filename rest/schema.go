package rest

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// serveSDL answers GET /v1/graphql/schema.graphql with the GraphQL schema in the schema
// definition language, for code generators. It needs no key, like the OpenAPI document: the
// schema is public (it is in the repository, and any key may introspect it), and a build that
// generates types should not need a secret.
func serveSDL(sdl []byte) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Data(http.StatusOK, "text/plain; charset=utf-8", sdl)
	}
}
