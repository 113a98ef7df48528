package ratelimit

import (
	"context"
	_ "embed"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed take.lua
var takeSource string

// takeScript is shared by every RedisCounters: its SHA-1 is computed once.
var takeScript = redis.NewScript(takeSource)

// RedisCounters are the Counters shared by every instance through Redis: a Lua script decides, Redis
// TIME is the clock, one hash per subject under a Redis Cluster hash tag. The script is sent
// with EVALSHA and re-sent with EVAL when Redis answers NOSCRIPT (after a restart or SCRIPT
// FLUSH).
//
// Concurrent requests share round trips: their decisions are sent together, up to 128 in one
// pipeline (one write and one read), one pipeline in flight at a time. A request sent while
// none is in flight goes at once; the others queue meanwhile and leave with the next pipeline.
// The requests of a pipeline for one subject under one policy share one script call, which
// decides them one after the other in the order they queued, at one clock reading; each script
// call is atomic on its key. RedisCounters starts goroutines only while calls are queued or in
// flight, so it needs no Close: closing the client ends them.
//
// Errors of the client (timeouts, refused connections) are returned as they are, to every
// request of the failed pipeline, and an error of a script call to every request it decides;
// bound their duration with the client's options (DialTimeout, ReadTimeout, WriteTimeout,
// MaxRetries), since every request waits for the decision. A request whose context ends first
// returns its context's error at once. go-redis re-sends a pipeline whose replies were lost;
// such a retry may charge a request twice, never admit one more.
type RedisCounters struct {
	client redis.UniversalClient
	prefix string
	script *redis.Script
	clock  func() time.Time // tests only: pins the script's clock instead of Redis TIME
	// tests only: called for every pipeline sent with the number of Takes it decides and of
	// script calls it carries.
	onPipeline func(calls, scripts int)
	// pipelineContext, when not nil, returns the context a pipeline is sent with from that of
	// the first Take it decides; nil: context.Background().
	pipelineContext func(first context.Context) context.Context

	mu      sync.Mutex
	queue   []*call   // calls waiting for a pipeline
	running int       // goroutines sending pipelines, at most maxPipelines
	idle    []*sender // kept from senders that have exited
}

// NewRedisCounters returns Counters keeping its state in Redis through client, under keys
// "{" + prefix + subject + "}", e.g. "{rl:k:42}" with the prefix "rl:" (Config.RedisKeyPrefix).
// Distinct prefixes keep distinct deployments (or parallel tests) apart in one database. The
// prefix must not contain "{" or "}".
//
// client may be a single server's, a Sentinel-managed primary's or a Redis Cluster's
// (redis.ClusterClient): every key the script touches is its one KEYS[1], so each script call
// runs on the node of that key's slot, and a cluster pipeline is split by node, each part sent
// to its node at once (go-redis follows MOVED and ASK redirections). NOSCRIPT is handled per
// script call, so a node restarted without the script gets it again by itself.
//
// pipelineContext, when not nil, returns the context a pipeline is sent with from that of the
// first Take it decides, such as one carrying that Take's trace span without its deadline
// (tracing.Tracer.PipelineContext); nil sends pipelines with context.Background().
func NewRedisCounters(client redis.UniversalClient, prefix string, pipelineContext func(first context.Context) context.Context) *RedisCounters {
	return &RedisCounters{client: client, prefix: prefix, script: takeScript, pipelineContext: pipelineContext}
}

// Take implements Counters: its decision is sent in a pipeline with those of concurrent Takes, in
// one script call with those of the same subject, policy and cost.
func (s *RedisCounters) Take(ctx context.Context, subj Subject, p Policy, n int64) (Decision, error) {
	return s.decide(ctx, subj, p, rulesOf(p, n))
}

// Check implements Counters: it is sent as Take is, in a script call of its own kind.
func (s *RedisCounters) Check(ctx context.Context, subj Subject, p Policy) (Decision, error) {
	return s.decide(ctx, subj, p, checkRulesOf(p))
}

// decide runs one decision of subj under r, the rules of p, through the pipeline.
func (s *RedisCounters) decide(ctx context.Context, subj Subject, p Policy, r rules) (Decision, error) {
	c := s.newCall(ctx, subj, r)
	reply, err := s.do(c)
	return c.decision(p, reply, err)
}

// bulkBatch is the most script calls of one pipeline of checkAll.
const bulkBatch = 1000

// checkAll decides a Check of each of subjs under p, in pipelines of its own of up to
// bulkBatch script calls sent one after the other (on a cluster, each split by node and sent to
// all of them at once): thousands of subjects cost a few round trips, and the Takes of
// requests, which go through the shared queue, never wait behind them. It fails with the first
// error.
func (s *RedisCounters) checkAll(ctx context.Context, subjs []Subject, p Policy) ([]Decision, error) {
	r := checkRulesOf(p)
	out := make([]Decision, 0, len(subjs))
	sd := &sender{index: make(map[args]int), pipe: s.client.Pipeline()}
	for start := 0; start < len(subjs); start += bulkBatch {
		sd.reset()
		sd.batch = sd.batch[:0]
		for _, subj := range subjs[start:min(start+bulkBatch, len(subjs))] {
			sd.batch = append(sd.batch, s.newCall(ctx, subj, r))
		}
		s.exec(sd)
		for _, c := range sd.batch {
			d, err := c.decision(p, c.reply, c.err)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// newCall returns the call of one decision of subj under r.
func (s *RedisCounters) newCall(ctx context.Context, subj Subject, r rules) *call {
	return &call{
		ctx: ctx,
		args: args{
			key:   s.key(subj),
			argv:  [8]int64{r.perMinute, r.perDay, r.after, r.window, r.base, r.ceiling, r.memory, s.pinnedNow()},
			cost:  r.cost,
			check: r.check,
		},
		done: make(chan struct{}),
	}
}

// decision returns the Decision under p of c's reply, or the error of c.
func (c *call) decision(p Policy, reply []int64, err error) (Decision, error) {
	if err == nil {
		var res raw
		if res, err = parseReply(reply); err == nil {
			return decision(p, res), nil
		}
	}
	return Decision{}, fmt.Errorf("ratelimit: redis decision for %s: %w", c.args.key, err)
}

// key returns the Redis key of subj.
func (s *RedisCounters) key(subj Subject) string {
	var buf [64]byte
	b := append(append(buf[:0], '{'), s.prefix...)
	return string(append(subj.appendTo(b), '}'))
}

// pinnedNow returns the test clock in milliseconds, or 0: the script then reads Redis TIME.
func (s *RedisCounters) pinnedNow() int64 {
	if s.clock == nil {
		return 0
	}
	return s.clock().UnixMilli()
}

// parseReply checks the script's reply for one decision: {outcome, now, minute count, day
// count, retry at}.
func parseReply(v []int64) (raw, error) {
	if len(v) != 5 || v[0] < int64(Allowed) || v[0] > int64(Suspended) {
		return raw{}, fmt.Errorf("unexpected script reply %v", v)
	}
	return raw{outcome: Outcome(v[0]), now: v[1], mc: v[2], dc: v[3], retryAt: v[4]}, nil
}
