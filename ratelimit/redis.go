package ratelimit

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed take.lua
var takeSource string

// takeScript is shared by every RedisStore: its SHA-1 is computed once.
var takeScript = redis.NewScript(takeSource)

// RedisStore is the Store shared by every instance through Redis: one Lua script per request
// (one round trip), Redis TIME as the clock, one hash per subject under a Redis Cluster hash
// tag. The script is sent with EVALSHA and re-sent with EVAL when Redis answers NOSCRIPT (after
// a restart or SCRIPT FLUSH).
//
// Errors of the client (timeouts, refused connections) are returned as they are; bound their
// duration with the client's options (DialTimeout, ReadTimeout, WriteTimeout, MaxRetries), since
// every request waits for the decision. go-redis retries a command whose reply was lost; such a
// retry may charge a request twice, never admit one more.
type RedisStore struct {
	client *redis.Client
	prefix string
	script *redis.Script
	clock  func() time.Time // tests only: pins the script's clock instead of Redis TIME
}

// NewRedisStore returns a Store keeping its state in Redis through client, under keys
// "{" + prefix + subject + "}", e.g. "{rl:k:42}" with the prefix "rl:" (Config.RedisKeyPrefix).
// Distinct prefixes keep distinct deployments (or parallel tests) apart in one database. The
// prefix must not contain "{" or "}".
func NewRedisStore(client *redis.Client, prefix string) *RedisStore {
	return &RedisStore{client: client, prefix: prefix, script: takeScript}
}

// Take implements Store with one script call.
func (s *RedisStore) Take(ctx context.Context, subj Subject, p Policy) (Decision, error) {
	key := s.key(subj)
	r := rulesOf(p)
	reply, err := s.script.Run(ctx, s.client, []string{key},
		r.perMinute, r.perDay, r.after, r.window, r.base, r.ceiling, r.memory, s.pinnedNow(),
	).Int64Slice()
	if err != nil {
		return Decision{}, fmt.Errorf("ratelimit: redis decision for %s: %w", key, err)
	}
	res, err := parseReply(reply)
	if err != nil {
		return Decision{}, fmt.Errorf("ratelimit: redis decision for %s: %w", key, err)
	}
	return decision(p, res), nil
}

// key returns the Redis key of subj.
func (s *RedisStore) key(subj Subject) string {
	b := make([]byte, 0, len(s.prefix)+48)
	b = append(append(b, '{'), s.prefix...)
	return string(append(subj.appendTo(b), '}'))
}

// pinnedNow returns the test clock in milliseconds, or 0: the script then reads Redis TIME.
func (s *RedisStore) pinnedNow() int64 {
	if s.clock == nil {
		return 0
	}
	return s.clock().UnixMilli()
}

// parseReply checks the script's reply: {outcome, now, minute count, day count, retry at}.
func parseReply(v []int64) (raw, error) {
	if len(v) != 5 || v[0] < int64(Allowed) || v[0] > int64(Suspended) {
		return raw{}, fmt.Errorf("unexpected script reply %v", v)
	}
	return raw{outcome: Outcome(v[0]), now: v[1], mc: v[2], dc: v[3], retryAt: v[4]}, nil
}
