package ratelimit

import (
	"context"
	"net/textproto"
	"strings"
	"testing"
	"time"
)

func TestNewRejectsMisconfiguration(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"anonymous per minute", func(c *Config) { c.AnonymousPerMinute = 0 }, "AnonymousPerMinute"},
		{"anonymous per day", func(c *Config) { c.AnonymousPerDay = -1 }, "AnonymousPerDay"},
		{"negative threshold", func(c *Config) { c.SuspendAfter = -1 }, "SuspendAfter"},
		{"window", func(c *Config) { c.SuspendWindow = 0 }, "SuspendWindow"},
		{"base", func(c *Config) { c.SuspendBase = 0 }, "SuspendBase"},
		{"max below base", func(c *Config) { c.SuspendMax = time.Minute }, "SuspendMax"},
		{"memory", func(c *Config) { c.SuspendMemory = -time.Second }, "SuspendMemory"},
		{"prefix", func(c *Config) { c.RedisKeyPrefix = "rl{x}:" }, "RedisKeyPrefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.change(&cfg)
			_, err := New(cfg, NewMemoryCounters(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error naming %s", err, tt.want)
			}
		})
	}
	if _, err := New(DefaultConfig(), nil); err == nil {
		t.Errorf("nil store: got no error; want one")
	}
}

func TestNewAcceptsValidConfigs(t *testing.T) {
	off := DefaultConfig()
	off.SuspendAfter, off.SuspendWindow, off.SuspendBase = 0, 0, 0 // suspensions off: no rules needed
	for name, cfg := range map[string]Config{"defaults": DefaultConfig(), "suspensions off": off} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(cfg, NewMemoryCounters(nil)); err != nil {
				t.Errorf("got %v; want no error", err)
			}
		})
	}
}

func TestSuspensionsOff(t *testing.T) {
	s := NewMemoryCounters(newFakeClock().Now)
	p := Policy{PerMinute: 1, PerDay: 10}
	for i, want := range []Outcome{Allowed, Limited, Limited, Limited, Limited} {
		if d, _ := s.Take(context.Background(), KeySubject(1), p, 1); d.Outcome != want {
			t.Errorf("request %d: got %v; want %v", i+1, d.Outcome, want)
		}
	}
}

func TestMemoryCountersForgetExpiredSubjects(t *testing.T) {
	clock := newFakeClock()
	s := NewMemoryCounters(clock.Now)
	ctx := context.Background()
	for id := int64(1); id <= 500; id++ {
		_, _ = s.Take(ctx, KeySubject(id), keyPolicy, 1)
	}
	if got := s.len(); got != 500 {
		t.Fatalf("subjects: got %d; want 500", got)
	}
	clock.Advance(48 * time.Hour)
	for id := int64(1001); id <= 1000+shardCount*8; id++ { // touches every shard
		_, _ = s.Take(ctx, KeySubject(id), keyPolicy, 1)
	}
	if got := s.len(); got != shardCount*8 {
		t.Errorf("subjects after two days: got %d; want %d (only the new ones)", got, shardCount*8)
	}
}

func TestRetryAfterRounding(t *testing.T) {
	tests := []struct {
		left time.Duration
		want time.Duration
	}{
		{0, time.Second},
		{-time.Second, time.Second},
		{time.Millisecond, time.Second},
		{time.Second, time.Second},
		{1001 * time.Millisecond, 2 * time.Second},
		{54500 * time.Millisecond, 55 * time.Second},
	}
	for _, tt := range tests {
		d := Decision{Now: start, RetryAt: start.Add(tt.left)}
		if got := d.RetryAfter(); got != tt.want {
			t.Errorf("RetryAfter with %v left: got %v; want %v", tt.left, got, tt.want)
		}
	}
}

func TestHeaderKeysAreCanonical(t *testing.T) {
	for _, k := range headerKeys {
		if got := textproto.CanonicalMIMEHeaderKey(k); got != k {
			t.Errorf("got %q; want the canonical %q", k, got)
		}
	}
}
