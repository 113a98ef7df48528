package graph_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"petstore/graph"
	"petstore/internal/dbtest"
)

func TestRedisAPQCache(t *testing.T) {
	client, prefix := dbtest.Redis(t)
	ctx := context.Background()
	cache := graph.NewRedisAPQCache(client, prefix+"apq:", time.Minute)
	query := "{ pets { id } }"
	hash := sha256Hex(query)

	if got, ok := cache.Get(ctx, hash); ok {
		t.Fatalf("Get before Add: got %q, true; want a miss", got)
	}
	cache.Add(ctx, hash, query)
	if got, ok := cache.Get(ctx, hash); !ok || got != query {
		t.Errorf("Get after Add: got %q, %v; want %q, true", got, ok, query)
	}
	ttl, err := client.TTL(ctx, prefix+"apq:"+hash).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("TTL: got %v, %v; want up to a minute", ttl, err)
	}
	if got, ok := cache.Get(ctx, strings.Repeat("x", 1000)); ok {
		t.Errorf("Get of a key that is no SHA-256: got %q, true; want a miss", got)
	}

	forever := graph.NewRedisAPQCache(client, prefix+"forever:", 0)
	forever.Add(ctx, hash, query)
	if ttl, err := client.TTL(ctx, prefix+"forever:"+hash).Result(); err != nil || ttl != -1 {
		t.Errorf("TTL with ttl 0: got %v, %v; want -1 (none)", ttl, err)
	}
}

// TestAPQSharedThroughRedis runs the APQ round trip on three instances sharing one Redis: the
// query that one learns, the others know.
func TestAPQSharedThroughRedis(t *testing.T) {
	client, prefix := dbtest.Redis(t)
	instance := func() *server {
		opts := graph.DefaultOptions()
		opts.APQCache = graph.NewRedisAPQCache(client, prefix+"apq:", time.Minute)
		return newServer(t, opts)
	}
	checkAPQRoundTrip(t, instance(), instance(), instance())
}

// TestRedisAPQCacheDown checks that an unreachable Redis makes every query unknown rather than
// failing requests.
func TestRedisAPQCacheDown(t *testing.T) {
	client, prefix := dbtest.Redis(t)
	cache := graph.NewRedisAPQCache(client, prefix+"apq:", time.Minute)
	_ = client.Close()
	hash := sha256Hex("{ pets { id } }")
	cache.Add(context.Background(), hash, "{ pets { id } }")
	if got, ok := cache.Get(context.Background(), hash); ok {
		t.Errorf("Get from a closed client: got %q, true; want a miss", got)
	}
}
