package guard

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/redis/go-redis/v9"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// MaxPersistedQueryBytes is the longest query that automatic persisted queries keep: a longer
// one runs, but the client must send it in full each time (GraphiQL's introspection query has
// 2 KiB). It bounds what one entry holds.
const MaxPersistedQueryBytes = 8 << 10

// RedisAPQSlots is the number of keys that NewRedisAPQCache's queries take in Redis, at most
// MaxPersistedQueryBytes and a hash each: some 33 MiB in all, whatever clients send.
const RedisAPQSlots = 4096

// sha256HexLen is the length of the keys gqlgen stores: a SHA-256 in hexadecimal.
const sha256HexLen = 64

// slotHexLen is how many hexadecimal digits of a hash name its slot: 16^3 = RedisAPQSlots.
const slotHexLen = 3

// NewRedisAPQCache returns a store of automatic persisted queries in Redis, for
// graph.Options.APQCache, so that every instance of the service knows a query once one has
// seen it. A query is kept under prefix followed by the first three hexadecimal digits of its
// SHA-256, one of RedisAPQSlots keys, with its hash in front; it replaces the query whose hash
// starts alike, whose client then gets PERSISTED_QUERY_NOT_FOUND and sends it in full again. So
// persisted queries hold a bounded part of Redis (RedisAPQSlots times MaxPersistedQueryBytes)
// however many clients send, and can neither fill it nor make it evict the rate limiter's
// keys. Each key lives for ttl after it was last used; a ttl of 0 keeps it until replaced.
//
// Redis failures are logged and never fail a request: a lookup that fails is a miss (the
// client gets PERSISTED_QUERY_NOT_FOUND and sends the query again), and a query that could not
// be stored still runs.
func NewRedisAPQCache(client redis.UniversalClient, prefix string, ttl time.Duration) graphql.Cache[string] {
	return &redisAPQCache{client: client, prefix: prefix, ttl: ttl}
}

type redisAPQCache struct {
	client redis.UniversalClient
	prefix string
	ttl    time.Duration
}

// Get returns the query whose hash is key, and renews its time to live.
func (c *redisAPQCache) Get(ctx context.Context, key string) (string, bool) {
	if !isSHA256Hex(key) { // never stored: gqlgen checks the hash of what it stores
		return "", false
	}
	var cmd *redis.StringCmd
	if c.ttl > 0 {
		cmd = c.client.GetEx(ctx, c.slot(key), c.ttl)
	} else {
		cmd = c.client.Get(ctx, c.slot(key))
	}
	entry, err := cmd.Result()
	if err != nil {
		if !errors.Is(err, redis.Nil) {
			slog.WarnContext(ctx, "persisted query lookup failed", "err", err)
		}
		return "", false
	}
	return strings.CutPrefix(entry, key) // another query whose hash starts alike took the slot
}

// Add stores query under its hash, key.
func (c *redisAPQCache) Add(ctx context.Context, key, query string) {
	if !isSHA256Hex(key) {
		return
	}
	if err := c.client.Set(ctx, c.slot(key), key+query, c.ttl).Err(); err != nil {
		slog.WarnContext(ctx, "persisted query not stored", "err", err)
	}
}

// slot returns the Redis key of the slot of hash.
func (c *redisAPQCache) slot(hash string) string {
	return c.prefix + hash[:slotHexLen]
}

// isSHA256Hex reports whether s is a SHA-256 in lower-case hexadecimal, as gqlgen computes.
func isSHA256Hex(s string) bool {
	if len(s) != sha256HexLen {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// PersistedQueries is the store of automatic persisted queries as gqlgen's extension sees it,
// and an extension that must run after every other check of an operation. gqlgen's extension
// adds a query sent with its hash before the query is even parsed: Add only notes it in the
// operation's stats, and MutateOperationContext stores it once the operation parsed, validated
// and passed every limit, so that the store holds valid queries only. Queries over
// MaxPersistedQueryBytes are not stored.
type PersistedQueries struct {
	store graphql.Cache[string]
}

// NewPersistedQueries returns the PersistedQueries kept in store: pass it as gqlgen's
// extension.AutomaticPersistedQuery's Cache, and use it as the handler's last extension.
func NewPersistedQueries(store graphql.Cache[string]) PersistedQueries {
	return PersistedQueries{store: store}
}

var _ interface {
	graphql.Cache[string]
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = PersistedQueries{}

// pendingQueryStat is the name of the stats extension under which a query waits to be stored.
const pendingQueryStat = "petstore.pendingPersistedQuery"

// pendingQuery is a query sent with its hash, to store once its operation passes every check.
type pendingQuery struct {
	hash, query string
}

// Get returns the stored query whose hash is key.
func (p PersistedQueries) Get(ctx context.Context, key string) (string, bool) {
	return p.store.Get(ctx, key)
}

// Add notes query, whose hash is key, for MutateOperationContext to store.
func (p PersistedQueries) Add(ctx context.Context, key, query string) {
	if len(query) <= MaxPersistedQueryBytes && graphql.HasOperationContext(ctx) {
		graphql.GetOperationContext(ctx).Stats.SetExtension(pendingQueryStat, pendingQuery{hash: key, query: query})
	}
}

// ExtensionName names the extension for gqlgen.
func (PersistedQueries) ExtensionName() string { return "PersistValidQueries" }

// Validate accepts every schema.
func (PersistedQueries) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext stores the query that opCtx's request sent with its hash, if any: the
// operation passed every check before it.
func (p PersistedQueries) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	if q, ok := opCtx.Stats.GetExtension(pendingQueryStat).(pendingQuery); ok {
		p.store.Add(ctx, q.hash, q.query)
	}
	return nil
}
