package rest

import (
	"strconv"

	"github.com/gin-gonic/gin"
)

// jsonContentType is the Content-Type of every JSON answer, as gin's c.JSON sets it.
const jsonContentType = "application/json; charset=utf-8"

// writeJSON answers with status and body, the JSON the pets of the API are written in by hand
// (models.Pet.AppendJSON), through gin's c.Data. Content-Length is set, as c.Data does not:
// net/http would send a body larger than its buffer (2 KiB) in chunks without it.
func writeJSON(c *gin.Context, status int, body []byte) {
	c.Header("Content-Length", strconv.Itoa(len(body)))
	c.Data(status, jsonContentType, body)
}
