package guard_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"petstore/graph/guard"
	"petstore/testkit/dbtest"
)

func TestRedisAPQCache(t *testing.T) {
	client, prefix := dbtest.Redis(t)
	ctx := context.Background()
	cache := guard.NewRedisAPQCache(client, prefix+"apq:", time.Minute)
	query := "{ pets { id } }"
	hash := sha256Hex(query)

	if got, ok := cache.Get(ctx, hash); ok {
		t.Fatalf("Get before Add: got %q, true; want a miss", got)
	}
	cache.Add(ctx, hash, query)
	if got, ok := cache.Get(ctx, hash); !ok || got != query {
		t.Errorf("Get after Add: got %q, %v; want %q, true", got, ok, query)
	}
	ttl, err := client.TTL(ctx, prefix+"apq:"+hash[:3]).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("TTL: got %v, %v; want up to a minute", ttl, err)
	}
	if got, ok := cache.Get(ctx, strings.Repeat("x", 1000)); ok {
		t.Errorf("Get of a key that is no SHA-256: got %q, true; want a miss", got)
	}

	forever := guard.NewRedisAPQCache(client, prefix+"forever:", 0)
	forever.Add(ctx, hash, query)
	if ttl, err := client.TTL(ctx, prefix+"forever:"+hash[:3]).Result(); err != nil || ttl != -1 {
		t.Errorf("TTL with ttl 0: got %v, %v; want -1 (none)", ttl, err)
	}
}

// TestRedisAPQBudget checks that persisted queries take at most RedisAPQSlots keys of Redis, of
// at most MaxPersistedQueryBytes each, however many are sent: a query replaces the one whose
// hash starts alike, which is then unknown.
func TestRedisAPQBudget(t *testing.T) {
	client, prefix := dbtest.Redis(t)
	ctx := context.Background()
	cache := guard.NewRedisAPQCache(client, prefix+"apq:", time.Minute)
	padding := strings.Repeat("#", guard.MaxPersistedQueryBytes-32)
	last := map[string]string{} // the hash last stored in each slot
	var replaced string         // a hash whose slot another took
	for i := range guard.RedisAPQSlots * 2 {
		query := fmt.Sprintf("{ __typename } #%d%s", i, padding)
		hash := sha256Hex(query)
		cache.Add(ctx, hash, query)
		if other, ok := last[hash[:3]]; ok && replaced == "" {
			replaced = other
		}
		last[hash[:3]] = hash
	}
	keys, bytes := 0, int64(0)
	iter := client.Scan(ctx, 0, prefix+"apq:*", 1000).Iterator()
	for iter.Next(ctx) {
		keys++
		n, err := client.StrLen(ctx, iter.Val()).Result()
		if err != nil {
			t.Fatal(err)
		}
		bytes += n
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if keys > guard.RedisAPQSlots || bytes > guard.RedisAPQSlots*(guard.MaxPersistedQueryBytes+64) {
		t.Errorf("got %d keys of %d bytes; want at most %d keys of %d bytes each", keys, bytes, guard.RedisAPQSlots, guard.MaxPersistedQueryBytes+64)
	}
	if got, ok := cache.Get(ctx, replaced); ok {
		t.Errorf("Get of a query whose slot another took: got %.40q, true; want a miss", got)
	}
	if _, ok := cache.Get(ctx, last[replaced[:3]]); !ok {
		t.Error("Get of the query that took the slot: got a miss; want it")
	}
}

// TestRedisAPQCacheDown checks that an unreachable Redis makes every query unknown rather than
// failing requests.
func TestRedisAPQCacheDown(t *testing.T) {
	client, prefix := dbtest.Redis(t)
	cache := guard.NewRedisAPQCache(client, prefix+"apq:", time.Minute)
	_ = client.Close()
	hash := sha256Hex("{ pets { id } }")
	cache.Add(context.Background(), hash, "{ pets { id } }")
	if got, ok := cache.Get(context.Background(), hash); ok {
		t.Errorf("Get from a closed client: got %q, true; want a miss", got)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
