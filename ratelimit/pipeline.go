package ratelimit

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// The script calls of concurrent Takes are coalesced into pipelines. A Take queues its call and,
// when fewer than maxPipelines senders are running, starts one: a goroutine that sends the
// queue, at most maxBatch calls at a time, as one pipeline of EVALSHA commands (one write and
// one read on one connection), then sends whatever queued meanwhile, until the queue is empty;
// then it exits. A lone Take is sent at once, without waiting for company; under load, batches
// form from the Takes that arrive while pipelines are in flight. Each call stays its own script
// run, atomic on its own key, so pipelining changes no decision.
const (
	maxBatch     = 128 // script calls in one pipeline
	maxPipelines = 2   // pipelines in flight at once, each on its own connection
)

// call is the script call of one Take, from the queue until its reply.
type call struct {
	ctx  context.Context // the Take's: a call whose Take has ended is not sent
	keys [1]string       // KEYS: the subject's hash
	argv [8]any          // ARGV, as take.lua reads it
	cmd  *redis.Cmd
	done chan struct{} // closed once reply and err are set
	// Set by the sender before done is closed.
	reply []int64
	err   error
}

// sender is what a sending goroutine reuses from one pipeline to the next, and what the next
// sender reuses after it has exited.
type sender struct {
	batch []*call
	pipe  redis.Pipeliner
}

// do queues c and waits for its reply, or for the end of c.ctx.
func (s *RedisStore) do(c *call) ([]int64, error) {
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
func (s *RedisStore) enqueue(c *call) {
	s.mu.Lock()
	s.queue = append(s.queue, c)
	var sd *sender
	if s.running < maxPipelines {
		s.running++
		if n := len(s.idle); n > 0 {
			sd, s.idle = s.idle[n-1], s.idle[:n-1]
		} else {
			sd = &sender{batch: make([]*call, 0, maxBatch), pipe: s.client.Pipeline()}
		}
	}
	s.mu.Unlock()
	if sd != nil {
		go s.send(sd)
	}
}

// send sends pipelines until the queue is empty.
func (s *RedisStore) send(sd *sender) {
	for s.next(sd) {
		s.exec(sd)
		clear(sd.batch)
	}
}

// next moves the first maxBatch calls of the queue to sd.batch and reports whether there were
// any. When there were none, the sender stops running in the same critical section, so a call
// queued after it is sure to start another.
func (s *RedisStore) next(sd *sender) bool {
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

// exec runs the calls of sd.batch in one pipeline and hands every call its reply. The pipeline
// runs on a context of its own, bounded by the client's timeouts, so a Take that ends early
// does not fail the others; a call whose Take has already ended is left out. Every call gets
// the error of a failed pipeline, and only its own command's error otherwise.
func (s *RedisStore) exec(sd *sender) {
	ctx := context.Background()
	for _, c := range sd.batch {
		if c.ctx.Err() == nil {
			c.cmd = s.script.EvalSha(ctx, sd.pipe, c.keys[:], c.argv[:]...)
		}
	}
	s.run(ctx, sd.pipe)
	s.reload(ctx, sd)
	for _, c := range sd.batch {
		if c.cmd == nil {
			c.err = c.ctx.Err()
		} else {
			c.reply, c.err = c.cmd.Int64Slice()
		}
		close(c.done)
	}
}

// reload runs again with EVAL, in one more pipeline, the calls that Redis answered NOSCRIPT:
// after a restart or SCRIPT FLUSH. EVAL loads the script, and later calls find it by its hash.
func (s *RedisStore) reload(ctx context.Context, sd *sender) {
	for _, c := range sd.batch {
		if c.cmd == nil {
			continue
		}
		if err := c.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			c.cmd = s.script.Eval(ctx, sd.pipe, c.keys[:], c.argv[:]...)
		}
	}
	s.run(ctx, sd.pipe)
}

// run sends the commands queued in pipe, if any; their errors stay on them.
func (s *RedisStore) run(ctx context.Context, pipe redis.Pipeliner) {
	n := pipe.Len()
	if n == 0 {
		return
	}
	_, _ = pipe.Exec(ctx)
	if s.onPipeline != nil {
		s.onPipeline(n)
	}
}
