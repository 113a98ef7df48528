package ratelimit

import (
	"context"
	"fmt"
	"runtime"

	"github.com/redis/go-redis/v9"
)

// The decisions of concurrent Takes are coalesced into pipelines. A Take queues its call and,
// when fewer than maxPipelines senders are running, starts one: a goroutine that sends the
// queue, at most maxBatch calls at a time, as one pipeline (one write and one read on one
// connection), then sends whatever queued meanwhile, until the queue is empty; then it exits.
// A lone Take is sent at once, without waiting for company; under load, batches form from the
// Takes that arrive while pipelines are in flight.
//
// The calls of a batch with equal args (one subject under one policy and cost, at one pinned
// clock: under load, mostly the calls of one busy key) form a group, sent as one EVALSHA that decides them
// one after the other, in queue order, at one reading of Redis TIME: exactly what their separate
// script calls would decide, were they run back to back at that moment. Each script call is
// atomic on its own key, so neither pipelining nor grouping changes what a sequence of requests
// is told.
const (
	maxBatch = 128 // calls in one pipeline
	// maxPipelines is how many pipelines may be in flight at once, each on its own connection.
	// One makes the largest batches: with two, a busy key's requests split between them and
	// redis-server spends a third more CPU per request, for no gain in throughput.
	maxPipelines = 1
)

// call is the decision of one Take, from the queue until its reply.
type call struct {
	ctx  context.Context // the Take's: a call whose Take has ended is not sent
	args args
	done chan struct{} // closed once reply and err are set
	// Set by the sender: the call's group in the batch (-1 when not sent) and its place in it,
	// then, before done is closed, its reply (its 5 integers of the group's) or its error.
	group, seq int
	reply      []int64
	err        error
}

// args are what take.lua reads, but the count: KEYS[1], the subject's hash, ARGV[1..8],
// ARGV[10], whether the calls are Checks, and ARGV[11], the units each call costs. The calls of
// a batch with equal args are decided by one script call.
type args struct {
	key   string
	argv  [8]int64
	cost  int64
	check bool
}

// group is the calls of a batch with equal args and their script call: ARGV[9] is n.
type group struct {
	keys  [1]string
	argv  [11]any
	n     int
	cmd   *redis.Cmd
	reply []int64 // 5 integers per call, in queue order
	err   error
}

// sender is what a sending goroutine reuses from one pipeline to the next, and what the next
// sender reuses after it has exited.
type sender struct {
	batch  []*call
	groups []group
	index  map[args]int // the group of each args of the batch
	pipe   redis.Pipeliner
}

// do queues c and waits for its reply, or for the end of c.ctx.
func (s *RedisCounters) do(c *call) ([]int64, error) {
	if err := c.ctx.Err(); err != nil {
		return nil, err
	}
	s.enqueue(c)
	select {
	case <-c.done:
		return c.reply, c.err
	case <-c.ctx.Done():
		return nil, c.ctx.Err()
	}
}

// enqueue queues c and starts a sender when fewer than maxPipelines are running.
func (s *RedisCounters) enqueue(c *call) {
	s.mu.Lock()
	s.queue = append(s.queue, c)
	var sd *sender
	if s.running < maxPipelines {
		s.running++
		if n := len(s.idle); n > 0 {
			sd, s.idle = s.idle[n-1], s.idle[:n-1]
		} else {
			sd = &sender{batch: make([]*call, 0, maxBatch), index: make(map[args]int), pipe: s.client.Pipeline()}
		}
	}
	s.mu.Unlock()
	if sd != nil {
		go s.send(sd)
	}
}

// send sends pipelines until the queue is empty. Between two it yields the processor once, so
// that the requests already runnable reach their Take and leave in the next pipeline rather
// than in one after it: under load that makes batches about half as large again.
func (s *RedisCounters) send(sd *sender) {
	for s.next(sd) {
		s.exec(sd)
		sd.reset()
		runtime.Gosched()
	}
}

// next moves the first maxBatch calls of the queue to sd.batch and reports whether there were
// any. When there were none, the sender stops running in the same critical section, so a call
// queued after it is sure to start another.
func (s *RedisCounters) next(sd *sender) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(len(s.queue), maxBatch)
	if n == 0 {
		s.running--
		s.idle = append(s.idle, sd)
		return false
	}
	sd.batch = append(sd.batch[:0], s.queue[:n]...)
	left := copy(s.queue, s.queue[n:])
	clear(s.queue[left:])
	s.queue = s.queue[:left]
	return true
}

// exec sends one script call per group of sd.batch, in one pipeline, and hands every call its
// reply. The pipeline runs on a context of its own, bounded by the client's timeouts, so a Take
// that ends early does not fail the others; a call whose Take has already ended is left out of
// its group. Every call gets the error of a failed pipeline, and only its group's script call's
// error otherwise.
func (s *RedisCounters) exec(sd *sender) {
	ctx := context.Background()
	sent := sd.form()
	if s.pipelineContext != nil && sent > 0 {
		ctx = s.pipelineContext(sd.first())
	}
	for i := range sd.groups {
		g := &sd.groups[i]
		g.cmd = s.script.EvalSha(ctx, sd.pipe, g.keys[:], g.argv[:]...)
	}
	s.run(ctx, sd.pipe, sent)
	s.reload(ctx, sd)
	sd.hand()
}

// form puts the calls of sd.batch whose Take has not ended into groups, in queue order, and
// returns how many it put.
func (sd *sender) form() (sent int) {
	for _, c := range sd.batch {
		c.group = -1
		if c.ctx.Err() != nil {
			continue
		}
		sent++
		i, ok := sd.index[c.args]
		if !ok {
			i = len(sd.groups)
			sd.index[c.args] = i
			sd.groups = append(sd.groups, group{keys: [1]string{c.args.key}})
			for j, v := range c.args.argv {
				sd.groups[i].argv[j] = v
			}
			sd.groups[i].argv[9] = 0
			if c.args.check {
				sd.groups[i].argv[9] = 1
			}
			sd.groups[i].argv[10] = c.args.cost
		}
		g := &sd.groups[i]
		c.group, c.seq = i, g.n
		g.n++
	}
	for i := range sd.groups {
		sd.groups[i].argv[8] = sd.groups[i].n
	}
	return sent
}

// first returns the context of the first call of sd.batch that form put in a group.
func (sd *sender) first() context.Context {
	for _, c := range sd.batch {
		if c.group >= 0 {
			return c.ctx
		}
	}
	return context.Background()
}

// reload runs again with EVAL, in one more pipeline, the groups that Redis answered NOSCRIPT:
// after a restart or SCRIPT FLUSH. EVAL loads the script, and later calls find it by its hash.
func (s *RedisCounters) reload(ctx context.Context, sd *sender) {
	calls := 0
	for i := range sd.groups {
		g := &sd.groups[i]
		if err := g.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			g.cmd = s.script.Eval(ctx, sd.pipe, g.keys[:], g.argv[:]...)
			calls += g.n
		}
	}
	s.run(ctx, sd.pipe, calls)
}

// run sends the script calls queued in pipe, if any, for the given number of Takes; their
// errors stay on them.
func (s *RedisCounters) run(ctx context.Context, pipe redis.Pipeliner, calls int) {
	scripts := pipe.Len()
	if scripts == 0 {
		return
	}
	_, _ = pipe.Exec(ctx)
	if s.onPipeline != nil {
		s.onPipeline(calls, scripts)
	}
}

// hand gives every call of sd.batch its part of its group's reply, or the error of its group
// or of its Take, and wakes it.
func (sd *sender) hand() {
	for i := range sd.groups {
		g := &sd.groups[i]
		g.reply, g.err = g.cmd.Int64Slice()
		if g.err == nil && len(g.reply) != 5*g.n {
			g.err = fmt.Errorf("unexpected script reply of %d integers for %d decisions", len(g.reply), g.n)
		}
	}
	for _, c := range sd.batch {
		if c.group < 0 {
			c.err = c.ctx.Err()
		} else if g := &sd.groups[c.group]; g.err != nil {
			c.err = g.err
		} else {
			c.reply = g.reply[5*c.seq : 5*c.seq+5 : 5*c.seq+5]
		}
		close(c.done)
	}
}

// reset empties sd for the next batch, keeping its memory but no reference to the last one.
func (sd *sender) reset() {
	clear(sd.batch)
	clear(sd.groups)
	sd.groups = sd.groups[:0]
	clear(sd.index)
}
