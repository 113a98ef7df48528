package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/netip"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var keyPolicy = Policy{PerMinute: 60, PerDay: 1000, Suspension: DefaultConfig().suspension()}

func TestRedisUsesServerTime(t *testing.T) {
	t.Parallel()
	s := NewRedisCounters(testRedis(t), testPrefix(t), nil)
	d, err := s.Take(context.Background(), KeySubject(1), keyPolicy, 1)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	if skew := time.Since(d.Now).Abs(); skew > 5*time.Second {
		t.Errorf("decision clock: got %v; want Redis TIME, within 5s of %v", d.Now, time.Now())
	}
}

func TestRedisKeys(t *testing.T) {
	t.Parallel()
	prefix := testPrefix(t)
	c := testRedis(t)
	s := NewRedisCounters(c, prefix, nil)
	s.clock = newFakeClock().Now // TTLs then follow the fake clock, far in the future
	tests := []struct {
		subject Subject
		key     string
	}{
		{KeySubject(42), "{" + prefix + "k:42}"},
		{AddrSubject(netip.MustParseAddr("203.0.113.9")), "{" + prefix + "a:203.0.113.9}"},
		{AddrSubject(netip.MustParseAddr("2001:db8:1:2:3:4:5:6")), "{" + prefix + "a:2001:db8:1:2::}"},
		{AddrSubject(netip.Addr{}), "{" + prefix + "a:unknown}"},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if _, err := s.Take(ctx, tt.subject, keyPolicy, 1); err != nil {
				t.Fatalf("Take: %v", err)
			}
			got, err := c.HGetAll(ctx, tt.key).Result()
			if err != nil || got["mc"] != "1" || got["dc"] != "1" {
				t.Errorf("HGETALL %s: got %v, %v; want mc=1 dc=1", tt.key, got, err)
			}
			if exp, err := c.PExpireTime(ctx, tt.key).Result(); err != nil || !time.UnixMilli(int64(exp/time.Millisecond)).Equal(dayEnd) {
				t.Errorf("PEXPIRETIME %s: got %v, %v; want %v", tt.key, time.UnixMilli(int64(exp/time.Millisecond)), err, dayEnd)
			}
		})
	}
}

// TestRedisScriptReloaded runs a variant of the script that Redis has never seen, as after a
// restart or SCRIPT FLUSH: EVALSHA answers NOSCRIPT, the store falls back to EVAL, which loads
// it, and the next call runs it by its hash again.
func TestRedisScriptReloaded(t *testing.T) {
	t.Parallel()
	c := testRedis(t)
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	s := NewRedisCounters(c, testPrefix(t), nil)
	s.script = redis.NewScript(takeSource + "\n-- " + hex.EncodeToString(nonce))
	ctx := context.Background()
	if ok, err := c.ScriptExists(ctx, s.script.Hash()).Result(); err != nil || ok[0] {
		t.Fatalf("SCRIPT EXISTS before: got %v, %v; want false", ok, err)
	}
	for i := int64(1); i <= 2; i++ {
		d, err := s.Take(ctx, KeySubject(1), keyPolicy, 1)
		if err != nil || d.Minute.Used != i {
			t.Fatalf("Take %d: got %+v, %v; want Used %d", i, d.Minute, err, i)
		}
	}
	if ok, err := c.ScriptExists(ctx, s.script.Hash()).Result(); err != nil || !ok[0] {
		t.Errorf("SCRIPT EXISTS after: got %v, %v; want true", ok, err)
	}
}
