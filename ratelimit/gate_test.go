package ratelimit

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The pipelining tests hold the replies of a client at a gate: the pipelines sent while it is
// shut stay in flight, and the Takes that come meanwhile wait in the queue, so every test knows
// which calls travel together.

// gatedStore returns a RedisCounters on a fake clock whose client's replies pass through a gate,
// and the sizes of the pipelines it sends.
func gatedStore(t *testing.T) (*RedisCounters, *gate, *pipelineSizes) {
	t.Helper()
	g := &gate{}
	t.Cleanup(g.open) // a failed test must not leave senders behind
	opts := testRedisOptions(t)
	opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return gatedConn{c, g}, nil
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	// Load the script before the gate shuts: a test expects NOSCRIPT only where it asks for it.
	if err := takeScript.Load(context.Background(), c).Err(); err != nil {
		t.Fatalf("SCRIPT LOAD: %v", err)
	}
	// Open the connections the senders will use before the gate shuts too: the reads it holds
	// are then those of script calls already sent, never of a new connection's handshake.
	var warm []*redis.Conn
	for range maxPipelines + 1 {
		cn := c.Conn()
		if err := cn.Ping(context.Background()).Err(); err != nil {
			t.Fatalf("PING: %v", err)
		}
		warm = append(warm, cn)
	}
	for _, cn := range warm {
		_ = cn.Close()
	}
	s := NewRedisCounters(c, testPrefix(t), nil)
	s.clock = newFakeClock().Now
	sizes := &pipelineSizes{}
	s.onPipeline = sizes.add
	return s, g, sizes
}

// takeResult is what Take returned.
type takeResult struct {
	d   Decision
	err error
}

// takeAsync runs s.Take in a goroutine of its own.
func takeAsync(ctx context.Context, s *RedisCounters, subj Subject, p Policy) <-chan takeResult {
	r := make(chan takeResult, 1)
	go func() {
		d, err := s.Take(ctx, subj, p, 1)
		r <- takeResult{d, err}
	}()
	return r
}

// fillPipelines puts maxPipelines Takes of subj in flight, one pipeline each, while the gate is
// shut: the Takes that follow are queued.
func fillPipelines(t *testing.T, s *RedisCounters, g *gate, subj Subject, p Policy) []<-chan takeResult {
	t.Helper()
	var results []<-chan takeResult
	for range maxPipelines {
		results = append(results, inFlight(t, context.Background(), s, g, subj, p))
	}
	return results
}

// inFlight starts a Take of subj while the gate is shut and a sender is free, and waits until
// its pipeline is held at the gate. (Takes started together could share one pipeline.)
func inFlight(t *testing.T, ctx context.Context, s *RedisCounters, g *gate, subj Subject, p Policy) <-chan takeResult {
	t.Helper()
	want := g.waiting.Load() + 1
	r := takeAsync(ctx, s, subj, p)
	eventually(t, "one more pipeline in flight", func() bool { return g.waiting.Load() == want })
	return r
}

// queued returns the number of calls waiting for a pipeline.
func (s *RedisCounters) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// gate holds the reads of connections while it is shut.
type gate struct {
	shutCh  atomic.Pointer[chan struct{}] // nil while open; closed when the gate opens
	waiting atomic.Int32                  // reads held at the gate
}

func (g *gate) shut() {
	ch := make(chan struct{})
	g.shutCh.Store(&ch)
}

func (g *gate) open() {
	if ch := g.shutCh.Swap(nil); ch != nil {
		close(*ch)
	}
}

func (g *gate) pass() {
	if ch := g.shutCh.Load(); ch != nil {
		g.waiting.Add(1)
		<-*ch
		g.waiting.Add(-1)
	}
}

// gatedConn is a connection whose reads wait at a gate.
type gatedConn struct {
	net.Conn
	g *gate
}

func (c gatedConn) Read(b []byte) (int, error) {
	c.g.pass()
	return c.Conn.Read(b)
}

// SyscallConn passes on the TCP connection's: go-redis then checks idle connections with a
// non-blocking peek at the socket. Without it, go-redis probes an opaque connection with
// reads of its own, which the gate would hold and count as script calls in flight.
func (c gatedConn) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

// pipelineSizes records, for every pipeline a store sends, the number of Takes it decides and
// of script calls it carries.
type pipelineSizes struct {
	mu      sync.Mutex
	sizes   []int
	scripts []int
}

func (p *pipelineSizes) add(calls, scripts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sizes = append(p.sizes, calls)
	p.scripts = append(p.scripts, scripts)
}

func (p *pipelineSizes) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sizes, p.scripts = nil, nil
}

// all returns the number of Takes of every pipeline.
func (p *pipelineSizes) all() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.sizes...)
}

// allScripts returns the number of script calls of every pipeline.
func (p *pipelineSizes) allScripts() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.scripts...)
}

// stats returns the number of Takes of every pipeline together, and of the biggest one.
func (p *pipelineSizes) stats() (sum, biggest int) {
	for _, n := range p.all() {
		sum += n
		biggest = max(biggest, n)
	}
	return sum, biggest
}

// eventually waits up to 5 seconds for cond, or fails the test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
