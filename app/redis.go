package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/config"
	"petstore/secret"
)

// redisCheckTimeout bounds the start-up check of Redis.
const redisCheckTimeout = 2 * time.Second

// errClusterNode is the start-up check's error for a URL that names one node of a cluster.
var errClusterNode = errors.New("is a node of a Redis Cluster, but the URL names one server (keys of other nodes' " +
	"slots would fail): name the cluster, with addr=HOST:PORT parameters for its other nodes or cluster=true")

// OpenRedis returns a client of the Redis that cfg.RedisURL names (one server, a cluster or a
// Sentinel-managed primary: config.RedisTarget), or nil when it is empty. It checks that Redis
// answers, within redisCheckTimeout: a Redis that answers but cannot work as named (a wrong
// password, a cluster node named as one server, a cluster URL at a lone server) is an error;
// one that does not answer is an error under PETSTORE_RATELIMIT_FAIL_OPEN=false (every
// request would be refused) and a warning otherwise (requests are admitted uncounted until it
// answers, as when Redis fails later). Its timeouts are short unless the URL sets them: every
// API request waits for one rate-limit decision.
func OpenRedis(ctx context.Context, cfg config.Config) (redis.UniversalClient, error) {
	if cfg.RedisURL == "" {
		return nil, nil
	}
	target, err := config.ParseRedisURL(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	client := newRedisClient(target)
	err = checkRedis(ctx, client, target.Kind)
	if err == nil {
		slog.InfoContext(ctx, "redis answers", "redis", target.String(), "addrs", target.Addrs())
		return client, nil
	}
	if redisMisconfigured(err) || !cfg.RateLimit.FailOpen {
		_ = client.Close()
		if !redisMisconfigured(err) {
			err = fmt.Errorf("does not answer, and PETSTORE_RATELIMIT_FAIL_OPEN=false would refuse every request: %w", err)
		}
		return nil, fmt.Errorf("PETSTORE_REDIS_URL %s (%s): %w", secret.Mask(cfg.RedisURL), target, err)
	}
	slog.WarnContext(ctx, "redis does not answer at start: rate limits are not counted until it does "+
		"(PETSTORE_RATELIMIT_FAIL_OPEN=true)", "redis", target.String(), "url", secret.Mask(cfg.RedisURL), "err", err)
	return client, nil
}

// newRedisClient returns the client of t, with short timeouts and one retry unless the URL sets
// them.
func newRedisClient(t config.RedisTarget) redis.UniversalClient {
	switch t.Kind {
	case config.RedisCluster:
		o := t.Cluster
		shortRedisTimeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.MaxRetries, &o.DialerRetries)
		return redis.NewClusterClient(o)
	case config.RedisSentinel:
		o := t.Sentinel
		shortRedisTimeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.MaxRetries, &o.DialerRetries)
		return redis.NewFailoverClient(o)
	}
	o := t.Node
	shortRedisTimeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.MaxRetries, &o.DialerRetries)
	return redis.NewClient(o)
}

// shortRedisTimeouts sets the settings that are zero (not set by the URL): 1 s to connect,
// 500 ms to write or read, one retry of a command and one dial per attempt. go-redis's default
// of five dials, 100 ms apart, kept each request 1.6 to 3.4 s on a stopped cluster node (one
// dial: 10 to 120 ms) before the failure policy answered.
func shortRedisTimeouts(dial, read, write *time.Duration, retries, dials *int) {
	for _, d := range []struct {
		p *time.Duration
		v time.Duration
	}{{dial, time.Second}, {read, 500 * time.Millisecond}, {write, 500 * time.Millisecond}} {
		if *d.p == 0 {
			*d.p = d.v
		}
	}
	for _, n := range []*int{retries, dials} {
		if *n == 0 {
			*n = 1
		}
	}
}

// checkRedis checks that client answers as a Redis of kind: a ping of every primary of a
// cluster, else of the server, which must not be a cluster node.
func checkRedis(ctx context.Context, client redis.UniversalClient, kind string) error {
	ctx, cancel := context.WithTimeout(ctx, redisCheckTimeout)
	defer cancel()
	if c, ok := client.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return node.Ping(ctx).Err()
		})
	}
	if err := client.Ping(ctx).Err(); err != nil {
		return err
	}
	info, err := client.Info(ctx, "cluster").Result()
	if err != nil {
		return err
	}
	if kind == config.RedisNode && strings.Contains(info, "cluster_enabled:1") {
		return errClusterNode
	}
	return nil
}

// redisMisconfigured reports whether err, from checkRedis, says that Redis answered but cannot
// work as configured, rather than that it is out of reach for now.
func redisMisconfigured(err error) bool {
	if errors.Is(err, errClusterNode) {
		return true
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false // no answer: refused, timed out, no Sentinel reachable
	}
	for _, transient := range []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "BUSY"} {
		if redis.HasErrorPrefix(err, transient) {
			return false
		}
	}
	return true
}
