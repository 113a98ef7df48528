package graph

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/redis/go-redis/v9"
)

// NewRedisAPQCache returns a store of automatic persisted queries in Redis, for
// Options.APQCache, so that every instance of the service knows a query once one has seen it.
// Each query is kept under prefix followed by its SHA-256 (hex) for ttl after it was last
// used; a ttl of 0 keeps it until Redis evicts it.
//
// Redis failures are logged and never fail a request: a lookup that fails is a miss (the
// client gets PERSISTED_QUERY_NOT_FOUND and sends the query again), and a query that could not
// be stored still runs.
func NewRedisAPQCache(client *redis.Client, prefix string, ttl time.Duration) graphql.Cache[string] {
	return &redisAPQCache{client: client, prefix: prefix, ttl: ttl}
}

type redisAPQCache struct {
	client *redis.Client
	prefix string
	ttl    time.Duration
}

// sha256HexLen is the length of the keys gqlgen stores: a SHA-256 in hexadecimal.
const sha256HexLen = 64

// Get returns the query whose hash is key, and renews its time to live.
func (c *redisAPQCache) Get(ctx context.Context, key string) (string, bool) {
	if len(key) != sha256HexLen { // never stored: gqlgen checks the hash of what it stores
		return "", false
	}
	var cmd *redis.StringCmd
	if c.ttl > 0 {
		cmd = c.client.GetEx(ctx, c.prefix+key, c.ttl)
	} else {
		cmd = c.client.Get(ctx, c.prefix+key)
	}
	query, err := cmd.Result()
	if err != nil {
		if !errors.Is(err, redis.Nil) {
			slog.WarnContext(ctx, "persisted query lookup failed", "err", err)
		}
		return "", false
	}
	return query, true
}

// Add stores query under its hash, key.
func (c *redisAPQCache) Add(ctx context.Context, key, query string) {
	if err := c.client.Set(ctx, c.prefix+key, query, c.ttl).Err(); err != nil {
		slog.WarnContext(ctx, "persisted query not stored", "err", err)
	}
}

// MaxPersistedQueryBytes is the longest query that automatic persisted queries keep: a longer
// one runs, but the client must send it in full each time (GraphiQL's introspection query has
// 2 KiB). It bounds what one entry holds.
const MaxPersistedQueryBytes = 8 << 10

// boundedCache is a cache of persisted queries that does not keep queries over
// MaxPersistedQueryBytes.
type boundedCache struct {
	graphql.Cache[string]
}

// Add keeps query under key unless it is too long.
func (c boundedCache) Add(ctx context.Context, key, query string) {
	if len(query) <= MaxPersistedQueryBytes {
		c.Cache.Add(ctx, key, query)
	}
}
