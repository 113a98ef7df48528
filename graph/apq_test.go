package graph_test

import (
	"testing"
	"time"

	"petstore/graph"
	"petstore/graph/guard"
	"petstore/internal/testkit/dbtest"
)

// TestAPQSharedThroughRedis runs the APQ round trip on three instances sharing one Redis: the
// query that one learns, the others know.
func TestAPQSharedThroughRedis(t *testing.T) {
	client, prefix := dbtest.Redis(t)
	instance := func() *server {
		opts := graph.DefaultOptions()
		opts.APQCache = guard.NewRedisAPQCache(client, prefix+"apq:", time.Minute)
		return newServer(t, opts)
	}
	checkAPQRoundTrip(t, instance(), instance(), instance())
}
